import Foundation
import IntentKit

/// Reads the status store: one intent, lists, refusals, dead letters,
/// counts. Opened on the file read-only (any number of readers beside the
/// recorder, which WAL never blocks), or on the writer's own connection.
///
/// Not `Sendable`: like its `Database`, a reader belongs to one thread.
public final class StatusReader {
    /// The connection reads go through: read-only on the file, or the writer's own.
    public let database: Database
    private var schemaChecked = false

    /// Opens an existing store, read-only.
    public init(path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else {
            throw DatabaseError(
                code: 14, message: "no status store at \(path) (is a recorder writing to it? set INTENT_STATUS_DB)",
                context: "opening the status store")
        }
        database = try Database(path: path, mode: .readOnly)
    }

    init(database: Database) {
        self.database = database
    }

    /// The columns of `intent_status` a status is read from, by name.
    enum Column: Int32, CaseIterable {
        case id, type, state, responseCode, responseMessage, responsePayload, resolutions, progressFraction, progressMessage
        case parameters, attempts, worker, submittedAt, queuedAt, startedAt, updatedAt, finishedAt, turn, group, confirmed
        case owner, view, dueAt

        /// The column's name in `intent_status`, written out: deriving it by reflection
        /// would cost a short-lived tool a scan of every protocol conformance it links.
        var name: String {
            switch self {
            case .id: "id"
            case .type: "type"
            case .state: "state"
            case .responseCode: "response_code"
            case .responseMessage: "response_message"
            case .responsePayload: "response_payload"
            case .resolutions: "resolutions"
            case .progressFraction: "progress_fraction"
            case .progressMessage: "progress_message"
            case .parameters: "parameters"
            case .attempts: "attempts"
            case .worker: "worker"
            case .submittedAt: "submitted_at"
            case .queuedAt: "queued_at"
            case .startedAt: "started_at"
            case .updatedAt: "updated_at"
            case .finishedAt: "finished_at"
            case .turn: "turn"
            case .group: "group_id"
            case .confirmed: "confirmed"
            case .owner: "owner"
            case .view: "view"
            case .dueAt: "due_at"
            }
        }

        static let selected = allCases.map(\.name).joined(separator: ", ")
    }

    /// The status of one intent, with its conversation; nil when the store has never seen the id.
    public func status(id: String) throws -> IntentStatus? {
        guard try hasSchema() else { return nil }
        guard
            var status = try database.queryFirst(
                "SELECT \(Column.selected) FROM intent_status WHERE id = ?", [.text(id)], Self.status(from:)
            )
        else {
            return nil
        }
        let turns = try database.query(
            "SELECT turn, question, asked_at, answer, answered_at FROM intent_turn WHERE id = ? ORDER BY turn", [.text(id)]
        ) { row in
            IntentStatus.Turn(
                turn: row.int(0), question: (try? Self.decode([ParameterResolution].self, row.text(1))) ?? [],
                askedAt: row.optionalDouble(2), answer: row.text(3).flatMap { try? JSONValue.parse($0) },
                answeredAt: row.optionalDouble(4))
        }
        status.history = turns.isEmpty ? nil : turns
        return status
    }

    /// The most recently updated intents, optionally of one state and/or type
    /// and (for a reader who may see only their own) of one owner.
    /// Throws `StatusQuery.Invalid` once the rows read take more than `maxBytes` of text: a list of large
    /// submissions is refused there rather than built whole in memory, for an answer too large to send.
    public func list(
        state: IntentState? = nil, type: String? = nil, owner: String? = nil, limit: Int = 50, maxBytes: Int = .max
    ) throws -> [IntentStatus] {
        guard try hasSchema() else { return [] }
        let list = Self.listQuery(state: state, type: type, owner: owner, limit: limit)
        return try statuses(list.sql, list.bindings, maxBytes: maxBytes)
    }

    /// The statuses a query selects, refused once their text passes `maxBytes`.
    private func statuses(_ sql: String, _ bindings: [SQLValue], maxBytes: Int) throws -> [IntentStatus] {
        guard maxBytes < .max else { return try database.query(sql, bindings, Self.status(from:)) }
        var bytes = 0
        return try database.query(sql, bindings) { row in
            for column in [Column.parameters, .responsePayload, .resolutions, .view, .responseMessage] {
                bytes += row.text(column.rawValue)?.utf8.count ?? 0
            }
            guard bytes <= maxBytes else {
                throw StatusQuery.Invalid(
                    description:
                        "the intents asked for take over \(maxBytes / 1_048_576) MiB; ask for fewer intents with --limit, or read the store locally")
            }
            return try Self.status(from: row)
        }
    }

    /// The SQL `list` runs, with its bindings.
    static func listQuery(state: IntentState?, type: String?, owner: String?, limit: Int) -> (sql: String, bindings: [SQLValue]) {
        // A state other than `success` is looked up in the state index, which holds only those (see `StatusStore.unsettled`).
        let indexTerm = state.flatMap { $0 == .success ? nil : StatusStore.unsettled }
        let chosen = filter(["owner": owner, "state": state?.rawValue, "type": type], also: indexTerm)
        return ("SELECT \(Column.selected) FROM intent_status \(chosen.sql) ORDER BY updated_at DESC LIMIT ?", chosen.bindings + [.int(limit)])
    }

    /// A `WHERE` clause with `column = ?` for each filter given: a filter not given is left out of the
    /// SQL, so SQLite can use an index for the others (`?1 IS NULL OR column = ?1` would scan every
    /// row). `also` is one more term, written as it is. Empty when nothing is chosen.
    static func filter(_ filters: KeyValuePairs<String, String?>, also: String? = nil) -> (sql: String, bindings: [SQLValue]) {
        var terms: [String] = also.map { [$0] } ?? []
        var bindings: [SQLValue] = []
        for case (let column, let value?) in filters {
            terms.append("\(column) = ?")
            bindings.append(.text(value))
        }
        return (terms.isEmpty ? "" : "WHERE " + terms.joined(separator: " AND "), bindings)
    }

    /// A worker's refusal of `owner`'s message about the intent `id` (see
    /// `StatusStore.Update.refusal`), as a status: the `failure` that sender sees.
    public func refusal(id: String, owner: String?) throws -> IntentStatus? {
        guard try hasSchema() else { return nil }
        return try database.queryFirst(
            "SELECT type, code, message, attempt, at FROM intent_refusal WHERE id = ? AND owner = ?", [.text(id), .text(owner ?? "")]
        ) { row in
            IntentStatus(
                id: id, type: row.string(0), state: .failure, response: IntentResponse(code: row.string(1), message: row.text(2)),
                attempts: row.int(3), updatedAt: row.double(4), finishedAt: row.double(4), owner: owner)
        }
    }

    /// Intents the broker dead-lettered, newest first.
    /// Refused as `list` is, past `maxBytes`.
    public func deadLettered(limit: Int = 50, maxBytes: Int = .max) throws -> [IntentStatus] {
        guard try hasSchema() else { return [] }
        return try statuses(Self.deadLetterQuery, [.int(limit)], maxBytes: maxBytes)
    }

    /// The dead letters, newest first, looked up in the state index.
    static let deadLetterQuery = """
        SELECT \(Column.selected) FROM intent_status
        WHERE state = 'failure' AND \(StatusStore.unsettled) AND response_code = '\(FailureCode.deadLettered)'
        ORDER BY updated_at DESC LIMIT ?
        """

    /// How many intents are in each state.
    public func counts() throws -> [IntentState: Int] {
        guard try hasSchema() else { return [:] }
        let rows = try database.query(Self.countsQuery) { row in (row.text(0), row.int(1)) }
        var counts: [IntentState: Int] = [:]
        var all = 0
        var unsettled = 0
        for (state, count) in rows {
            // The row with no state is the number of all intents: those not counted by state are `success`.
            guard let state else {
                all = count
                continue
            }
            unsettled += count
            if let state = IntentState(rawValue: state) { counts[state] = count }
        }
        if all > unsettled { counts[.success] = all - unsettled }
        return counts
    }

    /// Every state but `success` counted from the state index, which holds only those, and all intents
    /// counted (the row with a NULL state); one statement, so both come from one snapshot of the store.
    static let countsQuery = """
        SELECT state, count(*) FROM intent_status WHERE \(StatusStore.unsettled) GROUP BY state
        UNION ALL SELECT NULL, count(*) FROM intent_status
        """

    /// How many intents there are of each type in each state (an owner's
    /// only, when `owner` is given), by type and then state.
    public func tally(owner: String? = nil) throws -> [StatusQuery.Tally] {
        guard try hasSchema() else { return [] }
        let tally = Self.tallyQuery(owner: owner)
        return try database.query(tally.sql, tally.bindings) { row in
            StatusQuery.Tally(type: row.string(0), state: try Self.state(row.string(1)), count: row.int(2))
        }
    }

    /// The SQL `tally` runs, with its bindings.
    static func tallyQuery(owner: String?) -> (sql: String, bindings: [SQLValue]) {
        let chosen = filter(["owner": owner])
        return ("SELECT type, state, count(*) FROM intent_status \(chosen.sql) GROUP BY type, state ORDER BY type, state", chosen.bindings)
    }

    /// Terminal events that disagreed with the stored outcome (see `status_conflict`).
    public func conflictCount() throws -> Int {
        guard try hasSchema() else { return 0 }
        return try database.queryFirst("SELECT count(*) FROM status_conflict") { $0.int(0) } ?? 0
    }

    /// Whether the recorder has made the store's tables yet; throws when their schema is older than this build reads.
    public func hasSchema() throws -> Bool {
        if schemaChecked { return true }
        let found =
            try database.queryFirst(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'intent_status'"
            ) { _ in true } ?? false
        if found {
            let version = try database.userVersion
            guard version >= StatusStore.migrations.count else {
                throw DatabaseError(
                    code: 1,
                    message:
                        "the status store has schema version \(version) and this build reads version \(StatusStore.migrations.count); start this version's recorder once to migrate it",
                    context: "opening \(database.path)")
            }
        }
        schemaChecked = found
        return found
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ text: String?) throws -> T? {
        try text.map { try JSONValueDecoder().decode(type, from: try JSONValue.parse($0)) }
    }

    /// The schedules of `owner` (everyone's when nil), by name.
    public func schedules(owner: String? = nil) throws -> [Schedule] {
        guard try hasSchema() else { return [] }
        return try database.query(
            """
            SELECT name, owner, type, parameters, every, starts, paused, active_since FROM intent_schedule WHERE (?1 IS NULL OR owner = ?1)
            ORDER BY name
            """,
            [.optional(owner)]
        ) { row in
            Schedule(
                name: row.string(0), owner: row.text(1), type: row.string(2),
                parameters: (try? JSONValue.parse(Array(row.string(3).utf8)))?.objectValue ?? [:], every: row.double(4),
                starts: row.double(5), paused: row.int(6) != 0, activeSince: row.optionalDouble(7))
        }
    }

    /// A state a newer IntentQueue wrote, which this build does not know: not read as another (a `--wait` would wait
    /// for an end it cannot see), but said.
    public struct UnknownState: Error, CustomStringConvertible {
        /// The state as the store holds it.
        public var state: String

        /// Names the state, and what to do.
        public var description: String {
            "the store holds an intent in state '\(state)', which this build of IntentQueue does not know: read it with a newer one"
        }
    }

    static func state(_ text: String) throws(UnknownState) -> IntentState {
        guard let state = IntentState(rawValue: text) else { throw UnknownState(state: text) }
        return state
    }

    private static func status(from row: Row) throws -> IntentStatus {
        func text(_ column: Column) -> String? { row.text(column.rawValue) }
        func number(_ column: Column) -> Double? { row.optionalDouble(column.rawValue) }
        func json(_ column: Column) -> JSONValue? { text(column).flatMap { try? JSONValue.parse($0) } }
        let state = try Self.state(text(.state) ?? "")
        let response = text(.responseCode).map { code in
            IntentResponse(code: code, message: text(.responseMessage), payload: json(.responsePayload))
        }
        let fraction = number(.progressFraction)
        let progressMessage = text(.progressMessage)
        return IntentStatus(
            id: text(.id) ?? "", type: text(.type) ?? "", state: state, terminal: state.isTerminal, response: response,
            resolutions: try decode([ParameterResolution].self, text(.resolutions)),
            progress: fraction != nil || progressMessage != nil ? StatusEvent.Progress(fraction: fraction, message: progressMessage) : nil,
            parameters: json(.parameters), attempts: row.int(Column.attempts.rawValue), worker: text(.worker),
            submittedAt: number(.submittedAt), queuedAt: number(.queuedAt), startedAt: number(.startedAt),
            updatedAt: number(.updatedAt) ?? 0, finishedAt: number(.finishedAt), turn: row.int(Column.turn.rawValue),
            group: text(.group), confirmed: (try? decode([String].self, text(.confirmed))) ?? nil, owner: text(.owner), view: text(.view),
            dueAt: number(.dueAt))
    }
}
