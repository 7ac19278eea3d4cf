import IntentStore

/// The app's custom vocabulary (SiriKit's user-specific vocabulary): terms a
/// user says, mapped to the app's own names ("Jeffy" → "Jeff Baker",
/// "red soup" → "Tomato Soup"). Resolution reads a term as its value.
public enum Vocabulary {
    public enum Kind: String, Sendable, CaseIterable {
        case hairdresser, soup, group

        /// The table and column holding the names a term may stand for.
        var names: String {
            switch self {
            case .hairdresser: "SELECT name FROM hairdresser"
            case .soup: "SELECT name FROM soup"
            case .group: "SELECT name FROM \"group\""
            }
        }
    }

    public struct Term: Sendable, Hashable {
        public var kind: Kind
        public var term: String
        public var value: String
    }

    public struct Refusal: Error, CustomStringConvertible {
        public var description: String
    }

    /// Maps `term` to `value`, which must be one of the app's names of that kind;
    /// returns the name as the app spells it.
    @discardableResult
    public static func set(_ kind: Kind, term: String, value: String, in db: Database) throws -> String {
        let names = try db.query(kind.names) { $0.string(0) }
        guard let name = names.first(where: { $0.lowercased() == value.lowercased() }) else {
            throw Refusal(description: "'\(value)' is not a \(kind.rawValue) of the app (\(names.sorted().joined(separator: ", ")))")
        }
        let trimmed = term.trimmingWhitespace()
        guard !trimmed.isEmpty else { throw Refusal(description: "the term is empty") }
        try db.run(
            "INSERT INTO vocabulary(kind, term, value) VALUES (?, ?, ?) ON CONFLICT(kind, term) DO UPDATE SET value = excluded.value",
            [.text(kind.rawValue), .text(trimmed.lowercased()), .text(name)])
        return name
    }

    public static func list(in db: Database) throws -> [Term] {
        try db.query("SELECT kind, term, value FROM vocabulary ORDER BY kind, term") { row in
            Term(kind: Kind(rawValue: row.string(0)) ?? .hairdresser, term: row.string(1), value: row.string(2))
        }
    }

    /// Removes one term (of any kind), or every term; returns how many went.
    public static func clear(_ term: String?, in db: Database) throws -> Int {
        if let term {
            try db.run("DELETE FROM vocabulary WHERE term = ?", [.text(term.trimmingWhitespace().lowercased())])
        } else {
            try db.run("DELETE FROM vocabulary")
        }
        return db.changes
    }

    /// Every term of a kind, lower-cased, with its value: read with the names at resolution.
    static func terms(_ kind: Kind, in db: Database) throws -> [String: String] {
        var terms: [String: String] = [:]
        for (term, value) in try db.query(
            "SELECT term, value FROM vocabulary WHERE kind = ?", [.text(kind.rawValue)], { ($0.string(0), $0.string(1)) })
        {
            terms[term] = value
        }
        return terms
    }

    /// What the user said, read through the vocabulary.
    static func read(_ said: String, _ terms: [String: String]) -> String {
        terms[said.trimmingWhitespace().lowercased()] ?? said
    }
}
