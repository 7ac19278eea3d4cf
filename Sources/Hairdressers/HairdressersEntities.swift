import IntentKit
import IntentStore
import Synchronization

/// A hairdresser, named by the user: read through the app's vocabulary, then
/// matched against the `hairdresser` table ("Jeff" finds both Jeffs).
public struct Hairdresser: NamedEntity, Hashable, Codable {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<Hairdresser> {
        let (names, said) = try await Vocabulary.lookUp(spoken, kind: .hairdresser, context: context)
        let found = NameMatcher.matches(said, in: names)
        return choose(
            found, none: .unsupported("no hairdresser is called '\(spoken)'"),
            asking: IntentDialog(full: "Which \(said.trimmingWhitespace()) do you mean: \(Self.spoken(found))?", supporting: "Which one?"))
    }

    /// "A, B or C".
    static func spoken(_ names: [String]) -> String {
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
    }
}

/// A group of hairdressers, named by the user: the group of that exact name, else any whose name contains what was said.
public struct HairdresserGroup: NamedEntity, Hashable, Codable {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<HairdresserGroup> {
        let (groups, said) = try await Vocabulary.lookUp(spoken, kind: .group, context: context)
        let wanted = said.lowercased().trimmingWhitespace()
        // The exact name wins: "neighbors" is not asked about again because "old neighbors" contains it.
        let exact = groups.filter { $0.lowercased() == wanted }
        let matches = wanted.isEmpty ? [] : exact.isEmpty ? groups.filter { $0.lowercased().contains(wanted) } : exact
        return choose(
            matches, none: .needsValue(IntentDialog(full: "Which group? There are \(Hairdresser.spoken(groups)).", supporting: "Which group?")),
            asking: IntentDialog(full: "Which group do you mean: \(Hairdresser.spoken(matches))?", supporting: "Which group?"))
    }
}

/// A soup on the menu, named by the user (through the vocabulary): the exact
/// name, or the only one containing what was said.
public struct Soup: NamedEntity, Hashable, Codable {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<Soup> {
        let (menu, said) = try await Vocabulary.lookUp(spoken, kind: .soup, context: context)
        let wanted = said.lowercased().trimmingWhitespace()
        guard !wanted.isEmpty else { return .needsValue() }
        let exact = menu.filter { $0.lowercased() == wanted }
        let matches = exact.isEmpty ? menu.filter { $0.lowercased().contains(wanted) } : exact
        return choose(
            matches, none: .unsupported("'\(spoken)' is not on the menu"),
            asking: IntentDialog(full: "Which soup would you like: \(Hairdresser.spoken(matches))?", supporting: "Which soup?"))
    }
}

/// The currencies a payment may be in.
public enum Currency: String, ParameterValue, CaseIterable, Codable, Sendable {
    case eur = "EUR"
    case gbp = "GBP"
    case usd = "USD"
}

extension Vocabulary {
    /// The app's names of `kind`, in order, and what the user said read
    /// through the vocabulary of that kind ("chowder" → "Clam Chowder").
    /// The names and terms are read again only when the database's
    /// `names_revision` has moved since they were last read.
    static func lookUp(_ spoken: String, kind: Kind, context: IntentContext) async throws -> (names: [String], said: String) {
        let database = try context.dependency(AppDatabase.self)
        let known = NamesCache.shared.names(kind, of: database)
        let read = try await database.readInPlace { db -> NamesCache.Names in
            let revision = try db.queryFirst("SELECT revision FROM names_revision") { $0.int(0) }
            if let known, let revision, known.revision == revision { return known }
            // Read after the revision: a change committed in between is newer than `revision`, so what is read here
            // is never older than the revision it is kept under, and the next look sees the revision move.
            let names = try db.query(kind.names + " ORDER BY name") { $0.string(0) }
            return NamesCache.Names(revision: revision, names: names, terms: try terms(kind, in: db))
        }
        if read.revision != known?.revision { NamesCache.shared.keep(read, kind, of: database) }
        return (read.names, Self.read(spoken, read.terms))
    }
}

/// The names and vocabulary terms resolution last read from each open app
/// database, by kind, with the `names_revision` they were read at.
final class NamesCache: Sendable {
    struct Names: Sendable {
        /// Nil when the database has no revision to check (then nothing is kept).
        var revision: Int?
        var names: [String]
        var terms: [String: String]
    }

    private struct Entry {
        /// The database they were read from; nil once it is gone, and a new one at the same address is not it.
        weak var database: AppDatabase?
        var byKind: [Vocabulary.Kind: Names] = [:]
    }

    static let shared = NamesCache()
    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    /// What was last read of `kind` from `database`, if anything.
    func names(_ kind: Vocabulary.Kind, of database: AppDatabase) -> Names? {
        entries.withLock { entries in
            guard let entry = entries[ObjectIdentifier(database)], entry.database === database else { return nil }
            return entry.byKind[kind]
        }
    }

    /// Keeps what was read of `kind` from `database` (unless it had no revision), in place of what was kept before.
    func keep(_ names: Names, _ kind: Vocabulary.Kind, of database: AppDatabase) {
        guard names.revision != nil else { return }
        entries.withLock { entries in
            let id = ObjectIdentifier(database)
            if entries[id]?.database !== database {
                entries = entries.filter { $0.value.database != nil }
                entries[id] = Entry(database: database)
            }
            entries[id]?.byKind[kind] = names
        }
    }
}

/// Something of the app's that the user names, known by its name in the database.
public protocol NamedEntity: ParameterValue where Spoken == String {
    var name: String { get }
    init(name: String)
}

extension NamedEntity {
    public var spoken: String { name }
    public var displayValue: JSONValue { .string(name) }

    /// One match resolves; several ask `asking`, with each name as an option; none is `none`. The two are
    /// written only when they are the answer (most names match once, and their sentences would go unread).
    static func choose(
        _ matches: [String], none: @autoclosure () -> ParameterResult<Self>, asking: @autoclosure () -> IntentDialog
    ) -> ParameterResult<Self> {
        switch matches.count {
        case 0: none()
        case 1: .success(Self(name: matches[0]))
        default: .disambiguation(matches.map { ParameterOption(Self(name: $0), title: $0) }, asking())
        }
    }
}
