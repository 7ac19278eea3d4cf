import Foundation
import IntentKit

/// Once-only effects for handlers that write to SQLite.
///
/// A redelivered intent must not repeat its effects. `perform` runs a handler's
/// writes in the same transaction as the row saying "intent X was handled, with
/// this outcome"; when the row is already there, the effects are skipped and the
/// recorded outcome is returned, so the worker republishes it unchanged.
///
/// The same row holds the outcomes decided without the handler — a cancel, a
/// denial, an expired question, a time limit (see `DatabaseOutcomeLedger`) — so
/// whichever commits first stands: effects that find one of those commit nothing.
public enum OnceOnly {
    /// The tables `perform` and `DatabaseOutcomeLedger` use; part of every app
    /// database that uses them. `prepare(_:)` creates them, and brings older
    /// ones up to date, by itself.
    public static var schema: String { effectSchema + pendingSchema + ownerSchema }

    static let effectSchema = """
        CREATE TABLE IF NOT EXISTS intent_effect (
            intent_id TEXT PRIMARY KEY NOT NULL,
            succeeded INTEGER NOT NULL,
            code TEXT NOT NULL,
            message TEXT,
            payload TEXT,
            attempt INTEGER NOT NULL,
            handled_at REAL NOT NULL,
            state TEXT
        ) WITHOUT ROWID;
        """

    /// Intents not decided yet that asked a question (the turn) or that a
    /// worker is handling outside the database (the claim).
    static let pendingSchema = """
        CREATE TABLE IF NOT EXISTS intent_pending (
            intent_id TEXT PRIMARY KEY NOT NULL,
            question_turn INTEGER,
            claimed_attempt INTEGER,
            updated_at REAL NOT NULL,
            asked TEXT,
            granted TEXT,
            cancel_requested INTEGER
        ) WITHOUT ROWID;
        """

    /// Each intent's type and owner (the verified user of its first
    /// submission), recorded when it is first admitted.
    static let ownerSchema = """
        CREATE TABLE IF NOT EXISTS intent_owner (
            intent_id TEXT PRIMARY KEY NOT NULL,
            type TEXT NOT NULL,
            owner TEXT,
            since REAL NOT NULL
        ) WITHOUT ROWID;
        """

    /// The running slots of intents under a `ConcurrencyLimit`: one row per running intent.
    static let slotSchema = """
        CREATE TABLE IF NOT EXISTS intent_slot (
            key TEXT NOT NULL,
            intent_id TEXT NOT NULL,
            since REAL NOT NULL,
            PRIMARY KEY (key, intent_id)
        ) WITHOUT ROWID;
        """

    /// Scheduled intents a worker saw before their time, for the workers sharing
    /// the database to run when due; `taken_by` names the process running one, `started_at` when a run of it first began;
    /// `type` is its envelope's (nil when the body has none), for workers that take only the types they serve.
    static let keptSchema = """
        CREATE TABLE IF NOT EXISTS intent_kept (
            intent_id TEXT PRIMARY KEY NOT NULL,
            turn INTEGER NOT NULL,
            due_at REAL NOT NULL,
            body TEXT NOT NULL,
            owner TEXT,
            taken_by TEXT,
            taken_at REAL,
            started_at REAL,
            type TEXT
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS intent_kept_by_due ON intent_kept(due_at);
        """

    /// The kept intents by type and due time: a worker looks only at those of the types it serves.
    static let keptTypeIndex = "CREATE INDEX IF NOT EXISTS intent_kept_by_type ON intent_kept(type, due_at)"

    /// Creates the once-only tables, or adds what an older version lacks. Idempotent.
    public static func prepare(_ db: Database) throws {
        try db.transaction { db in
            try db.execute(effectSchema)
            let columns = try db.query("PRAGMA table_info(intent_effect)") { $0.string(1) }
            if !columns.contains("state") {
                try db.execute("ALTER TABLE intent_effect ADD COLUMN state TEXT")
            }
            try db.execute(pendingSchema)
            let pending = try db.query("PRAGMA table_info(intent_pending)") { $0.string(1) }
            for column in ["asked", "granted"] where !pending.contains(column) {
                try db.execute("ALTER TABLE intent_pending ADD COLUMN \(column) TEXT")
            }
            if !pending.contains("cancel_requested") {
                try db.execute("ALTER TABLE intent_pending ADD COLUMN cancel_requested INTEGER")
            }
            if !pending.contains("claim_until") {
                // Until when a claim holds (nil: its claimed time and the lifetime, as claims made before it).
                try db.execute("ALTER TABLE intent_pending ADD COLUMN claim_until REAL")
            }
            try db.execute(ownerSchema)
            try db.execute(slotSchema)
            try db.execute(keptSchema)
            let kept = try db.query("PRAGMA table_info(intent_kept)") { $0.string(1) }
            if !kept.contains("type") {
                // Kept by an older version: the type read from each body (none from one that is not an envelope).
                try db.execute("ALTER TABLE intent_kept ADD COLUMN type TEXT")
                try db.execute(
                    """
                    UPDATE intent_kept SET type = CASE WHEN json_valid(body) AND json_type(body, '$.type') = 'text'
                        THEN json_extract(body, '$.type') END
                    """)
            }
            try db.execute(keptTypeIndex)
        }
    }

    /// Runs `effects` unless `context.intentID` already has an outcome, and
    /// records the response with them atomically. Call it inside a transaction
    /// (`DatabaseQueue.write` opens one; `AppDatabase.once` does both). A
    /// redelivered intent gets its recorded response back; an outcome decided
    /// without the handler (canceled, denied, expired, timedOut) is thrown as
    /// `OutcomeAlreadyDecided`. Effects that throw (an `IntentFailure`, say)
    /// are rolled back with the transaction, and the worker records the failure.
    public static func perform(
        in db: Database, context: IntentContext, _ effects: (Database) throws -> IntentResponse
    ) throws -> IntentResponse {
        do {
            let (response, recorded) = try performNoting(in: db, context: context, effects)
            return noted(response, recorded: recorded, context)
        } catch {
            throw noted(error, context)
        }
    }

    /// `perform`, saying nothing: the response, and whether it is the one recorded before. For a caller that
    /// logs once its transaction has committed (a body may run more than once before one run commits).
    static func performNoting(
        in db: Database, context: IntentContext, _ effects: (Database) throws -> IntentResponse
    ) throws -> (response: IntentResponse, recorded: Bool) {
        if let recorded = try decidedOutcome(in: db, intentID: context.intentID) {
            guard recorded.state == .success else { throw OutcomeAlreadyDecided(recorded) }
            context.committed.noteInTransaction(written: nil)
            return (recorded.response, true)
        }
        let response = try effects(db)
        try record(.success(response), intentID: context.intentID, attempt: context.attempt, in: db)
        context.committed.noteInTransaction(written: .success(response))
        return (response, false)
    }

    /// The response `performNoting` returned, logged when it is the one recorded before this run.
    static func noted(_ response: IntentResponse, recorded: Bool, _ context: IntentContext) -> IntentResponse {
        if recorded { noteRecorded(response.code, context) }
        return response
    }

    /// The error `performNoting` threw, logged when it says the outcome was decided before this run.
    static func noted(_ error: any Error, _ context: IntentContext) -> any Error {
        if let decided = error as? OutcomeAlreadyDecided { noteRecorded(decided.outcome.response.code, context) }
        return error
    }

    /// Logs that the intent's outcome was decided before this run, and is the one it gets.
    private static func noteRecorded(_ code: String, _ context: IntentContext) {
        context.logger.info(
            "already decided: returning the recorded outcome",
            metadata: ["intent.attempt": "\(context.attempt)", "intent.outcome": code])
    }

    /// The outcome decided for an intent, with its state, if any.
    public static func decidedOutcome(in db: Database, intentID: String) throws -> DecidedOutcome? {
        try db.queryFirst(decidedQuery, [.text(intentID)]) { row in try decidedOutcome(row, from: 0) }
    }

    private static let decidedQuery = "SELECT \(outcomeColumns.joined(separator: ", ")) FROM intent_effect WHERE intent_id = ?"

    /// The columns of `intent_effect` that `decidedOutcome(_:from:)` reads, in its order.
    static let outcomeColumns = ["succeeded", "code", "message", "payload", "state"]

    /// The outcome in the row's columns from `first` on, as `outcomeColumns` lists them.
    static func decidedOutcome(_ row: Row, from first: Int32) throws -> DecidedOutcome {
        let payload = try row.text(first + 3).map { try JSONValue.parse(Data($0.utf8)) }
        let state = row.text(first + 4).flatMap(IntentState.init(rawValue:)) ?? (row.int(first) == 1 ? .success : .failure)
        return DecidedOutcome(
            state: state, response: IntentResponse(code: row.string(first + 1), message: row.text(first + 2), payload: payload))
    }

    /// Writes the outcome row (the caller has checked there is none).
    static func record(_ outcome: DecidedOutcome, intentID: String, attempt: Int, in db: Database) throws {
        let response = outcome.response
        try db.run(
            "INSERT INTO intent_effect(intent_id, succeeded, code, message, payload, attempt, handled_at, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                .text(intentID), .integer(outcome.state == .success ? 1 : 0), .text(response.code), .optional(response.message),
                .optional(response.payload?.jsonString), .int(attempt), .real(Date().timeIntervalSince1970), .text(outcome.state.rawValue),
            ])
        try db.run("DELETE FROM intent_pending WHERE intent_id = ?", [.text(intentID)])
    }
}
