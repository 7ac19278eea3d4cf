import Foundation
import IntentKit

/// Once-only effects for handlers that write to SQLite.
///
/// A redelivered intent must not repeat its effects. `perform` runs a handler's
/// writes in the same transaction as the row saying "intent X was handled, with
/// this outcome"; when the row is already there, the effects are skipped and the
/// recorded outcome is returned, so the worker republishes it unchanged.
public enum OnceOnly {
    /// The table `perform` uses; part of every app database that uses it.
    public static let schema = """
        CREATE TABLE IF NOT EXISTS intent_effect (
            intent_id TEXT PRIMARY KEY NOT NULL,
            succeeded INTEGER NOT NULL,
            code TEXT NOT NULL,
            message TEXT,
            payload TEXT,
            attempt INTEGER NOT NULL,
            handled_at REAL NOT NULL
        ) WITHOUT ROWID;
        """

    /// Runs `effects` unless `context.intentID` was already handled, and records
    /// its outcome with them atomically. Call it inside a transaction
    /// (`DatabaseQueue.write` opens one).
    public static func perform(
        in db: Database, context: IntentContext, _ effects: (Database) throws -> HandleOutcome
    ) throws -> HandleOutcome {
        if let recorded = try recordedOutcome(in: db, intentID: context.intentID) {
            context.logger.info("already handled: returning the recorded outcome", metadata: ["intent.attempt": "\(context.attempt)"])
            return recorded
        }
        let outcome = try effects(db)
        let (succeeded, response): (Bool, IntentResponse) =
            switch outcome {
            case .success(let response): (true, response)
            case .failure(let failure): (false, failure.response)
            }
        try db.run(
            "INSERT INTO intent_effect(intent_id, succeeded, code, message, payload, attempt, handled_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.text(context.intentID), .integer(succeeded ? 1 : 0), .text(response.code), .optional(response.message),
             .optional(response.payload?.jsonString), .int(context.attempt), .real(Date().timeIntervalSince1970)])
        return outcome
    }

    /// The outcome recorded for an intent, if it was handled.
    public static func recordedOutcome(in db: Database, intentID: String) throws -> HandleOutcome? {
        try db.queryFirst(
            "SELECT succeeded, code, message, payload FROM intent_effect WHERE intent_id = ?", [.text(intentID)]
        ) { row in
            let payload = try row.text(3).map { try JSONValue.parse(Data($0.utf8)) }
            return HandleOutcome(
                recorded: IntentResponse(code: row.string(1), message: row.text(2), payload: payload),
                succeeded: row.int(0) == 1)
        }
    }
}
