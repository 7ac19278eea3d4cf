import Foundation
import IntentKit

/// The outcome ledger in an SQLite database: `OnceOnly`'s `intent_effect`
/// rows, and `intent_pending` for questions asked and claims.
///
/// Every decision is one write on the database's `DatabaseQueue`, so it is
/// serialized with the handlers' own `OnceOnly` transactions: a cancel and a
/// handler's effects can never both commit.
public final class DatabaseOutcomeLedger: OutcomeLedger {
    /// The database queue every decision is a write on, shared with the app's handlers.
    public let queue: DatabaseQueue
    /// True when the app's handlers commit their effects here with `OnceOnly`; false for the worker's own ledger, which claims intents instead.
    public let holdsEffects: Bool

    /// A ledger in an app's database, whose handlers write with `OnceOnly`
    /// (`holdsEffects`), or in a database of its own (`holdsEffects: false`).
    public init(queue: DatabaseQueue, holdsEffects: Bool = true) throws {
        self.queue = queue
        self.holdsEffects = holdsEffects
        try queue.sync { db in try OnceOnly.prepare(db) }
    }

    /// The worker's own ledger, for handlers that keep no database: a file of
    /// its own, created (private to its user) when missing.
    public convenience init(path: String) throws {
        try StatusStore.createParentDirectory(of: path)
        try self.init(queue: DatabaseQueue(path: path, label: "intentqueue.outcomes"), holdsEffects: false)
    }

    /// The outcome recorded for the intent, if any.
    public func outcome(of intentID: String) async throws -> DecidedOutcome? {
        try await queue.read { db in try OnceOnly.decidedOutcome(in: db, intentID: intentID) }
    }

    /// Records `outcome` unless one is decided already, and returns the one that stands. A cancel of an intent a run has
    /// claimed is only noted (the run's end decides it), and an answer to an older question, or one that comes during a
    /// claim, decides nothing: in both cases it returns nil.
    public func decide(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> DecidedOutcome? {
        try await decision(intentID, outcome, attempt: attempt, by: decider).standing
    }

    /// `decide`, saying whether this call recorded the outcome.
    public func decision(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> Decision {
        try await queue.write { db in
            if let standing = try OnceOnly.decidedOutcome(in: db, intentID: intentID) {
                return Decision(standing: standing, recordedByThisCall: false)
            }
            let pending = try Self.pending(intentID, in: db)
            switch decider {
            case .run:
                break
            case .cancel:
                if pending?.claimedBy != nil {
                    // The run may have acted; its end decides (a question or a retry then ends canceled).
                    try db.run("UPDATE intent_pending SET cancel_requested = 1 WHERE intent_id = ?", [.text(intentID)])
                    return Decision(standing: nil, recordedByThisCall: false)
                }
            case .answer(let question):
                if pending?.claimedBy != nil || (pending?.question ?? 0) > question { return Decision(standing: nil, recordedByThisCall: false) }
            }
            try OnceOnly.record(outcome, intentID: intentID, attempt: attempt, in: db)
            return Decision(standing: outcome, recordedByThisCall: true)
        }
    }

    /// Admits a message about the intent by `OutcomeLedger`'s rules, recording the type and owner of a first submission.
    public func admit(
        _ intentID: String, type: String, sender: Sender, turn: Int, request: IntentRequest?, confirming: [String]
    ) async throws -> Admission {
        // Not durable by itself: what it records is made durable by the commit
        // that decides the intent (or, should the machine lose power first, the
        // redelivered message admits it again). A refusal is said only once the
        // owner it is based on is durable.
        let admission = try await queue.write(durable: false) { db in
            // What the three tables hold of the intent, in one statement.
            let known = try db.queryFirst(Self.admissionQuery, [.text(intentID)]) { row in
                (
                    recorded: row.isNull(0) ? nil : (type: row.string(1), owner: row.text(2)),
                    decided: row.isNull(3) ? nil : try OnceOnly.decidedOutcome(row, from: 4),
                    pending: row.isNull(9) ? nil : Self.pending(row, from: 10)
                )
            }
            // Taken apart once: each `known?.member` copied the whole tuple (through the runtime, for its type).
            let (knownRecorded, decided, pending) = known ?? (nil, nil, nil)
            var recorded = knownRecorded
            let unrecorded = recorded == nil
            if recorded == nil, decided != nil || pending != nil {
                // Known from before owners were recorded: its type is taken as given, and it has no owner.
                recorded = (type, nil)
            }
            var admission = Admission.rules(
                intentID: intentID, type: type, sender: sender, turn: turn, request: request, confirming: confirming,
                recorded: recorded, question: pending?.question, asked: pending?.asked ?? [], granted: pending?.granted ?? [],
                decided: decided)
            // Known from before owners were recorded is not new: only a first submission is.
            admission.isNew = admission.isNew && decided == nil && pending == nil
            if admission.refusal == nil, unrecorded {
                try db.run(
                    "INSERT OR IGNORE INTO intent_owner(intent_id, type, owner, since) VALUES (?, ?, ?, ?)",
                    [.text(intentID), .text(type), .optional(admission.owner), .real(Date().timeIntervalSince1970)])
            }
            return admission
        }
        if admission.refusal != nil {
            try await queue.write { db in
                try db.run("UPDATE intent_owner SET since = since WHERE intent_id = ?", [.text(intentID)])
            }
        }
        return admission
    }

    /// Notes the question asked at `turn`, what it asks to confirm and what is confirmed so far, and lifts any claim;
    /// a cancel requested meanwhile is decided instead, as `canceled`. Returns the outcome that stands, if any.
    public func ask(_ intentID: String, turn: Int, confirmations: [String], granted: Set<String>) async throws -> DecidedOutcome? {
        try await ask(intentID, turn: turn, confirmations: confirmations, granted: granted, holder: nil)
    }

    /// `ask`, by the run `holder` names (nil: any): a claim another delivery has taken over since is left to it, and so
    /// is a cancel noted meanwhile.
    public func ask(
        _ intentID: String, turn: Int, confirmations: [String], granted: Set<String>, holder: Int?
    ) async throws -> DecidedOutcome? {
        try await queue.write { db in
            if let standing = try OnceOnly.decidedOutcome(in: db, intentID: intentID) { return standing }
            let pending = try Self.pending(intentID, in: db)
            // A run that names itself decides a cancel only under its own claim (or none).
            let own = holder == nil || pending?.claimedBy == nil || pending?.claimedBy == holder
            if own, pending?.cancelRequested == true {
                let canceled = DecidedOutcome.canceled("canceled by request while it was being resolved")
                try OnceOnly.record(canceled, intentID: intentID, attempt: 0, in: db)
                return canceled
            }
            try db.run(
                """
                INSERT INTO intent_pending(intent_id, question_turn, claimed_attempt, updated_at, asked, granted)
                VALUES (?1, ?2, NULL, ?3, ?4, ?5)
                ON CONFLICT(intent_id) DO UPDATE SET
                    asked = CASE WHEN excluded.question_turn >= coalesce(question_turn, 0) THEN excluded.asked ELSE asked END,
                    granted = CASE WHEN excluded.question_turn >= coalesce(question_turn, 0) THEN excluded.granted ELSE granted END,
                    question_turn = max(coalesce(question_turn, 0), excluded.question_turn),
                    claimed_attempt = CASE WHEN ?6 IS NULL OR claimed_attempt = ?6 THEN NULL ELSE claimed_attempt END,
                    updated_at = excluded.updated_at
                """,
                [
                    .text(intentID), .int(turn), .real(Date().timeIntervalSince1970),
                    .text(Self.encode(confirmations)), .text(Self.encode(granted.sorted())), .optional(holder),
                ])
            return nil
        }
    }

    /// Forgets the decided intents among the next `limit` after `cursor` that were decided before `cutoff`: their
    /// `intent_effect`, `intent_owner` and `intent_pending` rows, in one write (not durable by itself: a step lost
    /// with the machine is made again by the next pass). One the ledger still keeps to run when due (a cancel decided
    /// as its run was being kept) is not forgotten: when due, its run finds the decision. The step is looked at first
    /// with a read on the reader's connection, so a step that finds nothing old neither waits for the handlers' writes
    /// nor takes their write lock.
    public func forgetDecided(before cutoff: Double, after cursor: String, limit: Int) async throws -> (forgotten: Int, next: String?) {
        let bindings: [SQLValue] = [.text(cursor), .int(max(1, limit)), .real(cutoff)]
        let step = try await queue.readInPlace { db in
            try db.queryFirst(
                """
                SELECT max(intent_id), coalesce(sum(handled_at < ?3), 0)
                FROM (SELECT intent_id, handled_at FROM intent_effect WHERE intent_id > ?1 ORDER BY intent_id LIMIT ?2)
                """, bindings
            ) { row in (last: row.text(0), old: row.int(1)) }
        }
        guard let last = step?.last else { return (0, nil) }
        guard step?.old ?? 0 > 0 else { return (0, last) }
        let forgotten = try await queue.write(durable: false) { db in
            let range: [SQLValue] = [.text(cursor), .text(last), .real(cutoff)]
            let old = """
                SELECT intent_id FROM intent_effect AS e WHERE intent_id > ?1 AND intent_id <= ?2 AND handled_at < ?3
                    AND NOT EXISTS (SELECT 1 FROM intent_kept AS k WHERE k.intent_id = e.intent_id)
                """
            try db.run("DELETE FROM intent_owner WHERE intent_id IN (\(old))", range)
            try db.run("DELETE FROM intent_pending WHERE intent_id IN (\(old))", range)
            try db.run("DELETE FROM intent_effect WHERE intent_id IN (\(old))", range)
            return db.changes
        }
        return (forgotten, last)
    }

    /// How long a claim holds off another delivery of the same intent; an older
    /// one is taken to belong to a worker that died.
    public static let claimLifetime = 900.0

    /// How long a claim for a run of up to `seconds` holds: `claimLifetime`, or `seconds` when that is longer.
    private static func claimLifetime(lasting seconds: Double) -> Double {
        max(claimLifetime, seconds.isFinite ? min(seconds, 1e12) : 1e12)
    }

    /// Marks the intent as handled by `attempt` (only for a ledger without the effects; one with them just looks the
    /// outcome up). Throws `ClaimHeld` while a claim younger than `claimLifetime` holds; returns the outcome that stands, if any.
    public func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome? {
        try await claim(intentID, attempt: attempt, lasting: 0)
    }

    /// `claim`, holding for `claimLifetime` or `seconds`, whichever is longer (`claim_until`): a run with a time
    /// limit past the lifetime keeps its claim to the end of its limit.
    public func claim(_ intentID: String, attempt: Int, lasting seconds: Double) async throws -> DecidedOutcome? {
        try await claim(intentID, attempt: attempt, holder: attempt, lasting: seconds)
    }

    /// `claim(_:attempt:lasting:)`, by the run `holder` names (kept in `claimed_attempt`, which only ever says who
    /// holds the claim).
    public func claim(_ intentID: String, attempt: Int, holder: Int, lasting seconds: Double) async throws -> DecidedOutcome? {
        guard !holdsEffects else { return try await outcome(of: intentID) }
        let lifetime = Self.claimLifetime(lasting: seconds)
        return try await queue.write { db in
            if let standing = try OnceOnly.decidedOutcome(in: db, intentID: intentID) { return standing }
            let now = Date().timeIntervalSince1970
            let held =
                try db.queryFirst(
                    """
                    SELECT 1 FROM intent_pending WHERE intent_id = ?1 AND claimed_attempt IS NOT NULL
                        AND coalesce(claim_until, updated_at + ?3) > ?2
                    """,
                    [.text(intentID), .real(now), .real(Self.claimLifetime)]
                ) { _ in true } ?? false
            if held { throw ClaimHeld(intentID: intentID) }
            try db.run(
                """
                INSERT INTO intent_pending(intent_id, question_turn, claimed_attempt, updated_at, claim_until) VALUES (?1, NULL, ?2, ?3, ?4)
                ON CONFLICT(intent_id) DO UPDATE SET claimed_attempt = excluded.claimed_attempt, updated_at = excluded.updated_at,
                    claim_until = excluded.claim_until
                """, [.text(intentID), .int(holder), .real(now), .real(now + lifetime)])
            return nil
        }
    }

    /// Keeps the claim `holder` holds for `claimLifetime` or `seconds` (whichever is longer) from now. Not durable:
    /// should the machine lose power, the run it keeps alive is gone too.
    public func renewClaim(_ intentID: String, holder: Int, lasting seconds: Double) async throws {
        guard !holdsEffects else { return }
        let lifetime = Self.claimLifetime(lasting: seconds)
        try await queue.write(durable: false) { db in
            try db.run(
                """
                UPDATE intent_pending SET claim_until = max(coalesce(claim_until, updated_at + ?4), ?3)
                WHERE intent_id = ?1 AND claimed_attempt = ?2
                """, [.text(intentID), .int(holder), .real(Date().timeIntervalSince1970 + lifetime), .real(Self.claimLifetime)])
        }
    }

    /// Lifts the claim of a run that decided nothing, whoever holds it; a cancel requested meanwhile is decided now, as
    /// `canceled`.
    public func release(_ intentID: String) async throws {
        try await lift(intentID, holder: nil)
    }

    /// `release`, by the run `holder` names: a claim another delivery has taken over since is left to that delivery's
    /// run, and so is a cancel noted meanwhile (that run may be handling the intent, and its end decides).
    public func release(_ intentID: String, holder: Int) async throws {
        try await lift(intentID, holder: holder)
    }

    /// Lifts the claim `holder` holds (any claim, for nil), deciding a cancel noted during it.
    private func lift(_ intentID: String, holder: Int?) async throws {
        guard !holdsEffects else { return }
        try await queue.write { db in
            let pending = try Self.pending(intentID, in: db)
            if let holder, pending?.claimedBy != holder { return }
            if pending?.cancelRequested == true,
                try OnceOnly.decidedOutcome(in: db, intentID: intentID) == nil
            {
                // A cancel came while it ran; the run ended without an outcome: now the cancel holds.
                try OnceOnly.record(.canceled("canceled by request while it was being handled"), intentID: intentID, attempt: 0, in: db)
            }
            try db.run("UPDATE intent_pending SET claimed_attempt = NULL WHERE intent_id = ?", [.text(intentID)])
        }
    }

    /// A slot of `key` for the intent, counted in this database: across every worker that shares it.
    public func acquireSlot(_ key: String, intentID: String, maximum: Int, staleAfter: Double) async throws -> Bool {
        try await queue.write(durable: false) { db in
            let now = Date().timeIntervalSince1970
            try db.run("DELETE FROM intent_slot WHERE key = ? AND since < ?", [.text(key), .real(now - staleAfter)])
            let held = try db.queryFirst("SELECT 1 FROM intent_slot WHERE key = ? AND intent_id = ?", [.text(key), .text(intentID)]) { _ in true }
            if held == nil {
                let taken = try db.queryFirst("SELECT count(*) FROM intent_slot WHERE key = ?", [.text(key)]) { $0.int(0) } ?? 0
                guard taken < maximum else { return false }
            }
            try db.run(
                "INSERT OR REPLACE INTO intent_slot(key, intent_id, since) VALUES (?, ?, ?)", [.text(key), .text(intentID), .real(now)])
            return true
        }
    }

    /// Gives back the intent's slot of `key`, in this database.
    public func releaseSlot(_ key: String, intentID: String) async throws {
        try await queue.write(durable: false) { db in
            try db.run("DELETE FROM intent_slot WHERE key = ? AND intent_id = ?", [.text(key), .text(intentID)])
        }
    }

    /// The turn of the intent this database keeps, if it keeps one.
    public func keptTurn(of intentID: String) async throws -> Int? {
        try await queue.read { db in try db.queryFirst("SELECT turn FROM intent_kept WHERE intent_id = ?", [.text(intentID)]) { $0.int(0) } }
    }

    /// The intent kept in this database, as it was kept, if any.
    public func keptIntent(of intentID: String) async throws -> KeptIntent? {
        try await queue.read { db in
            try db.queryFirst("SELECT turn, due_at, body, owner FROM intent_kept WHERE intent_id = ?", [.text(intentID)]) { row in
                KeptIntent(id: intentID, turn: row.int(0), dueAt: row.double(1), body: Array(row.string(2).utf8), owner: row.text(3))
            }
        }
    }

    /// Keeps the intent's turn in this database, unless a later turn is kept (or the same one, taken).
    public func keep(_ intent: KeptIntent) async throws -> Bool {
        try await queue.write { db in
            try db.run(
                """
                INSERT INTO intent_kept(intent_id, turn, due_at, body, owner, type) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                ON CONFLICT(intent_id) DO UPDATE SET turn = excluded.turn, due_at = excluded.due_at, body = excluded.body,
                    owner = excluded.owner, type = excluded.type, taken_by = NULL, taken_at = NULL, started_at = NULL
                WHERE excluded.turn > intent_kept.turn OR (excluded.turn = intent_kept.turn AND intent_kept.taken_by IS NULL)
                """,
                [
                    .text(intent.id), .int(intent.turn), .real(intent.dueAt), .text(String(decoding: intent.body, as: UTF8.self)),
                    .optional(intent.owner), .optional(intent.type),
                ])
        }
        return true
    }

    /// Takes the due ones not held by `taker` or by another that still holds them, in one transaction: two workers
    /// never take one.
    public func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int
    ) async throws -> [KeptIntent] {
        try await take(by: time, taker: taker, isHeld: isHeld, limit: limit, types: nil)
    }

    /// Takes the due ones of `types` only, as `takeDueKept(by:taker:isHeld:limit:)` does: the others stay for the
    /// workers sharing the ledger that serve them.
    public func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int,
        types: Set<String>
    ) async throws -> [KeptIntent] {
        try await take(by: time, taker: taker, isHeld: isHeld, limit: limit, types: types)
    }

    private func take(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int,
        types: Set<String>?
    ) async throws -> [KeptIntent] {
        // The types as a JSON array; through the type index, rows of other types (however many wait for their
        // workers) are never read. A body without a type is anyone's to take (and refuse), as before types were asked for.
        let ofTypes: (sql: String, bindings: [SQLValue]) =
            types.map { types in
                let list = JSONValue.array(types.sorted().map { .string($0) }).serialized()
                return ("AND (type IN (SELECT value FROM json_each(?5)) OR type IS NULL)", [.text(String(decoding: list, as: UTF8.self))])
            } ?? ("", [])
        return try await queue.write(durable: false) { db in
            var taken: [KeptIntent] = []
            let now = Date().timeIntervalSince1970
            // Page by page, so that rows others still hold (however many) never hide one that is free.
            let page = 256
            var offset = 0
            while taken.count < limit {
                let due = try db.query(
                    """
                    SELECT intent_id, turn, due_at, body, owner, taken_by, started_at, taken_at FROM intent_kept
                    WHERE due_at <= ?1 AND (taken_by IS NULL OR taken_by != ?3) \(ofTypes.sql)
                    ORDER BY taken_by IS NOT NULL, due_at, intent_id LIMIT ?2 OFFSET ?4
                    """,
                    [.real(time), .int(page), .text(taker), .int(offset)] + ofTypes.bindings
                ) { row in
                    (
                        intent: KeptIntent(
                            id: row.string(0), turn: row.int(1), dueAt: row.double(2), body: Array(row.string(3).utf8), owner: row.text(4),
                            startedAt: row.optionalDouble(6)),
                        taker: row.text(5), takenAt: row.optionalDouble(7) ?? 0
                    )
                }
                var takenHere = 0
                for entry in due where taken.count < limit {
                    if let holder = entry.taker, isHeld(holder, entry.takenAt) { continue }
                    try db.run(
                        "UPDATE intent_kept SET taken_by = ?2, taken_at = ?3 WHERE intent_id = ?1",
                        [.text(entry.intent.id), .text(taker), .real(now)])
                    taken.append(entry.intent)
                    takenHere += 1
                }
                if due.count < page { break }
                offset += due.count - takenHere  // what was taken here no longer matches
            }
            return taken
        }
    }

    /// The earliest due time kept in this database and not taken.
    public func nextKeptDue() async throws -> Double? {
        try await queue.read { db in
            try db.queryFirst("SELECT min(due_at) FROM intent_kept WHERE taken_by IS NULL") { $0.optionalDouble(0) } ?? nil
        }
    }

    /// Notes when the kept intent's turn began to run, unless a run began before.
    public func noteKeptStart(_ intentID: String, turn: Int, at time: Double) async throws {
        try await queue.write(durable: false) { db in
            try db.run(
                "UPDATE intent_kept SET started_at = coalesce(started_at, ?3) WHERE intent_id = ?1 AND turn = ?2",
                [.text(intentID), .int(turn), .real(time)])
        }
    }

    /// Forgets the kept intent, unless a later turn is kept.
    public func forgetKept(_ intentID: String, turn: Int) async throws {
        try await queue.write(durable: false) { db in
            try db.run("DELETE FROM intent_kept WHERE intent_id = ? AND turn <= ?", [.text(intentID), .int(turn)])
        }
    }

    /// Lets go of the kept intent's turn, to be taken again.
    public func letGoKept(_ intentID: String, turn: Int) async throws {
        try await queue.write(durable: false) { db in
            try db.run("UPDATE intent_kept SET taken_by = NULL, taken_at = NULL WHERE intent_id = ? AND turn = ?", [.text(intentID), .int(turn)])
        }
    }

    /// `claimedBy`: the holder of the claim (`claimed_attempt`), if it is claimed.
    private typealias Pending = (question: Int?, claimedBy: Int?, asked: Set<String>, granted: Set<String>, cancelRequested: Bool)

    private static let pendingColumns = ["question_turn", "claimed_attempt", "asked", "granted", "cancel_requested"]

    private static func pending(_ intentID: String, in db: Database) throws -> Pending? {
        try db.queryFirst(pendingQuery, [.text(intentID)]) { row in pending(row, from: 0) }
    }

    private static let pendingQuery = "SELECT \(pendingColumns.joined(separator: ", ")) FROM intent_pending WHERE intent_id = ?"

    /// The pending row in the row's columns from `first` on, as `pendingColumns` lists them.
    private static func pending(_ row: Row, from first: Int32) -> Pending {
        (
            question: row.optionalInt(first), claimedBy: row.optionalInt(first + 1), asked: decode(row.text(first + 2)),
            granted: decode(row.text(first + 3)), cancelRequested: row.optionalInt(first + 4) == 1
        )
    }

    /// An admission's look at the intent: whether `intent_owner` has it (column 0) and its type and owner, whether
    /// `intent_effect` has it (3) and its outcome's columns, whether `intent_pending` has it (9) and that row's columns.
    private static let admissionQuery = """
        SELECT o.intent_id, o.type, o.owner, e.intent_id, \(OnceOnly.outcomeColumns.map { "e." + $0 }.joined(separator: ", ")), p.intent_id, \(
            pendingColumns.map { "p." + $0 }.joined(separator: ", "))
        FROM (SELECT ?1 AS id) AS k
        LEFT JOIN intent_owner AS o ON o.intent_id = k.id
        LEFT JOIN intent_effect AS e ON e.intent_id = k.id
        LEFT JOIN intent_pending AS p ON p.intent_id = k.id
        """

    private static func encode(_ names: [String]) -> String {
        JSONValue.array(names.map(JSONValue.string)).jsonString
    }

    private static func decode(_ text: String?) -> Set<String> {
        guard let text, let array = (try? JSONValue.parse(Data(text.utf8)))?.arrayValue else { return [] }
        return Set(array.compactMap(\.stringValue))
    }
}
