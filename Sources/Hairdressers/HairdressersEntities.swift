import IntentKit
import IntentStore

/// A hairdresser, named by the user: read through the app's vocabulary, then
/// matched against the `hairdresser` table ("Jeff" finds both Jeffs).
public struct Hairdresser: NamedEntity, Hashable, Codable {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<Hairdresser> {
        let (names, said) = try await Vocabulary.lookUp(
            spoken, among: "SELECT name FROM hairdresser ORDER BY name", kind: .hairdresser, context: context)
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

/// A group of hairdressers, named by the user: any group whose name contains what was said.
public struct HairdresserGroup: NamedEntity, Hashable, Codable {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<HairdresserGroup> {
        let (groups, said) = try await Vocabulary.lookUp(spoken, among: "SELECT name FROM \"group\" ORDER BY name", kind: .group, context: context)
        let wanted = said.lowercased().trimmingWhitespace()
        let matches = wanted.isEmpty ? [] : groups.filter { $0.lowercased().contains(wanted) }
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
        let (menu, said) = try await Vocabulary.lookUp(spoken, among: "SELECT name FROM soup ORDER BY name", kind: .soup, context: context)
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
    /// The names `sql` lists in the app's database, and what the user said
    /// read through the vocabulary of `kind` ("chowder" → "Clam Chowder").
    static func lookUp(_ spoken: String, among sql: String, kind: Kind, context: IntentContext) async throws -> (names: [String], said: String) {
        let (names, words) = try await context.dependency(AppDatabase.self).read { db in
            (try db.query(sql) { $0.string(0) }, try terms(kind, in: db))
        }
        return (names, read(spoken, words))
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

    /// One match resolves; several ask `asking`, with each name as an option; none is `none`.
    static func choose(_ matches: [String], none: ParameterResult<Self>, asking: IntentDialog) -> ParameterResult<Self> {
        switch matches.count {
        case 0: none
        case 1: .success(Self(name: matches[0]))
        default: .disambiguation(matches.map { ParameterOption(Self(name: $0), title: $0) }, asking)
        }
    }
}
