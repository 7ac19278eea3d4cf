import IntentKit
import IntentStore

/// A hairdresser, named by the user: read through the app's vocabulary, then
/// matched against the `hairdresser` table ("Jeff" finds both Jeffs).
public struct Hairdresser: ParameterValue, Hashable, Codable {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<Hairdresser> {
        let (names, said) = try await Vocabulary.lookUp(spoken, among: "SELECT name FROM hairdresser ORDER BY name", kind: .hairdresser, context: context)
        let found = NameMatcher.matches(said, in: names)
        switch found.count {
        case 0: return .unsupported("no hairdresser is called '\(spoken)'")
        case 1: return .success(Hairdresser(name: found[0]))
        default:
            return .disambiguation(
                found.map { ParameterOption(Hairdresser(name: $0), title: $0) },
                IntentDialog(full: "Which \(said.trimmingWhitespace()) do you mean: \(Self.spoken(found))?", supporting: "Which one?"))
        }
    }

    public var spoken: String { name }
    public var displayValue: JSONValue { .string(name) }

    /// "A, B or C".
    static func spoken(_ names: [String]) -> String {
        guard names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
    }
}

/// A group of hairdressers, named by the user: any group whose name contains what was said.
public struct HairdresserGroup: ParameterValue, Hashable, Codable {
    public var name: String

    public init(name: String) {
        self.name = name
    }

    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<HairdresserGroup> {
        let (groups, said) = try await Vocabulary.lookUp(spoken, among: "SELECT name FROM \"group\" ORDER BY name", kind: .group, context: context)
        let wanted = said.lowercased().trimmingWhitespace()
        let matches = wanted.isEmpty ? [] : groups.filter { $0.lowercased().contains(wanted) }
        switch matches.count {
        case 0: return .needsValue(IntentDialog(full: "Which group? There are \(Hairdresser.spoken(groups)).", supporting: "Which group?"))
        case 1: return .success(HairdresserGroup(name: matches[0]))
        default:
            return .disambiguation(
                matches.map { ParameterOption(HairdresserGroup(name: $0), title: $0) },
                IntentDialog(full: "Which group do you mean: \(Hairdresser.spoken(matches))?", supporting: "Which group?"))
        }
    }

    public var spoken: String { name }
    public var displayValue: JSONValue { .string(name) }
}

/// A soup on the menu, named by the user (through the vocabulary): the exact
/// name, or the only one containing what was said.
public struct Soup: ParameterValue, Hashable, Codable {
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
        switch matches.count {
        case 0: return .unsupported("'\(spoken)' is not on the menu")
        case 1: return .success(Soup(name: matches[0]))
        default:
            return .disambiguation(
                matches.map { ParameterOption(Soup(name: $0), title: $0) },
                IntentDialog(full: "Which soup would you like: \(Hairdresser.spoken(matches))?", supporting: "Which soup?"))
        }
    }

    public var spoken: String { name }
    public var displayValue: JSONValue { .string(name) }
}

/// The currencies a payment may be in.
public enum Currency: String, ParameterValue, CaseIterable, Codable, Sendable {
    case EUR, GBP, USD
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
