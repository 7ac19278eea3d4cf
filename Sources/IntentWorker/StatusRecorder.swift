import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization

/// The status store's only writer. It consumes the ledger queue on its own
/// thread, which owns both the AMQP connection and the SQLite connection, and
/// writes what it reads in batches: one `BEGIN IMMEDIATE` transaction per batch,
/// visible at once, and one `multiple` ack for everything written once a commit
/// has synced it to disk (at most `syncInterval` later).
///
/// The same thread answers remote status queries (`intent-status --remote`)
/// from a non-durable request queue, removes finished intents past their
/// retention in small batches, and counts the state changes it applies.
public final class StatusRecorder: Service {
    /// What the recorder connects to, where it writes, and how it batches, expires and keeps intents.
    public struct Configuration: Sendable {
        /// The broker whose ledger queue the recorder consumes and whose status requests it answers.
        public var brokerURL: BrokerURL
        /// The exchanges and queues to declare and use: the same as the workers'.
        public var topology: Topology
        /// The status store's SQLite file, which only the recorder writes; its folder is created when missing.
        public var storePath: String
        /// Most events written in one transaction.
        public var batchSize: Int
        /// Seconds; heartbeats keep the broker connection alive and detect a dead one.
        public var heartbeat: Int
        /// A `needsInput` question unanswered this long (seconds) is expired: the
        /// recorder asks a worker, which fails it with `expired` unless an answer came first.
        public var questionTimeToLive: Double = 86_400
        /// How long an intent whose answer the broker dead-lettered stays as it is, with nothing heard of it, before
        /// the workers are asked to end its question (`failure/deadLettered`): time for an operator to requeue the
        /// answer once its cause is mended, and for a copy of it still in a retry queue to be taken.
        public var lostAnswerGrace: Double = 300
        /// Finished intents older than this (seconds) are removed; nil keeps them forever.
        public var retention: Double? = 7 * 86_400
        /// Intents removed per retention transaction.
        public var retentionBatch = 500
        /// Seconds a recorded batch may wait for a commit that syncs it (and the batches before it) to
        /// disk. A batch is visible in the store as soon as it is written; it is acked, and so could not
        /// be lost with the machine's power, only once synced. One fsync per this interval at a moderate
        /// load instead of one per batch.
        public var syncInterval = 0.02
        /// Seconds a submission waits, unwritten, for its intent's next update, so that an intent whose outcome
        /// follows within it is written once (`queued` and the outcome in one transaction) instead of twice. The
        /// submission is in the store after at most this long, or with the outcome, or before the recorder answers a
        /// status request or stops; it is acked only once written and synced, like any delivery. 0 writes each at once.
        public var submissionHold = 0.02
        /// Where applied state changes are counted, when metrics are on.
        public var metrics: Metrics?
        /// The broker users whose status events count: the workers' (and the
        /// recorder's own, always). An event from anyone else is skipped.
        public var trustedPublishers: Set<String> = []
        /// Broker users who may read every intent remotely and act on any.
        public var operators: Set<String> = []
        /// The share of the recorder's time one user's remote status queries may take, in seconds of answering a
        /// second, and up to eight seconds' worth at once (2 s at the default); past it, the user is told the recorder
        /// is busy with their queries. Operators and trusted users (workers, schedulers) are not counted. nil: no limit.
        public var queryShare: Double? = 0.25
        /// The intent types metrics name; others are counted as `other` (nil:
        /// any, up to `Metrics.maximumSeriesPerFamily` label sets).
        public var knownTypes: Set<String>?
        /// Called on the recorder's thread with each batch once it is written and visible in the store (before the
        /// commit that syncs it): for instruments, such as intent-bench timing when an outcome reached the store.
        /// The recorder waits for it, so it should return quickly.
        public var written: (@Sendable ([StatusStore.Update]) -> Void)?

        /// A recorder of the store at `storePath`, writing at most `batchSize` events (at least 1) per transaction.
        public init(brokerURL: BrokerURL, topology: Topology = Topology(), storePath: String, batchSize: Int = 500, heartbeat: Int = 30) {
            self.brokerURL = brokerURL
            self.topology = topology
            self.storePath = storePath
            self.batchSize = max(1, batchSize)
            self.heartbeat = heartbeat
        }
    }

    private let configuration: Configuration
    /// The trusted publishers and the broker URL's own users, as one set made once (see `isTrusted`).
    private let trustedUsers: Set<String>
    private let logger: Logger
    private let stopping = StopRequest()
    private let tallies = SlowAnswers()
    /// Each user's share of the time queries take (nil: no limit).
    private let queryBudget: QueryBudget?

    /// A recorder with these settings; nothing is opened or connected until `run()`.
    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.queryBudget = configuration.queryShare.map { QueryBudget(share: $0, burst: 8 * $0) }
        self.trustedUsers = configuration.trustedPublishers.union(configuration.brokerURL.users)
        self.logger = logger.with(["component": "recorder"])
    }

    /// Opens the store, then records events and answers status requests on a thread of its own, reconnecting to
    /// the broker when it must, until `stop()`; writes what it holds before returning. Throws when the store cannot be opened.
    public func run() async throws {
        try await runOnThread(named: "iq-recorder") { [self] in try runThread() }
    }

    /// Asks the recorder to write its last batch and return from `run()`; returns at once.
    public func stop() {
        stopping.request()
    }

    private var isStopping: Bool { stopping.isRequested }

    private func runThread() throws {
        let store: StatusStore
        do {
            store = try StatusStore(path: configuration.storePath)
        } catch {
            logger.error("cannot open the status store: \(error)", metadata: ["store.path": configuration.storePath])
            throw error
        }
        logger.info("recording to \(configuration.storePath)")
        var requestConsumer = ""
        ReconnectLoop.run(
            url: configuration.brokerURL, logger: logger, isStopping: { isStopping }, pause: stopping.pause,
            connect: { generation in
                let connection = try AMQPConnection(url: configuration.brokerURL, heartbeat: configuration.heartbeat, generation: generation)
                try configuration.topology.declareLedger(on: connection)
                // Confirms: a scheduled intent counts as released once the broker holds its release.
                try connection.enableConfirms()
                try connection.setPrefetch(UInt16(clamping: configuration.batchSize * 2))
                try connection.consume(configuration.topology.ledgerQueue)
                // Remote status requests: a queue that goes away with the recorder, so a
                // request with nobody to answer it comes back to its sender at once.
                try configuration.topology.declareStatusRequests(on: connection)
                requestConsumer = try connection.consume(configuration.topology.statusRequestQueue, noAck: true)
                return connection
            },
            serve: { connection in try record(from: connection, into: store, requestConsumer: requestConsumer) },
            // One connection, which releases scheduled intents when due: back within a second of the broker.
            longestPause: 1)
        store.database.close()
        logger.info("recorder stopped")
    }

    private func record(from connection: AMQPConnection, into store: StatusStore, requestConsumer: String) throws {
        var batch: [SubmissionHold.Read] = []
        // Submissions waiting for their intent's next update (`Configuration.submissionHold`).
        var hold = SubmissionHold()
        var lastTag: UInt64 = 0
        // Deliveries up to `takenTag` are written or held, those up to `recordedTag` written to the store, those
        // up to `ackedTag` durably so and acked.
        var takenTag: UInt64 = 0
        var recordedTag: UInt64 = 0
        var ackedTag: UInt64 = 0
        // When what is written but not yet durable must be synced (nil: nothing waits).
        var syncDue: Date?
        let intentsExchange = configuration.topology.intentsExchange

        // While the store refuses writes (a full disk, an I/O error), the batch
        // is kept, unacked, and written again after a growing pause; the broker
        // holds the rest (prefetch bounds what is read ahead).
        var storeBackoff = ReconnectBackoff(initial: 0.2, maximum: 10)
        var storeRetryAt: Date?
        var storeFailures = 0

        // Scheduled intents: when the next is due (nil: none), and the releases the broker has not confirmed yet.
        // A sweep at once: what came due while the recorder was away is released first.
        var nextRelease: Double? = Date().timeIntervalSince1970
        // Kept intents (a worker runs them when due) are released as a fallback only once this connection
        // has been up for the grace: workers back from an outage publish what they ran meanwhile first.
        let connectedAt = Date().timeIntervalSince1970
        var batchDue: Double?
        var releasing: [(sequence: UInt64, id: String)] = []
        var releasingIDs = Set<String>()
        // Releases that came back (no worker serves the type), not tried again before the time given.
        var heldBack: [String: Double] = [:]
        // Said once a minute, naming the types: every 5 s, each of thousands of due intents of a type no longer served
        // comes back.
        let unservedNotice = RateLimitedNotice(interval: 60)
        var unservedTypes = Set<String>()
        // When the due intents were last read: a confirm asks for another reading, at most every 50 ms.
        var lastRound = 0.0

        func releaseDue() throws {
            let now = Date().timeIntervalSince1970
            lastRound = now
            heldBack = heldBack.filter { $0.value > now }
            let due: [StatusStore.DueIntent]
            do {
                let keptBy = now - connectedAt >= StatusStore.keptReleaseGrace ? now + 0.001 : 0
                due = try store.dueIntents(at: now + 0.001, keptBy: keptBy, limit: 500 + releasingIDs.count + heldBack.count)
                    .filter { !releasingIDs.contains($0.id) && heldBack[$0.id] == nil }
                for intent in due {
                    var headers: [String: HeaderValue] = [Topology.releasedHeader: .string(JSONValue.formatNumber(intent.dueAt))]
                    // An anonymous submitter's intent is released as no one's: not as the recorder's own.
                    Topology.name(owner: intent.owner, trusted: false, in: &headers)
                    let sequence = try connection.publish(
                        OutgoingMessage(
                            exchange: intentsExchange, routingKey: (try? IntentEnvelope.decode(intent.body))?.routingKey ?? intent.type,
                            body: intent.body, messageID: intent.id, type: intent.type,
                            userID: connection.url.user, persistent: true, mandatory: true, headers: headers))
                    releasing.append((sequence, intent.id))
                    releasingIDs.insert(intent.id)
                }
                if !due.isEmpty { logger.info("released \(due.count) scheduled intents that are due") }
                let next = try store.nextDue()
                if let next, next <= now, due.isEmpty {
                    // All that is due waits for its confirm (which settles it), is held back (no worker serves its
                    // type: tried again at its time) or kept within its grace: not read again every 50 ms, but when
                    // the next intent comes due, or in a second.
                    nextRelease = min(now + 1, try store.nextDue(after: now) ?? .infinity)
                } else {
                    // More may be due past this round's limit: looked at again shortly.
                    nextRelease = next.map { $0 <= now ? now + 0.05 : $0 }
                }
                if let held = heldBack.values.min() { nextRelease = min(nextRelease ?? held, held) }
            } catch let error as DatabaseError {
                logger.debug("releasing scheduled intents skipped this round: \(error)")
                nextRelease = now + 1
            }
        }

        /// The broker confirmed (or refused) releases up to `sequence`.
        func settleReleases(through sequence: UInt64, multiple: Bool, refused: Bool) {
            var settled: [String] = []
            releasing.removeAll { release in
                guard multiple ? release.sequence <= sequence : release.sequence == sequence else { return false }
                releasingIDs.remove(release.id)
                if !refused && heldBack[release.id] == nil { settled.append(release.id) }
                return true
            }
            let now = Date().timeIntervalSince1970
            if refused { nextRelease = now + 1 }
            do {
                try store.markReleased(settled)
                // Settled, they are no longer due: the next due time is the store's to say now (but not more often
                // than every 50 ms, however many confirms come).
                if !settled.isEmpty { nextRelease = min(nextRelease ?? .infinity, max(now, lastRound + 0.05)) }
            } catch {
                // Not marked: released again later, which the workers' ledgers make harmless; not at once.
                logger.warning("cannot note \(settled.count) scheduled intents as released: \(error)")
                nextRelease = now + 1
            }
        }

        /// The store refused a write: it is tried again after a growing pause. Said at once, then every
        /// tenth attempt: a disk full for an hour is one line a minute or so.
        func storeFailed(_ error: DatabaseError, holding what: String) {
            let wait = storeBackoff.next()
            storeRetryAt = Date().addingTimeInterval(wait)
            storeFailures += 1
            if storeFailures == 1 || storeFailures % 10 == 0 {
                logger.warning(
                    "status store unavailable\(error.isDiskFull ? " (disk full)" : ""): holding \(what) them again in \(String(format: "%.1f", wait)) s: \(error)",
                    metadata: ["store.path": configuration.storePath, "store.attempts": "\(storeFailures)"])
            }
        }

        /// A write went through: recording resumes at full pace.
        func storeWorks() {
            if storeFailures > 0 {
                logger.notice(
                    "status store writable again after \(storeFailures) failed attempts; recording resumes",
                    metadata: ["store.path": configuration.storePath])
            }
            storeFailures = 0
            storeRetryAt = nil
            storeBackoff.reset()
        }

        /// Writes the open batch, visible at once, less the submissions held for their outcome (with the held ones
        /// that are due or about an intent of the batch; with `sync` or `all`, every one); acks what was written once a
        /// commit has made it durable: the first commit after `syncInterval` (or after half the prefetch), a sync of
        /// its own when no batch comes by then, or at once with `sync`.
        func flush(sync: Bool = false, all: Bool = false) throws {
            guard lastTag > ackedTag else { return }
            if let retryAt = storeRetryAt, Date() < retryAt { return }
            let durable = sync || syncDue.map { Date() >= $0 } ?? false || lastTag &- ackedTag >= UInt64(configuration.batchSize)
            // Taken from a copy, kept only once the write went through: a refused write leaves batch and hold as they were.
            var holding = hold
            let writing = holding.take(
                batch, now: Date().timeIntervalSince1970, hold: configuration.submissionHold, limit: max(1, configuration.batchSize / 4),
                all: sync || all)
            if writing.isEmpty {
                // Deliveries that change nothing (skipped events), or held, have nothing to write; what was written may need its sync.
                hold = holding
                batch.removeAll(keepingCapacity: true)
                takenTag = lastTag
                recordedTag = hold.writtenThrough(lastTag)
                guard durable else {
                    // Acked with the next sync, like a write: a delivery that recorded nothing does not wait, unacked,
                    // for the next one (on an idle system, for the broker's consumer timeout).
                    if recordedTag > ackedTag, syncDue == nil { syncDue = Date().addingTimeInterval(configuration.syncInterval) }
                    return
                }
                guard recordedTag > ackedTag else {
                    // Nothing more to ack before the oldest held submission: its write asks for the next sync.
                    syncDue = nil
                    return
                }
                do {
                    try store.syncLog()
                } catch let error as DatabaseError {
                    storeFailed(error, holding: "\(lastTag &- ackedTag) recorded events unacked until they are synced, syncing")
                    return
                }
                storeWorks()
                try connection.ack(recordedTag, multiple: true)
                ackedTag = recordedTag
                syncDue = nil
                return
            }
            let updates = writing.map(\.update)
            // The updates whose outcome the recorder decides itself (dead letters), by their place in the write.
            let decided = Set(writing.indices.filter { writing[$0].decided })
            let transitions: [StatusStore.Transition]
            do {
                transitions = try store.record(
                    updates, reportingTransitions: configuration.metrics != nil || !decided.isEmpty, durable: durable)
            } catch let error as DatabaseError {
                storeFailed(error, holding: "\(batch.count + hold.count) events unacked and writing")
                return
            }
            storeWorks()
            hold = holding
            batch.removeAll(keepingCapacity: true)
            configuration.written?(updates)
            count(transitions)
            takenTag = lastTag
            recordedTag = hold.writtenThrough(lastTag)
            if durable {
                if recordedTag > ackedTag {
                    try connection.ack(recordedTag, multiple: true)
                    ackedTag = recordedTag
                }
                syncDue = nil
            } else if syncDue == nil {
                syncDue = Date().addingTimeInterval(configuration.syncInterval)
            }
            if let due = batchDue {
                nextRelease = min(nextRelease ?? due, due)
                batchDue = nil
            }
            if !decided.isEmpty {
                try announce(transitions.filter { decided.contains($0.update) }, on: connection)
            }
        }

        var nextSweep = Date()
        var nextAbandonSweep = Date()
        var nextRetention = Date()
        while !isStopping {
            if Date() >= nextSweep {
                nextSweep = Date().addingTimeInterval(min(30, max(0.5, configuration.questionTimeToLive / 4)))
                try requestExpiries(from: store, on: connection)
            }
            if Date() >= nextAbandonSweep {
                nextAbandonSweep = Date().addingTimeInterval(1)
                try requestAbandons(from: store, on: connection)
            }
            if let retention = configuration.retention, Date() >= nextRetention, storeRetryAt == nil {
                // One small batch at a time between batches of events: a backlog is
                // worked off within seconds without pausing the recording.
                var removed = 0
                do {
                    removed = try store.deleteFinished(
                        before: Date().timeIntervalSince1970 - retention, limit: configuration.retentionBatch)
                } catch let error as DatabaseError {
                    logger.debug("retention skipped this round: \(error)")
                }
                if removed > 0 {
                    configuration.metrics?.increment("intentqueue_store_deleted_total", by: Double(removed))
                    logger.debug("retention removed \(removed) finished intents")
                }
                nextRetention = Date().addingTimeInterval(removed >= configuration.retentionBatch ? 0.05 : min(10, max(0.2, retention / 10)))
            }
            if let next = nextRelease, Date().timeIntervalSince1970 >= next, storeRetryAt == nil {
                try releaseDue()
            }
            // An open batch is written as soon as nothing more is waiting to be read: under load it
            // holds what came while the last one was written, and an event that comes alone is written
            // at once. (Waiting 1 ms of quiet for more, as it was meant to until rabbitmq-c's waits were
            // measured, cost 1-3 ms of p50 at 1,000 intents/s and saved no CPU that a run could tell apart.)
            var waiting: Double
            if let retryAt = storeRetryAt {
                waiting = max(0.001, min(0.25, retryAt.timeIntervalSinceNow))
            } else if lastTag == takenTag {
                waiting = syncDue.map { max(0, min(0.25, $0.timeIntervalSinceNow)) } ?? 0.25
                if let release = hold.nextRelease { waiting = max(0, min(waiting, release - Date().timeIntervalSince1970)) }
            } else {
                waiting = 0
            }
            if let next = nextRelease, storeRetryAt == nil { waiting = max(0, min(waiting, next - Date().timeIntervalSince1970)) }
            // Nothing more waiting is the usual answer at a light load, after every message: one `poll` says so,
            // where a read that finds nothing costs a `recv` and a `poll`. (A wait that is not 0 goes into rabbitmq-c,
            // which sends and checks heartbeats there.)
            if waiting == 0, !connection.hasBufferedData, !connection.socketIsReadable {
                try flush()
                continue
            }
            let event = try connection.nextEvent(timeout: waiting)
            guard let event else {
                try flush()
                continue
            }
            switch event {
            case .delivery(let delivery):
                if delivery.consumerTag == requestConsumer {
                    // Only what came through the request exchange is a request: a producer may bind the queue to its
                    // own status events (its permissions name the exchange, and so the queue of the same name), and
                    // each would otherwise cost a flush and a warning.
                    guard delivery.exchange == configuration.topology.statusRequestExchange else { continue }
                    // Only to a direct reply-to address: an answer routed to any other queue (intents.work, say)
                    // would be a message put where it does not belong.
                    guard let replyTo = delivery.replyTo, replyTo.hasPrefix(Topology.directReplyTo) else {
                        logger.warning(
                            "ignoring a status request without a direct reply-to address", metadata: ["amqp.reply_to": delivery.replyTo ?? ""])
                        continue
                    }
                    let query = Result { () throws(StatusQuery.Invalid) in try StatusQuery.decode(delivery.body) }
                    let counted = (try? query.get()).flatMap { budget(for: $0, from: delivery.userID) }
                    do {
                        // A user past their share is told so before anything is written for the request.
                        try counted?.admit(delivery.userID ?? "", now: ProcessInfo.processInfo.systemUptime)
                    } catch {
                        try reply(.failure(error), to: delivery, at: replyTo, on: connection)
                        continue
                    }
                    // What was read so far is written first, held submissions too, so the answer is at least as new
                    // as the request.
                    try flush(all: true)
                    // A store that refuses writes (a full disk, say) kept what was read from being written: an answer
                    // from it may say "unknown" of a submission the broker confirmed. It says the store is behind instead.
                    let unwritten = storeRetryAt == nil ? 0 : batch.count + hold.count
                    let started = ProcessInfo.processInfo.systemUptime
                    let result = answer(query, of: delivery.userID, from: store, unwritten: unwritten)
                    try reply(result, to: delivery, at: replyTo, on: connection, charging: counted, since: started)
                    continue
                }
                let previous = lastTag
                lastTag = delivery.tag.value
                if let update = update(from: delivery, intentsExchange: intentsExchange) {
                    if case .queued(let envelope, _) = update, let due = envelope.dueAt {
                        batchDue = min(batchDue ?? due, due)
                    }
                    let decided: Bool
                    if case .event = update, delivery.exchange == configuration.topology.deadLetterExchange {
                        decided = true
                    } else {
                        decided = false
                    }
                    batch.append(SubmissionHold.Read(update: update, tag: delivery.tag.value, previous: previous, decided: decided))
                }
                if batch.count >= configuration.batchSize { try flush() }
            case .returned(let message) where message.exchange == intentsExchange && releasingIDs.contains(message.messageID ?? ""):
                // No worker serves its type now: it stays scheduled, and is released again in a few seconds.
                heldBack[message.messageID ?? ""] = Date().timeIntervalSince1970 + 5
                unservedTypes.insert(message.routingKey)
                unservedNotice.note { kept in
                    logger.warning(
                        "no worker serves \(unservedTypes.sorted().joined(separator: ", ")): scheduled intents that are due wait for one"
                            + (kept > 0 ? " (\(kept) more such returns in the last minute, not logged)" : ""),
                        metadata: ["intent.id": message.messageID ?? "", "intent.type": message.routingKey])
                    unservedTypes = []
                }
            case .returned(let message) where message.exchange == intentsExchange:
                // An expiry, or a lost answer's request, nobody serves: the question stays open and is asked about again later.
                logger.warning(
                    "no worker serves \(message.routingKey): a question the recorder asked to end stays open for now",
                    metadata: ["intent.id": message.messageID ?? "", "intent.type": message.routingKey])
            case .returned(let message):
                logger.debug("an announcement found no queue: \(message.replyText)", metadata: ["intent.id": message.messageID ?? ""])
            case .confirmed(let sequence, let multiple):
                settleReleases(through: sequence, multiple: multiple, refused: false)
            case .rejected(let sequence, let multiple):
                settleReleases(through: sequence, multiple: multiple, refused: true)
            }
        }
        try flush(sync: true)
    }

    /// Asks the workers to expire the questions unanswered past their time to
    /// live. The worker that takes a request decides it in the intent's
    /// ledger: an answer that was handled first wins, and the store hears the
    /// outcome from the worker, like any other.
    private func requestExpiries(from store: StatusStore, on connection: AMQPConnection) throws {
        let ttl = configuration.questionTimeToLive
        let questions: [StatusStore.UnansweredQuestion]
        do {
            questions = try store.questionsToExpire(olderThan: ttl, resendAfter: max(1, min(ttl, 60)))
        } catch let error as DatabaseError {
            logger.debug("question expiry skipped this round: \(error)")
            return
        }
        guard !questions.isEmpty else { return }
        logger.info("asking workers to expire \(questions.count) unanswered questions")
        for question in questions {
            try publishRequest(.expire, about: question, on: connection)
        }
    }

    /// Publishes the recorder's own request about `question` (at the turn after it), as its own trusted user.
    private func publishRequest(_ kind: IntentRequest, about question: StatusStore.UnansweredQuestion, on connection: AMQPConnection) throws {
        let topology = configuration.topology
        let request = IntentEnvelope.request(kind, id: question.id, type: question.type, turn: question.turn + 1)
        try connection.publish(
            OutgoingMessage(
                exchange: topology.intentsExchange, routingKey: question.type, body: request.encoded(),
                messageID: question.id, type: question.type, userID: connection.url.user, persistent: true, mandatory: true))
    }

    /// Asks the workers to end the questions whose answers the broker dead-lettered, once `lostAnswerGrace` has
    /// passed with nothing heard of the intent (`StatusStore.turnsToAbandon`), again every minute while nothing moves
    /// it: decided in the intent's ledger, where an answer taken after all (or anything else that moved the intent
    /// on) wins, and the store hears the outcome from the worker.
    private func requestAbandons(from store: StatusStore, on connection: AMQPConnection) throws {
        let turns: [StatusStore.UnansweredQuestion]
        do {
            turns = try store.turnsToAbandon(quietFor: configuration.lostAnswerGrace, resendAfter: 60)
        } catch let error as DatabaseError {
            logger.debug("lost answers not looked at this round: \(error)")
            return
        }
        for question in turns {
            try publishRequest(.abandon, about: question, on: connection)
        }
    }

    /// The answer to one remote status query of `user`'s.
    private func answer(
        _ query: Result<StatusQuery, StatusQuery.Invalid>, of user: String?, from store: StatusStore, unwritten: Int
    ) -> Result<StatusQuery.Answer, any Error> {
        do {
            let query = try query.get()
            guard unwritten == 0 else {
                throw StatusStoreBehind(
                    description: "the status store cannot be written now: \(unwritten) recorded updates wait for it; try again later")
            }
            // The broker verified the requester's user: others' intents are not theirs to read. The recorder's own user
            // acts as an operator here, as it does everywhere else in the recorder; a scheduler (a worker's user,
            // trusted) reads every schedule, to submit their intents as their owners'.
            let schedulerReads = query == .schedules && isTrusted(user)
            let reader = StatusQuery.Reader(user: user, isOperator: isOperator(user) || schedulerReads)
            if query == .tally {
                return .success(try tallies.answer(for: reader) { try query.answer(from: store.reader, writer: store, for: reader) })
            }
            return .success(try query.answer(from: store.reader, writer: store, for: reader))
        } catch {
            return .failure(error)
        }
    }

    /// Publishes `result` to the request's direct reply-to address; with `charging`, the time since `started` (the
    /// answer and its encoding) is taken from the requester's share.
    private func reply(
        _ result: Result<StatusQuery.Answer, any Error>, to request: Delivery, at replyTo: String, on connection: AMQPConnection,
        charging counted: QueryBudget? = nil, since started: Double = 0
    ) throws {
        let body = StatusQuery.reply(result)
        if let counted {
            let now = ProcessInfo.processInfo.systemUptime
            counted.charge(request.userID ?? "", seconds: now - started, now: now)
        }
        try connection.publish(
            OutgoingMessage(exchange: "", routingKey: replyTo, body: body, persistent: false, correlationID: request.correlationID))
    }

    /// Whether `user` may act on any intent here: an operator, or the recorder's own user.
    private func isOperator(_ user: String?) -> Bool {
        user.map { configuration.operators.contains($0) || configuration.brokerURL.users.contains($0) } ?? false
    }

    /// The budget a query of `user`'s is counted against: only the queries that may cost the recorder real time (a
    /// list, the dead letters, a tally, a delete), and not an operator's or a trusted user's. A lookup of one intent
    /// (what `--wait` and the gateway's waits read) is never refused: it costs microseconds, and refusing it would
    /// leave a waiting client without the outcome of an intent that was submitted.
    private func budget(for query: StatusQuery, from user: String?) -> QueryBudget? {
        guard let queryBudget, query.isCostly, !isOperator(user), !isTrusted(user) else { return nil }
        return queryBudget
    }

    /// Tallies that were slow to count (a whole large store's, an operator's), kept for a short while: a dashboard
    /// asks for one after every event it shows, and the recorder, which also writes the store, must not spend its
    /// time counting the same rows again. A quick tally is counted every time (and so is exact at once).
    final class SlowAnswers: Sendable {
        /// A tally that took longer than this (seconds) is kept...
        static let slow = 0.05
        /// ...for this long (seconds).
        static let keptFor = 2.0
        private let kept = Mutex<[StatusQuery.Reader: (until: Double, answer: StatusQuery.Answer)]>([:])

        func answer(for reader: StatusQuery.Reader, now: () -> Double = { Date().timeIntervalSince1970 }, count: () throws -> StatusQuery.Answer)
            rethrows -> StatusQuery.Answer
        {
            let started = now()
            if let held = kept.withLock({ $0[reader] }), held.until > started { return held.answer }
            let answer = try count()
            let ended = now()
            kept.withLock { kept in
                kept = kept.filter { $0.value.until > ended }
                if ended - started > Self.slow, kept.count < 1_000 { kept[reader] = (ended + Self.keptFor, answer) }
            }
            return answer
        }
    }

    /// Why a remote read is not answered: the store is behind what the recorder read, and cannot catch up for now.
    struct StatusStoreBehind: Error, CustomStringConvertible {
        var description: String
    }

    /// Publishes, on `intents.status`, the outcome only the recorder sees (a
    /// dead letter), so that `watch` and `--wait` learn it as they learn a worker's. A notice, not a record: the store
    /// has them already, and reading one back from the ledger changes nothing.
    private func announce(_ transitions: [StatusStore.Transition], on connection: AMQPConnection) throws {
        for transition in transitions where transition.to.isTerminal {
            let event = StatusEvent(
                id: transition.id, type: transition.type, state: transition.to, attempt: 0,
                response: transition.code.map { IntentResponse(code: $0, message: transition.message) }, worker: "recorder",
                owner: transition.owner)
            var message = configuration.topology.statusMessage(for: event, persistent: false)
            message.userID = connection.url.user
            message.headers[Topology.announcedHeader] = .integer(1)
            try connection.publish(message)
        }
    }

    /// Counts applied state changes in the metrics.
    private func count(_ transitions: [StatusStore.Transition]) {
        guard let metrics = configuration.metrics else { return }
        for var transition in transitions {
            if let known = configuration.knownTypes, !known.contains(transition.type) { transition.type = "other" }
            if transition.from == nil {
                metrics.increment("intentqueue_intents_received_total", ["type": transition.type])
            }
            switch transition.to {
            case .needsInput:
                metrics.increment("intentqueue_intents_needs_input_total", ["type": transition.type])
            case .success, .failure, .canceled:
                metrics.increment(
                    "intentqueue_intents_finished_total",
                    [
                        "type": transition.type, "state": transition.to.rawValue, "code": transition.code ?? "",
                    ])
                if transition.code == FailureCode.deadLettered {
                    metrics.increment("intentqueue_intents_dead_lettered_total", ["type": transition.type])
                }
            case .queued, .scheduled, .inProgress, .cancelRequested:
                break
            }
        }
    }

    /// Whether a user's events and republished messages are believed: a worker's, or the recorder's own.
    func isTrusted(_ user: String?) -> Bool {
        guard let user else { return false }
        return trustedUsers.contains(user)
    }

    /// The sender of a submission or a request, as the workers see it: its
    /// verified user; for a worker's retry, the owner it names; for an
    /// operator's requeue, the original publisher (or the owner a retry named).
    func submitter(of delivery: Delivery) -> StatusStore.Submitter {
        if let user = delivery.userID, configuration.operators.contains(user), delivery.headers[DeadLetters.requeuedHeader] == nil {
            return StatusStore.Submitter(user: user, isOperator: true)
        }
        return StatusStore.Submitter(user: owner(ofDeadLetter: delivery))
    }

    /// Whether the message's publisher is trusted: its verified user, or the original publisher of an operator's requeue.
    private func publishedByTrusted(_ delivery: Delivery) -> Bool {
        isTrusted(DeadLetters.publisher(of: delivery, operators: configuration.operators))
    }

    /// The owner a message names, a dead letter's as a submission's: its publisher (for an operator's requeue, the
    /// original one); for a trusted publisher's (a worker's retry, the recorder's release), the owner it names, or
    /// no one for an anonymous sender's.
    func owner(ofDeadLetter delivery: Delivery) -> String? {
        let publisher = DeadLetters.publisher(of: delivery, operators: configuration.operators)
        guard isTrusted(publisher) else { return publisher }
        if delivery.headers[Topology.anonymousSenderHeader] != nil { return nil }
        return delivery.headers[Topology.ownerHeader]?.stringValue ?? publisher
    }

    func update(from delivery: Delivery, intentsExchange: String) -> StatusStore.Update? {
        if delivery.exchange == configuration.topology.cancelExchange {
            // Cancellation hints, bound to the ledger by earlier versions: the
            // request itself comes through `intents`, and a worker decides it.
            return nil
        }
        if delivery.exchange == configuration.topology.deadLetterExchange {
            // The broker gave up on a submission: record it once as a failure. Its body is read
            // only when it is of a size a worker reads; otherwise it is listed under an id of its own.
            let envelope = delivery.body.count <= 1 << 20 ? try? IntentEnvelope.decode(delivery.body) : nil
            if let envelope, envelope.turn > 0, envelope.request == nil || envelope.request == .deny {
                // An answer, a confirmation or a denial: the question it answered is still open in the intent's ledger,
                // and the workers are asked to end it there (`turnsToAbandon`); a failure recorded here would be the
                // store's alone, while the ledger still waits.
                logger.warning(
                    "the answer at turn \(envelope.turn) was dead-lettered; the workers are asked to end its question",
                    metadata: ["intent.id": envelope.id, "intent.type": envelope.type])
                return .turnDeadLettered(id: envelope.id, type: envelope.type, turn: envelope.turn, by: submitter(of: delivery))
            }
            if let request = envelope?.request {
                // A request the workers could not take is not the intent's failure.
                logger.warning(
                    "a \(request.rawValue) request was dead-lettered; the intent keeps its state",
                    metadata: ["intent.id": envelope?.id ?? "", "intent.type": envelope?.type ?? ""])
                return nil
            }
            let id =
                envelope == nil && delivery.body.count > 1 << 20 ? DeadLetters.syntheticID(for: delivery.body) : DeadLetters.listedID(of: delivery)
            let candidate = envelope?.type ?? delivery.type ?? delivery.routingKey
            // Why it died, when its first death was its last: the first death of a copy that went through a
            // retry queue is that queue's "expired", not what ended it.
            let workQueues = [configuration.topology.workQueue, configuration.topology.highPriorityQueue]
            let reason =
                delivery.headers["x-first-death-queue"]?.stringValue.map(workQueues.contains) == true
                ? delivery.headers["x-first-death-reason"]?.stringValue : nil
            // It names its publisher as the owner: the store applies it to an intent of that owner only.
            return .event(
                StatusEvent(
                    id: id, type: IntentEnvelope.problem(withType: candidate) == nil ? candidate : "unknown", state: .failure,
                    attempt: delivery.attempt,
                    response: IntentResponse(
                        code: FailureCode.deadLettered,
                        message:
                            "the broker dead-lettered it\(reason.map { " (\($0))" } ?? ""): it reached the delivery limit of \(configuration.topology.deliveryLimit) or could not be read; it is kept in queue \(configuration.topology.deadLetterQueue)"
                    ),
                    owner: owner(ofDeadLetter: delivery)))
        }
        if delivery.exchange == intentsExchange {
            // A submission the broker accepted. One that cannot be read is the
            // worker's to report, as a failure, when it can read an id.
            guard let envelope = try? IntentEnvelope.decode(delivery.body) else { return nil }
            let submitter = submitter(of: delivery)
            if envelope.submitsUnderScheduledRunID, !publishedByTrusted(delivery) {
                // A schedule's run id taken by someone else: the workers refuse it, and the store keeps the id for the run.
                return nil
            }
            switch envelope.request {
            case .cancel?: return .cancelRequested(id: envelope.id, type: envelope.type, by: submitter)
            case .expire?, .abandon?: return nil  // the recorder's own requests; the worker's decision will tell
            case .deny?, nil: break
            }
            // Only an operator's requeue reopens a dead letter: the header alone means nothing.
            let requeue = delivery.headers[DeadLetters.requeuedHeader] != nil && (delivery.userID.map(configuration.operators.contains) ?? false)
            return requeue ? .requeued(envelope, by: submitter) : .queued(envelope, by: submitter)
        }
        guard delivery.exchange == configuration.topology.statusExchange else {
            // Only workers' events count: a message put straight into the ledger
            // (through the default exchange, say) is not a status.
            logger.warning(
                "skipping a message that did not come through \(configuration.topology.statusExchange)",
                metadata: ["amqp.exchange": delivery.exchange, "intent.id": delivery.messageID ?? ""])
            return nil
        }
        guard isTrusted(delivery.userID) else {
            // The broker verified who published it, and it is not a worker.
            logger.warning(
                "skipping a status event from an untrusted user",
                metadata: ["amqp.user_id": delivery.userID ?? "none", "intent.id": delivery.messageID ?? ""])
            return nil
        }
        if delivery.headers[Topology.announcedHeader] != nil {
            // The recorder's own announcement of what it recorded (its user is trusted): read back, it would record
            // the state again, over an operator's requeue made meanwhile, or into a row deleted since.
            return nil
        }
        do {
            let event = try StatusEvent.decode(delivery.body)
            return event.refused == true ? .refusal(event) : .event(event)
        } catch {
            logger.warning(
                "skipping an unreadable status event: \(error)",
                metadata: ["amqp.routing_key": delivery.routingKey, "intent.id": delivery.messageID ?? "", "intent.type": delivery.type ?? ""])
            return nil
        }
    }
}
