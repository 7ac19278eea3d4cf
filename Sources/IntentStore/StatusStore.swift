import Foundation
import IntentKit

/// The SQLite status store, opened for writing: the recorder is its only
/// writer (a delete is a request it carries out). Readers open the file
/// read-only with `StatusReader` and, thanks to WAL, never block the writer.
///
/// Not `Sendable`: like its `Database`, a store belongs to one thread.
public final class StatusStore {
    /// The writer's connection (WAL, each commit synced unless a batch says otherwise).
    public let database: Database
    /// Reads through the writer's own connection (what the recorder answers remote queries from).
    public let reader: StatusReader

    /// The ranks the state rules below compare (`IntentState.rank`).
    static let queuedRank = IntentState.queued.rank
    static let runningRank = IntentState.inProgress.rank
    static let cancelRequestedRank = IntentState.cancelRequested.rank
    static let terminalRank = IntentState.success.rank

    static let migrations = [
        """
        CREATE TABLE intent_status (
            id TEXT PRIMARY KEY NOT NULL,
            type TEXT NOT NULL,
            state TEXT NOT NULL,
            rank INTEGER NOT NULL,
            response_code TEXT,
            response_message TEXT,
            response_payload TEXT,
            resolutions TEXT,
            progress_fraction REAL,
            progress_message TEXT,
            parameters TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            worker TEXT,
            submitted_at REAL,
            queued_at REAL,
            started_at REAL,
            updated_at REAL NOT NULL,
            finished_at REAL
        );
        CREATE INDEX intent_status_by_state ON intent_status(state, updated_at);
        CREATE INDEX intent_status_by_type ON intent_status(type, updated_at);
        """,
        """
        CREATE TABLE status_conflict (
            id TEXT NOT NULL,
            stored_state TEXT NOT NULL,
            stored_code TEXT,
            event_state TEXT NOT NULL,
            event_code TEXT,
            attempt INTEGER NOT NULL,
            at REAL NOT NULL
        );
        CREATE INDEX status_conflict_by_id ON status_conflict(id);
        """,
        """
        ALTER TABLE intent_status ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE intent_status ADD COLUMN group_id TEXT;
        ALTER TABLE intent_status ADD COLUMN confirmed TEXT;
        CREATE INDEX intent_status_by_group ON intent_status(group_id);
        CREATE TABLE intent_turn (
            id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            question TEXT NOT NULL,
            asked_at REAL,
            answer TEXT,
            answered_at REAL,
            PRIMARY KEY (id, turn)
        ) WITHOUT ROWID;
        """,
        """
        CREATE INDEX intent_status_by_finished ON intent_status(finished_at) WHERE finished_at IS NOT NULL;
        CREATE INDEX status_conflict_by_time ON status_conflict(at);
        """,
        """
        ALTER TABLE intent_status ADD COLUMN expire_requested_at REAL;
        """,
        """
        ALTER TABLE intent_status ADD COLUMN owner TEXT;
        CREATE INDEX intent_status_by_owner ON intent_status(owner, updated_at);
        CREATE TABLE intent_refusal (
            id TEXT NOT NULL,
            owner TEXT NOT NULL,
            type TEXT NOT NULL,
            code TEXT NOT NULL,
            message TEXT,
            attempt INTEGER NOT NULL,
            at REAL NOT NULL,
            PRIMARY KEY (id, owner)
        ) WITHOUT ROWID;
        CREATE INDEX intent_refusal_by_time ON intent_refusal(at);
        """,
        """
        ALTER TABLE intent_status ADD COLUMN view TEXT;
        """,
        """
        ALTER TABLE intent_status ADD COLUMN due_at REAL;
        ALTER TABLE intent_status ADD COLUMN release_body TEXT;
        ALTER TABLE intent_status ADD COLUMN released_at REAL;
        CREATE INDEX intent_status_by_due ON intent_status(due_at) WHERE release_body IS NOT NULL AND released_at IS NULL;
        """,
        """
        CREATE TABLE intent_dedupe (
            owner TEXT NOT NULL,
            type TEXT NOT NULL,
            key TEXT NOT NULL,
            id TEXT NOT NULL,
            since REAL NOT NULL,
            until REAL NOT NULL,
            PRIMARY KEY (owner, type, key)
        ) WITHOUT ROWID;
        CREATE INDEX intent_dedupe_by_until ON intent_dedupe(until);
        """,
        """
        CREATE TABLE intent_schedule (
            name TEXT PRIMARY KEY NOT NULL,
            owner TEXT,
            type TEXT NOT NULL,
            parameters TEXT NOT NULL,
            every REAL NOT NULL,
            starts REAL NOT NULL,
            paused INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        ) WITHOUT ROWID;
        """,
        // When the recorder releases a scheduled intent: when it is due, or, once a worker keeps it, a grace after.
        """
        ALTER TABLE intent_status ADD COLUMN release_at REAL;
        UPDATE intent_status SET release_at = due_at WHERE release_body IS NOT NULL;
        DROP INDEX intent_status_by_due;
        CREATE INDEX intent_status_by_release ON intent_status(release_at) WHERE release_body IS NOT NULL AND released_at IS NULL;
        """,
        // One row the recorder rewrites to make the log durable when no batch is coming to do it (`syncLog`).
        """
        CREATE TABLE store_sync (id INTEGER PRIMARY KEY CHECK (id = 1), synced_at REAL NOT NULL);
        INSERT INTO store_sync VALUES (1, 0);
        """,
        // Indexes the lists and tallies use (their filters are written out, never `?1 IS NULL OR …`, which scans):
        // the newest first, each entry with its state and type so a filter on them reads no row; an owner's
        // newest first; a group's intents only (most have none, and had an entry each). By state stays, for
        // the few in one state (questions to expire, dead letters); by type went, since nothing looked it up.
        """
        DROP INDEX intent_status_by_type;
        DROP INDEX intent_status_by_owner;
        DROP INDEX intent_status_by_group;
        CREATE INDEX intent_status_by_time ON intent_status(updated_at, state, type);
        CREATE INDEX intent_status_by_owner ON intent_status(owner, updated_at, state, type);
        CREATE INDEX intent_status_by_group ON intent_status(group_id) WHERE group_id IS NOT NULL;
        """,
        // The state index holds only the intents not `success`: most intents end there, and each wrote, moved and
        // wrote again an entry no lookup asks for (the lists and tallies of `success` read the time index). A query
        // that looks a state up in it carries the index's own term, `state <> 'success'` (`StatusStore.unsettled`):
        // SQLite uses a partial index only for a query whose WHERE holds that term as written.
        """
        DROP INDEX intent_status_by_state;
        CREATE INDEX intent_status_unsettled ON intent_status(state, updated_at) WHERE state <> 'success';
        """,
        // When each schedule was made or last resumed: the schedulers count its due times from then, whenever they
        // first read it (one that read it only after its first due time skipped that time), and skip a pause's.
        """
        ALTER TABLE intent_schedule ADD COLUMN active_since REAL;
        UPDATE intent_schedule SET active_since = created_at;
        """,
        // The turn of an answer (or a confirmation, or a denial) the broker dead-lettered, and when the workers were
        // last asked to end its question with it (`turnsToAbandon`): its question is the ledger's to end, not the
        // recorder's (the answer's own copy has already moved the row to that turn).
        """
        ALTER TABLE intent_status ADD COLUMN abandon_turn INTEGER;
        ALTER TABLE intent_status ADD COLUMN abandon_marked_at REAL;
        ALTER TABLE intent_status ADD COLUMN abandon_requested_at REAL;
        CREATE INDEX intent_status_abandoned ON intent_status(abandon_turn) WHERE abandon_turn IS NOT NULL;
        """,
        // Retention finds finished intents in the time index (`deleteFinished`): an intent's outcome is its last update.
        // The index of finish times, which each outcome wrote an entry into and nothing else read, went.
        """
        DROP INDEX IF EXISTS intent_status_by_finished;
        """,
    ]

    /// The questions unanswered for long enough (`questionsToExpire`), looked up in the state index.
    static let expiryQuery = """
        SELECT id, type, turn FROM intent_status
        WHERE state = 'needsInput' AND \(unsettled) AND updated_at < ?1 - ?2 AND coalesce(expire_requested_at, 0) < ?1 - ?3
        ORDER BY updated_at LIMIT ?4
        """

    /// The term of the state index's `WHERE` (`intent_status_unsettled`, which holds only the intents not
    /// `success`): a query looking up another state says it too, or SQLite will not use that index.
    package static let unsettled = "state <> 'success'"

    /// How long after its due time the recorder releases a scheduled intent a
    /// worker keeps (`StatusEvent.kept`) and that has not started: the fallback
    /// for a kept intent no worker sharing its ledger ran (they all died, or the
    /// machine is gone). Longer than a worker's longest reconnect backoff (10 s),
    /// so that workers back from an outage publish what they ran meanwhile first.
    public static let keptReleaseGrace = 15.0

    /// How long a kept intent may be `inProgress` with no event before the
    /// recorder releases it too: its run was taken and begun, and nothing was
    /// heard since (the machine of the only workers sharing its ledger is gone).
    /// As long as a ledger's claim holds (`DatabaseOutcomeLedger.claimLifetime`).
    public static let keptRunLease = 900.0

    /// Opens the store for writing, creating the file and schema as needed.
    public init(path: String) throws {
        try Self.createParentDirectory(of: path)
        database = try Database(path: path)
        // In one transaction: tools read the store while its recorder starts, and refuse a schema older than theirs.
        try database.migrate(Self.migrations, atomically: true)
        reader = StatusReader(database: database)
    }

    /// Makes every commit so far durable (one synced commit of the store's sync row), for the
    /// records committed with `durable: false` when no durable batch follows them.
    public func syncLog(now: Double = Date().timeIntervalSince1970) throws {
        try database.transaction(durable: true) { db in
            try db.run("UPDATE store_sync SET synced_at = ? WHERE id = 1", [.real(now)])
        }
    }

    static func createParentDirectory(of path: String) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// Who sent a submission or a request, as the recorder could verify it.
    public struct Submitter: Sendable, Hashable {
        /// The message's `user_id` (or the owner a trusted republisher named).
        public var user: String?
        /// An operator may act on any intent.
        public var isOperator: Bool

        /// A sender as the recorder verified it; not an operator unless said.
        public init(user: String?, isOperator: Bool = false) {
            self.user = user
            self.isOperator = isOperator
        }
    }

    /// One thing the recorder learned: a submission the broker accepted, or a worker's event.
    public enum Update: Sendable {
        /// A submission, an answer, a confirmation or a denial the broker
        /// accepted. `by` is its sender: the owner, for a first submission; an
        /// answer or a denial from anyone but the owner (or an operator) changes
        /// nothing. nil: not known (the store's own tests, or older messages).
        case queued(IntentEnvelope, by: Submitter? = nil)
        /// A worker's status event, applied by the state rules of `record`.
        case event(StatusEvent)
        /// An operator put a dead-lettered intent back in the queue: its
        /// `deadLettered` failure (and only that one) reopens as `queued`. `by` is
        /// its original sender, whom a row made again (retention or a delete took
        /// the old one) belongs to.
        case requeued(IntentEnvelope, by: Submitter? = nil)
        /// Someone asked to cancel the intent: an unfinished one of that type shows
        /// `cancelRequested` until a worker's decision (canceled, or the outcome
        /// that was already decided) arrives as an event, or the run it came too late
        /// for asks a question (a cancel is moot while a handler runs). A cancel that
        /// names another type than the intent's is refused by the workers, and changes
        /// nothing here.
        case cancelRequested(id: String, type: String? = nil, by: Submitter? = nil)
        /// The broker dead-lettered an answer, a confirmation or a denial (`turn` is its turn, 1 or more): the
        /// question it answered is still open in the intent's ledger, and only a worker may end it there. The
        /// recorder asks the workers to (`turnsToAbandon`), and the store hears their decision as an event; it
        /// records no failure of its own, which the ledger would not hold.
        case turnDeadLettered(id: String, type: String, turn: Int, by: Submitter? = nil)
        /// A worker refused one message about the intent (an id taken by
        /// another submitter or type, an answer from someone else): kept for
        /// that sender, and the intent is untouched.
        case refusal(StatusEvent)

        /// The intent the update is about.
        public var intentID: String {
            switch self {
            case .queued(let envelope, _), .requeued(let envelope, _): envelope.id
            case .event(let event), .refusal(let event): event.id
            case .cancelRequested(let id, _, _), .turnDeadLettered(let id, _, _, _): id
            }
        }
    }

    /// A state change the store applied: what metrics count.
    public struct Transition: Sendable, Hashable {
        /// The intent whose state changed.
        public var id: String
        /// Its intent type.
        public var type: String
        /// nil when the store had never seen the id.
        public var from: IntentState?
        /// The state it is in now.
        public var to: IntentState
        /// The response code of the new state, for `success` and `failure`.
        public var code: String?
        /// The response message of the new state.
        public var message: String? = nil
        /// The position, in the updates given to `record`, of the update that made the change.
        public var update: Int = 0
        /// The intent's owner, as far as the store knows.
        public var owner: String? = nil
    }

    /// Applies updates in one transaction and returns the state changes it made
    /// (only when `reportingTransitions`: finding them costs a lookup before each
    /// update, and one after it unless the update itself says what it left).
    /// States never move backwards: an event ranked below the stored state is
    /// ignored, and a terminal state is final. A terminal event applies to any
    /// unfinished intent whatever its turn, since workers decide each outcome
    /// once (in the intent's ledger): it is the outcome. Only a terminal event
    /// moves an intent out of `cancelRequested`, and a worker's outcome replaces
    /// a `deadLettered` failure (the broker's verdict on the delivery, not on
    /// the effects).
    ///
    /// With `durable: false` the commit is visible at once and survives the
    /// process dying, but not the machine losing power until a later durable
    /// commit (or `syncLog()`): the recorder acks what it recorded only then.
    @discardableResult
    public func record(
        _ updates: [Update], now: Double = Date().timeIntervalSince1970,
        reportingTransitions: Bool = true, durable: Bool = true
    ) throws -> [Transition] {
        guard !updates.isEmpty else { return [] }
        // A first submission and its outcome in the same write (the recorder holds a submission for it) are one row
        // written once, when the store has no row for the id yet: the row both would have left, in one insert.
        let pairs = Self.outcomePartners(in: updates)
        // Every other write of the store is a transaction that syncs (`Database.transaction`'s default).
        return try database.transaction(durable: durable) { db in
            // Marked as written in a copy: a transaction tried again (the database was busy) starts from the pairs.
            var partners = pairs
            var transitions: [Transition] = []
            var merged = false
            for (position, update) in updates.enumerated() where partners.isEmpty || partners[position] != Self.writtenWithSubmission {
                let id = update.intentID
                if !partners.isEmpty, partners[position] >= 0, case .queued(let envelope, let submitter) = update,
                    case .event(let event) = updates[partners[position]],
                    try recordQueued(envelope, by: submitter, withOutcome: event, now: now, in: db)
                {
                    let partner = partners[position]
                    partners[partner] = Self.writtenWithSubmission
                    merged = true
                    guard reportingTransitions else { continue }
                    // The changes the two writes would have reported, each at its own update's position.
                    transitions.append(
                        Transition(id: id, type: envelope.type, from: nil, to: .queued, code: nil, update: position, owner: submitter?.user))
                    transitions.append(
                        Transition(
                            id: id, type: envelope.type, from: .queued, to: event.state, code: event.response?.code,
                            message: event.response?.message, update: partner, owner: event.owner ?? submitter?.user))
                    continue
                }
                if case .refusal(let event) = update {
                    try recordRefusal(event, now: now, in: db)
                    continue
                }
                let before =
                    !reportingTransitions
                    ? nil
                    : try db.queryFirst(
                        "SELECT state, response_code FROM intent_status WHERE id = ?", [.text(id)]
                    ) { row in
                        (state: IntentState(rawValue: row.string(0)), code: row.text(1))
                    }
                // Whether the update's write changed the row (a submission's or an event's).
                var changed = false
                switch update {
                case .queued(let envelope, let submitter): changed = try recordQueued(envelope, by: submitter, now: now, in: db)
                case .event(let event): changed = try recordEvent(event, now: now, in: db)
                case .refusal: break
                case .requeued(let envelope, let submitter):
                    try db.run(
                        """
                        UPDATE intent_status SET state = 'queued', rank = \(Self.queuedRank), response_code = NULL, response_message = NULL,
                            response_payload = NULL, finished_at = NULL, updated_at = ?2
                        WHERE id = ?1 AND response_code = 'deadLettered'
                        """, [.text(envelope.id), .real(now)])
                    // A lost answer requeued: its question is not to be ended for it.
                    try db.run(
                        "UPDATE intent_status SET abandon_turn = NULL WHERE id = ?1 AND abandon_turn = ?2", [.text(envelope.id), .int(envelope.turn)])
                    try recordQueued(envelope, by: submitter, now: now, in: db)
                case .cancelRequested(let id, let type, let submitter):
                    try db.run(
                        """
                        UPDATE intent_status SET state = 'cancelRequested', rank = \(Self.cancelRequestedRank), progress_fraction = NULL,
                            progress_message = NULL, updated_at = ?2
                        WHERE id = ?1 AND rank < \(Self.terminalRank) AND \(Self.ownedBy(3)) AND (?5 IS NULL OR type = ?5)
                        """, [.text(id), .real(now)] + Self.ownership(submitter) + [.optional(type)])
                case .turnDeadLettered(let id, let type, let turn, let submitter):
                    try db.run(
                        """
                        UPDATE intent_status SET abandon_turn = ?5, abandon_marked_at = ?6, abandon_requested_at = NULL
                        WHERE id = ?1 AND type = ?2 AND rank < \(Self.terminalRank) AND \(Self.ownedBy(3)) AND turn <= ?5
                        """, [.text(id), .text(type)] + Self.ownership(submitter) + [.int(turn), .real(now)])
                }
                guard reportingTransitions else { continue }
                let after: Stored?
                switch update {
                case .event(let event) where event.owner != nil:
                    // Applied, the upsert set these from the event (its type is the row's, and an owner it names is the
                    // row's owner whoever submitted); not applied, the row is as it was: nothing changed.
                    let response = event.response
                    after =
                        changed
                        ? Stored(state: event.state, code: response?.code, type: event.type, message: response?.message, owner: event.owner) : nil
                case .queued(let envelope, let submitter) where envelope.turn == 0:
                    // A first submission inserts its row, or fills in what a row lacks without changing its state or code.
                    let state: IntentState = Self.isScheduled(envelope) ? .scheduled : .queued
                    let owner = submitter?.user
                    after = changed && before == nil ? Stored(state: state, code: nil, type: envelope.type, message: nil, owner: owner) : nil
                default:
                    after = try db.queryFirst(
                        "SELECT state, response_code, type, response_message, owner FROM intent_status WHERE id = ?", [.text(id)]
                    ) { row in
                        Stored(
                            state: IntentState(rawValue: row.string(0)), code: row.text(1), type: row.string(2), message: row.text(3),
                            owner: row.text(4))
                    }
                }
                if let after, let state = after.state, before == nil || before!.state != state || before!.code != after.code {
                    transitions.append(
                        Transition(
                            id: id, type: after.type, from: before?.state ?? nil, to: state, code: after.code, message: after.message,
                            update: position, owner: after.owner))
                }
            }
            // In the order of the updates that made them, as when each is written by itself.
            return merged ? transitions.sorted { $0.update < $1.update } : transitions
        }
    }

    /// An intent's row as a transition reports it (`record`).
    struct Stored {
        var state: IntentState?
        var code: String?
        var type: String
        var message: String?
        var owner: String?
    }

    /// Whether a submission (or an answer) is recorded `scheduled`, not `queued`: it is due later, and not a request.
    static func isScheduled(_ envelope: IntentEnvelope) -> Bool {
        envelope.request == nil && envelope.dueAt != nil
    }

    /// In `outcomePartners`: an outcome written with its submission, not by itself.
    static let writtenWithSubmission = -2

    /// For each position of `updates`: for a first submission that the next update about its intent ends (`canMerge`),
    /// that update's position; otherwise -1. Empty when no write could merge (fewer than two updates, or no first submission).
    static func outcomePartners(in updates: [Update]) -> [Int] {
        // Each update is looked at in place, by index: a `for update in updates` or a helper taking an `Update`
        // copied every update's envelope or event (a retain and a release of each of its fields) to read a few of them.
        func isFirstSubmission(_ position: Int) -> Bool {
            guard case .queued(let envelope, _) = updates[position] else { return false }
            return envelope.turn == 0 && envelope.request == nil && envelope.dueAt == nil
        }
        guard updates.count > 1, updates.indices.contains(where: isFirstSubmission) else { return [] }
        var partners = [Int](repeating: -1, count: updates.count)
        // The last update read about each id, in an open-addressing table keyed by the id's FNV-1a hash: a `Dictionary`
        // of strings cost more than the rest of this pass together. A write holds at most a batch of updates, so ids
        // made to collide cost at most a batch's worth of string comparisons.
        var size = 16
        while size < updates.count * 2 { size *= 2 }
        var last = [Int](repeating: -1, count: size)
        for position in updates.indices {
            let id = updates[position].intentID
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in id.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            var slot = Int(truncatingIfNeeded: hash) & (size - 1)
            while last[slot] >= 0, updates[last[slot]].intentID != id { slot = (slot + 1) & (size - 1) }
            // The update before this one about the intent: a first submission merges with an outcome that follows it.
            if last[slot] >= 0, isFirstSubmission(last[slot]), case .queued(let envelope, let submitter) = updates[last[slot]],
                case .event(let event) = updates[position], canMerge(envelope, by: submitter, event)
            {
                partners[last[slot]] = position
            }
            last[slot] = position
        }
        return partners
    }

    /// Whether `event`, right after the first submission `envelope` of an intent the store has no row for, is applied
    /// as a plain outcome: a terminal state of the same type and owner, not a dead letter (whose owner the store
    /// checks); an outcome for another owner clears what the submission recorded (`submittedByAnother`).
    static func canMerge(_ envelope: IntentEnvelope, by submitter: Submitter?, _ event: StatusEvent) -> Bool {
        event.state.isTerminal && event.type == envelope.type && event.refused != true
            && event.response?.code != FailureCode.deadLettered && event.owner == submitter?.user
    }

    /// The row that `envelope`'s `queuedUpsert` followed by `event`'s `eventUpsert` would leave for an id the store
    /// has no row for, in one insert; false (nothing written) when it has one, for the two to be written in turn.
    private func recordQueued(
        _ envelope: IntentEnvelope, by submitter: Submitter?, withOutcome event: StatusEvent, now: Double, in db: Database
    ) throws -> Bool {
        try db.run(
            Self.submissionWithOutcomeInsert,
            [
                .text(envelope.id), .text(envelope.type), .text(event.state.rawValue), .int(event.state.rank),
                .text(Self.storedParameters(envelope)), .real(envelope.submittedAt), .real(now),
                .optional(envelope.group), .optional(Self.storedConfirmed(envelope)),
                .optional(event.owner ?? submitter?.user), .optional(event.response?.code), .optional(event.response?.message),
                .optional(event.response?.payload?.jsonString), .optional(Self.storedResolutions(event)), .optional(event.progress?.fraction),
                .optional(event.progress?.message), .int(max(0, event.attempt)), .optional(event.worker), .optional(event.startedAt),
                .int(max(0, event.turn ?? 0)), .optional(event.view),
            ])
        return db.changes > 0
    }

    /// The `parameters` column of a submission, as both of its writes store it.
    static func storedParameters(_ envelope: IntentEnvelope) -> String { JSONValue.object(envelope.parameters).jsonString }

    /// The `confirmed` column of a submission (nil: none given).
    static func storedConfirmed(_ envelope: IntentEnvelope) -> String? {
        envelope.confirmed.map { JSONValue.array($0.map(JSONValue.string)).jsonString }
    }

    /// The `resolutions` column of an event (nil: none given).
    static func storedResolutions(_ event: StatusEvent) -> String? {
        event.resolutions.map { String(decoding: ParameterResolution.serialized($0), as: UTF8.self) }
    }

    /// A first submission and its outcome as one new row (`recordQueued(_:by:withOutcome:now:in:)`).
    private static let submissionWithOutcomeInsert = """
        INSERT INTO intent_status(id, type, state, rank, parameters, submitted_at, queued_at, updated_at, finished_at, group_id,
            confirmed, owner, response_code, response_message, response_payload, resolutions, progress_fraction, progress_message,
            attempts, worker, started_at, turn, view)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)
        ON CONFLICT(id) DO NOTHING
        """

    private func recordRefusal(_ event: StatusEvent, now: Double, in db: Database) throws {
        try db.run(
            """
            INSERT INTO intent_refusal(id, owner, type, code, message, attempt, at) VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id, owner) DO UPDATE SET type = excluded.type, code = excluded.code, message = excluded.message,
                attempt = excluded.attempt, at = excluded.at
            """,
            [
                .text(event.id), .text(event.owner ?? ""), .text(event.type), .text(event.response?.code ?? FailureCode.invalidIntent),
                .optional(event.response?.message), .int(event.attempt), .real(now),
            ])
    }

    /// The SQL condition "the sender may act on this intent" over bindings
    /// `?n` (1 when anyone may) and `?n+1` (the sender's user).
    static func ownedBy(_ first: Int) -> String {
        "(?\(first) = 1 OR owner IS NULL OR owner = ?\(first + 1))"
    }

    static func ownership(_ submitter: Submitter?) -> [SQLValue] {
        guard let submitter else { return [.int(1), .null] }
        return [.int(submitter.isOperator ? 1 : 0), .optional(submitter.user)]
    }

    /// The upsert of a first submission (built once: the recorder runs it for every intent). A copy of it fills in
    /// what the row lacks, but the first turn's release only while the row is at that turn: past it (an answer cleared
    /// the release), a late copy must not arm the first submission's release again.
    private static let queuedUpsert = """
        INSERT INTO intent_status(id, type, state, rank, parameters, submitted_at, queued_at, updated_at, group_id, confirmed, owner,
            due_at, release_body, release_at)
        VALUES (?1, ?2, ?9, \(StatusStore.queuedRank), ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?10, ?11, ?12)
        ON CONFLICT(id) DO UPDATE SET
            parameters = coalesce(intent_status.parameters, excluded.parameters),
            submitted_at = coalesce(intent_status.submitted_at, excluded.submitted_at),
            queued_at = coalesce(intent_status.queued_at, excluded.queued_at),
            group_id = coalesce(intent_status.group_id, excluded.group_id),
            due_at = coalesce(intent_status.due_at, excluded.due_at),
            release_body = CASE WHEN intent_status.turn = 0 THEN coalesce(intent_status.release_body, excluded.release_body)
                ELSE intent_status.release_body END,
            release_at = CASE WHEN intent_status.turn = 0 THEN coalesce(intent_status.release_at, excluded.release_at)
                ELSE intent_status.release_at END
        WHERE intent_status.type = excluded.type
          AND coalesce(intent_status.owner, '') = coalesce(excluded.owner, '')
        """

    /// Records a submission (or an answer, or a denial); returns whether its write changed the intent's row.
    @discardableResult
    private func recordQueued(_ envelope: IntentEnvelope, by submitter: Submitter?, now: Double, in db: Database) throws -> Bool {
        let owner = submitter?.user
        let confirmed = Self.storedConfirmed(envelope)
        let denial = envelope.request == .deny
        // A denial carries no parameters: the intent keeps the ones it had.
        let parameters: String? = denial ? nil : Self.storedParameters(envelope)
        if envelope.turn > 0 {
            // An answer (or a denial): the waiting intent starts its next turn,
            // with the merged parameters; a worker decides what comes of it.
            // An answer to a question asked ahead of the due time (its type resolves
            // at submission) is scheduled again, to be released as this turn.
            let ahead = Self.isScheduled(envelope)
            try db.run(
                """
                UPDATE intent_status SET state = ?8, rank = \(Self.queuedRank), turn = ?2, parameters = coalesce(?3, parameters),
                    confirmed = coalesce(?4, confirmed),
                    response_code = NULL, response_message = NULL, response_payload = NULL, resolutions = NULL,
                    progress_fraction = NULL, progress_message = NULL, finished_at = NULL, updated_at = ?5,
                    due_at = coalesce(?9, due_at), release_body = ?10, release_at = ?9, released_at = NULL
                WHERE id = ?1 AND turn < ?2 AND state = 'needsInput' AND type = ?11 AND \(Self.ownedBy(6))
                """,
                [.text(envelope.id), .int(envelope.turn), .optional(parameters), .optional(confirmed), .real(now)]
                    + Self.ownership(submitter)
                    + [
                        .text(ahead ? "scheduled" : "queued"), ahead ? .real(envelope.dueAt!) : .null,
                        ahead ? .text(String(decoding: envelope.encoded(), as: UTF8.self)) : .null,
                        .text(envelope.type),
                    ])
            // Not waiting, not this sender's to answer, or an answer under another type (which no worker would take).
            guard db.changes > 0 else { return false }
            let answer = denial ? JSONValue.string("denied").jsonString : JSONValue.object(envelope.answers ?? [:]).jsonString
            try db.run(
                "UPDATE intent_turn SET answer = ?3, answered_at = ?4 WHERE id = ?1 AND turn = ?2 AND answer IS NULL",
                [.text(envelope.id), .int(envelope.turn - 1), .text(answer), .real(now)])
            return true
        }
        // Kept as it was submitted, for the recorder to release to the workers when it is due — even when
        // recorded after that (the recorder lagged): the worker that saw it early acked it, so the release is its run.
        // One already due when it was submitted (for a time just past, or by a clock ahead) is run by the worker that
        // takes it, at once: released, like one a worker keeps, only if it has not begun a grace after it was
        // recorded (its worker's events, read after it, would come too late to stop a release made now, and it
        // would run twice).
        let scheduled = Self.isScheduled(envelope)
        let release = envelope.dueAt.map { due in due <= envelope.submittedAt && due <= now ? now + Self.keptReleaseGrace : due }
        try db.run(
            Self.queuedUpsert,
            [
                .text(envelope.id), .text(envelope.type), .optional(parameters), .real(envelope.submittedAt), .real(now),
                .optional(envelope.group), .optional(confirmed), .optional(owner), .text(scheduled ? "scheduled" : "queued"),
                scheduled ? .real(envelope.dueAt!) : .null, scheduled ? .text(String(decoding: envelope.encoded(), as: UTF8.self)) : .null,
                scheduled ? .optional(release) : .null,
            ])
        return db.changes > 0
    }

    /// A scheduled intent that is due: what the recorder publishes to release it.
    public struct DueIntent: Sendable, Hashable {
        /// The intent's id.
        public var id: String
        /// Its intent type.
        public var type: String
        /// Its owner, which the release names.
        public var owner: String?
        /// When it is due, in seconds since 1970.
        public var dueAt: Double
        /// The envelope as it was submitted.
        public var body: [UInt8]
    }

    /// What may be released: scheduled, or with a cancel requested (which a worker decides on the release,
    /// should no worker have decided it itself), or (over binding ?1, now) a kept one begun, or with a cancel
    /// requested, and not heard of for `keptRunLease` (a cancel of a run begun is moot, and says nothing).
    static let releasable = """
        release_body IS NOT NULL AND released_at IS NULL
            AND (state = 'scheduled' OR (state = 'cancelRequested' AND release_at <= due_at)
                 OR (state IN ('inProgress', 'cancelRequested') AND release_at > due_at AND updated_at <= ?1 - \(keptRunLease)))
        """

    /// Scheduled intents to release by `now` and not yet released, earliest first: those due then, and
    /// those a worker keeps that are `keptReleaseGrace` past due and have not ended, when they were to be
    /// released by `keptBy` (the recorder holds those back until it has been connected for that grace, so
    /// that workers back from an outage have published what they ran meanwhile).
    public func dueIntents(at now: Double = Date().timeIntervalSince1970, keptBy: Double? = nil, limit: Int = 500) throws -> [DueIntent] {
        try database.query(
            """
            SELECT id, type, owner, due_at, release_body FROM intent_status
            WHERE release_at <= ?1 AND (release_at <= due_at OR release_at <= ?3) AND \(Self.releasable)
            ORDER BY release_at LIMIT ?2
            """, [.real(now), .int(limit), .real(keptBy ?? now)]
        ) { row in
            DueIntent(id: row.string(0), type: row.string(1), owner: row.text(2), dueAt: row.double(3), body: Array(row.string(4).utf8))
        }
    }

    /// When the next scheduled intent not yet released is to be released (the next after `after`, when given); nil
    /// when none is.
    public func nextDue(after: Double = -.infinity) throws -> Double? {
        let waiting =
            try database.queryFirst(
                """
                SELECT min(release_at) FROM intent_status
                WHERE release_body IS NOT NULL AND released_at IS NULL AND release_at > ?1
                  AND (state = 'scheduled' OR (state = 'cancelRequested' AND release_at <= due_at))
                """, [.real(after)]
            ) { $0.optionalDouble(0) } ?? nil
        // Kept ones begun (or with a cancel requested): few, found through the release index.
        let begun =
            try database.queryFirst(
                """
                SELECT min(max(release_at, updated_at + \(Self.keptRunLease))) FROM intent_status
                WHERE state IN ('inProgress', 'cancelRequested') AND release_body IS NOT NULL AND released_at IS NULL
                  AND release_at > due_at AND max(release_at, updated_at + \(Self.keptRunLease)) > ?1
                """, [.real(after)]
            ) { $0.optionalDouble(0) } ?? nil
        return [waiting, begun].compactMap { $0 }.min()
    }

    /// The intent a deduplication key stands for: the first submission of
    /// `owner`'s of `type` under `key` within `seconds` names it, and every later
    /// one in that window is told its id (`first` false). Keys past their
    /// window are forgotten, a few at a time.
    public func deduplicate(
        owner: String, type: String, key: String, id: String, seconds: Double, now: Double = Date().timeIntervalSince1970
    ) throws -> (id: String, first: Bool) {
        try database.transaction { db in
            try db.run(
                """
                DELETE FROM intent_dedupe WHERE (owner, type, key) IN
                    (SELECT owner, type, key FROM intent_dedupe WHERE until <= ?1 ORDER BY until LIMIT 100)
                """, [.real(now)])
            if let standing = try db.queryFirst(
                "SELECT id FROM intent_dedupe WHERE owner = ?1 AND type = ?2 AND key = ?3 AND until > ?4",
                [.text(owner), .text(type), .text(key), .real(now)], { $0.string(0) })
            {
                return (standing, false)
            }
            try db.run(
                "INSERT OR REPLACE INTO intent_dedupe(owner, type, key, id, since, until) VALUES (?, ?, ?, ?, ?, ?)",
                [.text(owner), .text(type), .text(key), .text(id), .real(now), .real(now + seconds)])
            return (id, true)
        }
    }

    /// Adds a schedule, or replaces one of the same name and owner; false when the name is another owner's.
    public func addSchedule(_ schedule: Schedule, now: Double = Date().timeIntervalSince1970) throws -> Bool {
        guard schedule.hasCountableTimes else {
            throw StatusQuery.Invalid(description: "a schedule repeats every second or more, from a first due time from 1970 on (at most 10^11 s)")
        }
        let parameters = JSONValue.object(schedule.parameters).jsonString
        guard parameters.utf8.count <= Schedule.maximumParametersBytes else {
            throw StatusQuery.Invalid(
                description: "a schedule's parameters take at most \(Schedule.maximumParametersBytes) bytes as JSON, not \(parameters.utf8.count)")
        }
        return try database.transaction { db in
            if let existing = try db.queryFirst("SELECT owner FROM intent_schedule WHERE name = ?", [.text(schedule.name)], { $0.text(0) }),
                existing != schedule.owner
            {
                return false
            }
            let (others, ownersBytes) =
                try db.queryFirst(
                    """
                    SELECT count(*), coalesce(sum(length(CAST(parameters AS BLOB))), 0) FROM intent_schedule
                    WHERE coalesce(owner, '') = ? AND name != ?
                    """,
                    [.text(schedule.owner ?? ""), .text(schedule.name)]
                ) { ($0.int(0), $0.int(1)) } ?? (0, 0)
            guard others < Schedule.maximumPerOwner else {
                throw StatusQuery.Invalid(description: "an owner keeps at most \(Schedule.maximumPerOwner) schedules: remove one first")
            }
            guard ownersBytes + parameters.utf8.count <= Schedule.maximumParametersBytesPerOwner else {
                throw StatusQuery.Invalid(
                    description:
                        "an owner's schedules take at most \(Schedule.maximumParametersBytesPerOwner >> 10) KiB of parameters in all: theirs take \(ownersBytes) bytes"
                )
            }
            let (all, bytes) =
                try db.queryFirst(
                    """
                    SELECT count(*), coalesce(sum(length(CAST(name || type || coalesce(owner, '') || parameters AS BLOB))), 0) FROM intent_schedule
                    WHERE name != ?
                    """,
                    [.text(schedule.name)]
                ) { ($0.int(0), $0.int(1) + $0.int(0) * Schedule.bytesPerScheduleBesides) } ?? (0, 0)
            let size = (schedule.name + schedule.type + (schedule.owner ?? "") + parameters).utf8.count + Schedule.bytesPerScheduleBesides
            guard all < Schedule.maximumInStore, bytes + size <= Schedule.maximumBytesInStore else {
                throw StatusQuery.Invalid(
                    description:
                        "the store keeps at most \(Schedule.maximumInStore) schedules, of \(Schedule.maximumBytesInStore >> 20) MiB in all (every scheduler reads them in one answer): it holds \(all), of \(bytes) bytes"
                )
            }
            // Active from now, or from its first due time when that was at most `startAllowance` ago (a client that
            // asked for the next whole second may reach the recorder after it). A schedule given again as it was,
            // running, keeps the time it has been active since: the due times a scheduler down meanwhile missed are
            // still caught up on.
            let unchanged =
                try db.queryFirst(
                    """
                    SELECT active_since FROM intent_schedule
                    WHERE name = ?1 AND every = ?2 AND starts = ?3 AND paused = 0 AND ?4 = 0 AND type = ?5 AND parameters = ?6
                    """,
                    [
                        .text(schedule.name), .real(schedule.every), .real(schedule.starts), .int(schedule.paused ? 1 : 0),
                        .text(schedule.type), .text(parameters),
                    ]
                ) { $0.optionalDouble(0) } ?? nil
            let activeSince = unchanged ?? max(now - Schedule.startAllowance, min(now, schedule.starts))
            try db.run(
                """
                INSERT OR REPLACE INTO intent_schedule(name, owner, type, parameters, every, starts, paused, created_at, active_since)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """,
                [
                    .text(schedule.name), .optional(schedule.owner), .text(schedule.type), .text(parameters),
                    .real(schedule.every), .real(schedule.starts), .int(schedule.paused ? 1 : 0), .real(now), .real(activeSince),
                ])
            return true
        }
    }

    /// Pauses or resumes a schedule of `owner`'s (anyone's when nil); false when there is none. A paused schedule
    /// resumed is active from `now`: the due times of its pause are skipped.
    public func setSchedule(_ name: String, paused: Bool, owner: String?, now: Double = Date().timeIntervalSince1970) throws -> Bool {
        try database.transaction { db in
            try db.run(
                """
                UPDATE intent_schedule SET paused = ?2, active_since = CASE WHEN paused != 0 AND ?2 = 0 THEN ?4 ELSE active_since END
                WHERE name = ?1 AND (?3 IS NULL OR owner = ?3)
                """,
                [.text(name), .int(paused ? 1 : 0), .optional(owner), .real(now)])
            return db.changes > 0
        }
    }

    /// Removes a schedule of `owner`'s (anyone's when nil); false when there is none. Its intents stay.
    public func removeSchedule(_ name: String, owner: String?) throws -> Bool {
        try database.transaction { db in
            try db.run("DELETE FROM intent_schedule WHERE name = ?1 AND (?2 IS NULL OR owner = ?2)", [.text(name), .optional(owner)])
            return db.changes > 0
        }
    }

    /// Notes that the broker holds these intents' releases (it confirmed them): they are not published again.
    public func markReleased(_ ids: [String], at now: Double = Date().timeIntervalSince1970) throws {
        guard !ids.isEmpty else { return }
        try database.transaction { db in
            for id in ids {
                try db.run("UPDATE intent_status SET released_at = ?2 WHERE id = ?1 AND released_at IS NULL", [.text(id), .real(now)])
            }
        }
    }

    /// In the event upsert: the row holds a submission recorded from someone other than the owner a worker's event
    /// names (two submitters raced for one id, and the ledger admitted the other; or none is named: the ledger's
    /// intent is an anonymous submitter's).
    static let submittedByAnother = """
        (coalesce(intent_status.owner, '') != coalesce(excluded.owner, '') AND (intent_status.owner IS NOT NULL OR intent_status.submitted_at IS NOT NULL))
        """

    /// The upsert of a status event (built once: the recorder runs it for most of its messages).
    private static let eventUpsert = """
        INSERT INTO intent_status(id, type, state, rank, response_code, response_message, response_payload,
            resolutions, progress_fraction, progress_message, attempts, worker, started_at, updated_at, finished_at, turn, owner, view)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)
        ON CONFLICT(id) DO UPDATE SET
            view = coalesce(excluded.view, intent_status.view),
            owner = CASE WHEN \(StatusStore.submittedByAnother) THEN excluded.owner ELSE coalesce(excluded.owner, intent_status.owner) END,
            -- The submission recorded was another submitter's (the worker's ledger gave the id to the one it names):
            -- none of it is this intent's, nor is it to be shown to its owner or released as theirs.
            parameters = CASE WHEN \(StatusStore.submittedByAnother) THEN NULL ELSE intent_status.parameters END,
            group_id = CASE WHEN \(StatusStore.submittedByAnother) THEN NULL ELSE intent_status.group_id END,
            confirmed = CASE WHEN \(StatusStore.submittedByAnother) THEN NULL ELSE intent_status.confirmed END,
            due_at = CASE WHEN \(StatusStore.submittedByAnother) THEN NULL ELSE intent_status.due_at END,
            release_body = CASE WHEN \(StatusStore.submittedByAnother) THEN NULL ELSE intent_status.release_body END,
            release_at = CASE WHEN \(StatusStore.submittedByAnother) THEN NULL ELSE intent_status.release_at END,
            state = excluded.state,
            turn = max(intent_status.turn, excluded.turn),
            rank = excluded.rank,
            response_code = excluded.response_code,
            response_message = excluded.response_message,
            response_payload = excluded.response_payload,
            resolutions = coalesce(excluded.resolutions, intent_status.resolutions),
            progress_fraction = excluded.progress_fraction,
            progress_message = excluded.progress_message,
            attempts = max(intent_status.attempts, excluded.attempts),
            worker = excluded.worker,
            started_at = coalesce(intent_status.started_at, excluded.started_at),
            updated_at = excluded.updated_at,
            finished_at = excluded.finished_at,
            -- It ran: what was kept to release (a turn a worker ran from its ledger) has nothing left to run.
            released_at = CASE
                WHEN (excluded.rank = \(StatusStore.terminalRank) OR excluded.state = 'needsInput')
                    AND intent_status.release_body IS NOT NULL AND intent_status.released_at IS NULL
                THEN excluded.updated_at ELSE intent_status.released_at END
        WHERE intent_status.type = excluded.type
          AND (coalesce(excluded.response_code, '') != 'deadLettered'
               OR intent_status.owner IS NULL OR intent_status.owner = excluded.owner)
          AND ((intent_status.rank < \(StatusStore.terminalRank)
               AND (excluded.rank = \(StatusStore.terminalRank)
                    -- A cancel is moot while a handler runs: the question that run asks is the state (the cancel, when
                    -- a worker then takes it, is decided against that question, and its outcome follows).
                    OR (intent_status.state = 'cancelRequested' AND excluded.state = 'needsInput' AND excluded.turn >= intent_status.turn)
                    OR (intent_status.state != 'cancelRequested'
                        AND (excluded.turn > intent_status.turn
                             OR (excluded.turn = intent_status.turn
                                 AND (excluded.rank > intent_status.rank
                                      OR (excluded.rank = \(StatusStore.runningRank) AND intent_status.rank = \(StatusStore.runningRank))
                                      OR (excluded.state = 'scheduled' AND intent_status.state = 'scheduled')))))))
           OR (intent_status.response_code = 'deadLettered' AND excluded.rank = \(StatusStore.terminalRank)
               AND coalesce(excluded.response_code, '') != 'deadLettered'))
        """

    /// Records a status event; returns whether it changed the intent's row.
    @discardableResult
    private func recordEvent(_ event: StatusEvent, now: Double, in db: Database) throws -> Bool {
        let resolutions = Self.storedResolutions(event)
        try db.run(
            Self.eventUpsert,
            [
                .text(event.id), .text(event.type), .text(event.state.rawValue), .int(event.state.rank),
                .optional(event.response?.code), .optional(event.response?.message),
                .optional(event.response?.payload?.jsonString), .optional(resolutions),
                .optional(event.progress?.fraction), .optional(event.progress?.message),
                .int(event.attempt), .optional(event.worker),
                event.state == .inProgress ? .real(event.at) : .optional(event.startedAt),
                .real(now), event.state.isTerminal ? .real(now) : .null, .int(event.turn ?? 0), .optional(event.owner),
                .optional(event.view),
            ])
        let applied = db.changes > 0
        if !applied, event.state.isTerminal {
            try recordConflictIfAny(event, now: now, in: db)
        }
        if applied, event.state == .scheduled, event.kept == true, let due = event.dueAt {
            // A worker keeps it and runs it when due: released only if it has not ended a grace after.
            try db.run(
                "UPDATE intent_status SET release_at = ?2 WHERE id = ?1 AND turn = ?3 AND released_at IS NULL",
                [.text(event.id), .real(due + Self.keptReleaseGrace), .int(event.turn ?? 0)])
        }
        if applied, event.state == .needsInput {
            try db.run(
                "INSERT OR REPLACE INTO intent_turn(id, turn, question, asked_at) VALUES (?, ?, ?, ?)",
                [.text(event.id), .int(event.turn ?? 0), .text(resolutions ?? "[]"), .real(now)])
        }
        if let answered = event.answered, let turn = event.turn, turn > 0, event.refused != true, applied || event.state.isTerminal {
            try recordAnswered(answered, of: event, turn: turn, now: now, in: db)
        }
        return applied
    }

    /// The answer that reached the event's outcome, over the one recorded for its turn: two answers to one question
    /// may both have come, and the first recorded is not always the one the ledger took. Applied when the row shows
    /// the event's outcome at the event's turn, and is the event's owner's (an outcome not applied, because another
    /// event of the same outcome came first — the standing outcome published again by the losing answer's run —
    /// still says which answer reached it). An outcome (terminal) is applied at a later turn too: the ledger lets an
    /// answer to an older question decide after another answer's run asked again and the user answered that (the
    /// row moved to the newer turn, with that answer's parameters), and only the run that recorded the outcome says
    /// `answered`, so these are the parameters the intent ran with.
    private func recordAnswered(_ answered: StatusEvent.Answered, of event: StatusEvent, turn: Int, now: Double, in db: Database) throws {
        try db.run(
            """
            UPDATE intent_status SET parameters = coalesce(?3, parameters), confirmed = ?4,
                -- The outcome's own resolutions and view: the row may show an earlier question's, when the standing
                -- outcome published again by another run (with none) was applied first.
                resolutions = CASE WHEN ?9 = 1 THEN coalesce(?10, resolutions) ELSE resolutions END,
                view = CASE WHEN ?9 = 1 THEN coalesce(?11, view) ELSE view END
            WHERE id = ?1 AND (turn = ?2 OR (?9 = 1 AND turn > ?2)) AND type = ?5 AND coalesce(owner, '') = coalesce(?6, '')
              AND state = ?7 AND coalesce(response_code, '') = coalesce(?8, '')
            """,
            [
                .text(event.id), .int(turn), .optional(answered.parameters.map { JSONValue.object($0).jsonString }),
                .optional(answered.confirmed.flatMap { $0.isEmpty ? nil : JSONValue.array($0.map(JSONValue.string)).jsonString }),
                .text(event.type), .optional(event.owner), .text(event.state.rawValue), .optional(event.response?.code),
                .int(event.state.isTerminal ? 1 : 0), .optional(Self.storedResolutions(event)), .optional(event.view),
            ])
        guard db.changes > 0 else { return }
        try db.run(
            "UPDATE intent_turn SET answer = ?3, answered_at = coalesce(answered_at, ?4) WHERE id = ?1 AND turn = ?2",
            [.text(event.id), .int(turn - 1), .text(answered.answer.jsonString), .real(now)])
    }

    /// A terminal event for an intent that already ended differently is not
    /// applied (a terminal state is final) but is kept in `status_conflict`, so
    /// an outcome that would have changed is visible instead of silently dropped.
    /// A dead letter after a recorded outcome is not a conflict: it only means
    /// the acks of that outcome were lost, and the outcome stands.
    private func recordConflictIfAny(_ event: StatusEvent, now: Double, in db: Database) throws {
        try db.run(
            """
            INSERT INTO status_conflict(id, stored_state, stored_code, event_state, event_code, attempt, at)
            SELECT id, state, response_code, ?2, ?3, ?4, ?5 FROM intent_status
            WHERE id = ?1 AND rank = \(Self.terminalRank) AND (state != ?2 OR coalesce(response_code, '') != coalesce(?3, ''))
              AND coalesce(?3, '') != 'deadLettered'
            """,
            [.text(event.id), .text(event.state.rawValue), .optional(event.response?.code), .int(event.attempt), .real(now)])
    }

    /// The intents whose answer at their current turn the broker dead-lettered, still at that turn and unfinished
    /// (queued, or a run of it begun and not heard of since) with nothing heard of them, and the dead letter itself,
    /// for `quietFor` seconds, whose workers were not asked to end the question in the last `resendAfter` seconds:
    /// each is marked asked now. An answer the workers did take after all moved the intent on (a question, an
    /// outcome, a later turn) and is not asked about again; while `quietFor` runs, an operator may requeue the lost
    /// answer, which clears the mark.
    public func turnsToAbandon(
        quietFor: Double, resendAfter: Double, limit: Int = 1_000, now: Double = Date().timeIntervalSince1970
    ) throws -> [UnansweredQuestion] {
        try database.transaction { db in
            // An intent that ended leaves the lost answers' index here, not in the event upsert every event runs.
            try db.run("UPDATE intent_status SET abandon_turn = NULL WHERE abandon_turn IS NOT NULL AND rank = \(Self.terminalRank)")
            let turns = try db.query(
                """
                SELECT id, type, turn FROM intent_status
                WHERE abandon_turn IS NOT NULL AND abandon_turn = turn AND state IN ('queued', 'scheduled', 'inProgress')
                  AND updated_at < ?1 - ?4 AND coalesce(abandon_marked_at, 0) < ?1 - ?4 AND coalesce(abandon_requested_at, 0) < ?1 - ?2
                LIMIT ?3
                """, [.real(now), .real(resendAfter), .int(limit), .real(quietFor)]
            ) { row in
                UnansweredQuestion(id: row.string(0), type: row.string(1), turn: row.int(2) - 1)
            }
            for turn in turns {
                try db.run("UPDATE intent_status SET abandon_requested_at = ? WHERE id = ?", [.real(now), .text(turn.id)])
            }
            return turns
        }
    }

    /// A question that went unanswered too long, or whose answer was lost: the recorder asks a worker to end it
    /// (the intent's turn + 1 is the request's turn).
    public struct UnansweredQuestion: Sendable, Hashable {
        /// The intent waiting for an answer.
        public var id: String
        /// Its intent type: where the expire request is routed.
        public var type: String
        /// The turn at which the question was asked.
        public var turn: Int
    }

    /// The questions unanswered for longer than `seconds`, at most `limit`,
    /// marked as asked to expire so the next sweep asks again only after
    /// `resendAfter` seconds (in case the request was lost). The store itself
    /// does not change their state: a worker decides the expiry, atomically
    /// with the intent's effects, so an answer that got there first wins.
    public func questionsToExpire(
        olderThan seconds: Double, resendAfter: Double, limit: Int = 1_000, now: Double = Date().timeIntervalSince1970
    ) throws -> [UnansweredQuestion] {
        return try database.transaction { db in
            let questions = try db.query(Self.expiryQuery, [.real(now), .real(seconds), .real(resendAfter), .int(limit)]) { row in
                UnansweredQuestion(id: row.string(0), type: row.string(1), turn: row.int(2))
            }
            for question in questions {
                try db.run("UPDATE intent_status SET expire_requested_at = ? WHERE id = ?", [.real(now), .text(question.id)])
            }
            return questions
        }
    }

    /// Where retention's next look into the time index starts (`deleteFinished`): every intent updated before it
    /// that had finished was removed, and what is left there has not finished. An intent that finishes later is
    /// updated then, at a time past it, so it is found from here; the unfinished ones left behind (questions
    /// waiting, intents scheduled far ahead) are not read again each round.
    private var retentionSeenTo = -Double.greatestFiniteMagnitude

    /// The finished intents updated in `[?1, ?2)`, outcomes before `?2`, oldest first: looked up in the time index,
    /// whose entries hold the state, so an unfinished intent's row is not read.
    static let retentionQuery = """
        SELECT id, updated_at FROM intent_status
        WHERE updated_at >= ?1 AND updated_at < ?2 AND state IN ('success', 'failure', 'canceled') AND finished_at < ?2
        ORDER BY updated_at LIMIT ?3
        """

    /// Retention: removes up to `limit` intents that ended before `cutoff`
    /// (seconds since 1970), oldest first, with their history; returns how many.
    /// Small batches keep each transaction, and the recorder's pause, short.
    /// An intent's outcome is its last update (a finished intent is updated
    /// again only by an outcome that replaces a dead letter, or a requeue of
    /// one, and then at that time), so those ended before the cutoff are those
    /// updated before it with a terminal state. The rounds of one store take
    /// the writes' clock: every write after a round is at or past its cutoff
    /// (the recorder's cutoff is its clock less the retention).
    public func deleteFinished(before cutoff: Double, limit: Int = 500) throws -> Int {
        guard limit > 0 else { return 0 }
        let found = try database.query(Self.retentionQuery, [.real(retentionSeenTo), .real(cutoff), .int(limit)]) { row in
            (id: row.string(0), updatedAt: row.double(1))
        }
        let removed = found.isEmpty ? 0 : try delete(ids: found.map(\.id))
        // Fewer than asked for: every finished intent updated before the cutoff was found. As many: every one updated
        // before the last one found (others updated at that same time may be left: the next round starts at it).
        retentionSeenTo = found.count < limit ? cutoff : found[found.count - 1].updatedAt
        // Every round, at most `limit` of each (under a steady load there are always finished intents to remove, and
        // these were once pruned only by a round that found none).
        try database.transaction { db in
            try db.run(
                "DELETE FROM status_conflict WHERE rowid IN (SELECT rowid FROM status_conflict WHERE at < ?1 LIMIT ?2)",
                [.real(cutoff), .int(limit)])
            try db.run(
                "DELETE FROM intent_refusal WHERE (id, owner) IN (SELECT id, owner FROM intent_refusal WHERE at < ?1 LIMIT ?2)",
                [.real(cutoff), .int(limit)])
        }
        return removed
    }

    /// Removes stored interactions (status and history), unfinished ones too: these ids, or a group's, or (both nil)
    /// all; with `owner`, only that owner's. Returns how many intents went. (Clients' deletes keep unfinished intents
    /// unless asked: see `delete(ids:group:owner:unfinished:)`.)
    public func delete(ids: [String]? = nil, group: String? = nil, owner: String? = nil) throws -> Int {
        try delete(ids: ids, group: group, owner: owner, unfinished: true).deleted
    }

    /// What a delete removed, and the unfinished intents it kept.
    public struct Deletion: Sendable, Hashable {
        /// How many intents went.
        public var deleted: Int
        /// How many of those chosen were kept because they have not finished.
        public var keptUnfinished: Int

        /// `deleted` intents removed, `keptUnfinished` kept (none, by default: a delete of unfinished ones too).
        public init(deleted: Int, keptUnfinished: Int = 0) {
            self.deleted = deleted
            self.keptUnfinished = keptUnfinished
        }

        /// `{"deleted":n}`, with `"kept":m` when some were kept: the recorder's answer, and `intent-status delete --json`.
        public var jsonValue: JSONValue {
            var object: [String: JSONValue] = ["deleted": .number(Double(deleted))]
            if keptUnfinished > 0 { object["kept"] = .number(Double(keptUnfinished)) }
            return .object(object)
        }
    }

    /// `delete`, of finished intents only unless `unfinished`. An unfinished intent's row is what the recorder
    /// releases a scheduled intent from, expires a question from, and shows its outcome in: removed, a scheduled
    /// intent no worker kept would never run, a question would never expire, and the intent's next event would
    /// bring back a row without its submission. Those are for `cancel`, and removed only when asked for.
    public func delete(ids: [String]? = nil, group: String? = nil, owner: String? = nil, unfinished: Bool) throws -> Deletion {
        try database.transaction { db in
            var removed = 0
            var kept = 0
            func remove(_ filters: KeyValuePairs<String, String?>) throws {
                if !unfinished {
                    let left = StatusReader.filter(filters, also: "finished_at IS NULL")
                    kept += try db.queryFirst("SELECT count(*) FROM intent_status \(left.sql)", left.bindings) { $0.int(0) } ?? 0
                }
                let these = StatusReader.filter(filters, also: unfinished ? nil : "finished_at IS NOT NULL")
                try db.run("DELETE FROM intent_turn WHERE id IN (SELECT id FROM intent_status \(these.sql))", these.bindings)
                try db.run("DELETE FROM intent_status \(these.sql)", these.bindings)
                removed += db.changes
            }
            if let ids {
                // Each once: an unfinished id named twice is one intent kept.
                var seen = Set<String>()
                for id in ids where seen.insert(id).inserted { try remove(["id": id, "owner": owner]) }
            } else {
                try remove(["group_id": group, "owner": owner])
            }
            return Deletion(deleted: removed, keptUnfinished: kept)
        }
    }
}
