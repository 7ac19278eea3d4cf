import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization

/// Consumes submitted intents and runs them through the pipeline.
///
/// Deliveries come from the I/O thread into lanes that at most `concurrency`
/// runner tasks take them from, one at a time each. A run asks the intent's ledger whether an outcome
/// is already decided (then only that outcome is published again), publishes
/// `inProgress`, runs resolve → confirm → handle, has the ledger decide the
/// outcome (`needsInput`, `success` or `failure`), publishes it and asks for
/// the delivery to be acked once the broker has confirmed that event, so an
/// intent is never acked before its outcome is safe.
///
/// Requests about an intent — a cancel, a denial, an expired question — come
/// through the same queue and are decided in the same ledger, in the
/// transaction that would commit the intent's effects: the first decision
/// stands, and the store hears it from here.
public final class WorkerService: Service {
    private let registry: IntentRegistry
    private let configuration: WorkerConfiguration
    /// The users whose republished messages are believed: the configured ones and the broker URL's own (a
    /// set made once, not on each delivery).
    private let trustedUsers: Set<String>
    private let logger: Logger
    private let loop: any DeliveryTransport
    private let cancellations = Cancellations()
    /// The ledger of the types whose handlers bring none.
    private let ownLedger: (any OutcomeLedger)?
    private let storageNotices = RateLimitedNotice(interval: 5)
    private let keptRuns = KeptRuns()
    private let claimRenewals = ClaimRenewals()
    /// Deliveries wait in two lanes for a runner: a high-priority intent is taken next.
    private let lanes: DeliveryLanes
    /// What a run's `inProgress` events are addressed with, shared by reference: the closures of every run take it
    /// (one retain), not a copy of the topology's names, and not the service, which a handler that kept its context
    /// would then keep as well.
    private let eventAddress: EventAddress

    private final class EventAddress: Sendable {
        let workerName: String
        let topology: Topology

        init(workerName: String, topology: Topology) {
            self.workerName = workerName
            self.topology = topology
        }
    }

    /// Opens the worker's own ledger (`configuration.outcomesPath`) when a
    /// served type's handler has none of its own.
    public convenience init(registry: IntentRegistry, configuration: WorkerConfiguration, logger: Logger) throws {
        try self.init(registry: registry, configuration: configuration, logger: logger) { loopConfiguration, logger in
            ConsumerLoop(configuration: loopConfiguration, logger: logger)
        }
    }

    /// A worker on a transport of the caller's: `InMemoryTransport` runs the
    /// worker, handlers and ledgers as they are, with no broker.
    public init(
        registry: IntentRegistry, configuration: WorkerConfiguration, logger: Logger,
        transport: (ConsumerLoop.Configuration, Logger) -> any DeliveryTransport
    ) throws {
        self.registry = registry
        self.configuration = configuration
        self.trustedUsers = configuration.trustedUsers.union(configuration.brokerURL.users)
        self.logger = logger
        let types = registry.typeNames
        if let ledger = configuration.ledger {
            ownLedger = ledger
        } else if types.contains(where: { registry.ledger(for: $0) == nil }) {
            ownLedger = try DatabaseOutcomeLedger(path: configuration.outcomesPath)
        } else {
            ownLedger = nil
        }
        let lanes = DeliveryLanes(runners: configuration.concurrency)
        self.lanes = lanes
        eventAddress = EventAddress(workerName: configuration.workerName, topology: configuration.topology)
        let topology = configuration.topology
        var loopConfiguration = ConsumerLoop.Configuration(
            url: configuration.brokerURL, queue: topology.workQueue, prefetch: configuration.prefetch,
            heartbeat: configuration.heartbeat, faults: configuration.faults,
            declare: { connection in try topology.declareWork(on: connection, types: types) })
        loopConfiguration.extraQueues = [(topology.cancelStream, ["x-stream-offset": .string("first")])]
        loopConfiguration.alsoConsumed = [topology.highPriorityQueue]
        let cancellations = self.cancellations
        loopConfiguration.onExtraDelivery = { delivery in Self.noteCancellation(delivery, in: cancellations) }
        // Straight from the I/O thread into the lanes, which start a runner's task when one is free.
        loopConfiguration.onDelivery = { delivery in lanes.add(delivery) }
        let keptRuns = self.keptRuns
        let keptLogger = logger
        loopConfiguration.onLocalSettled = { number, done in
            guard let run = keptRuns.remove(number) else { return }
            Task {
                do {
                    // Done: the broker holds what it published. Lost with the connection: to be taken and run again.
                    if done {
                        try await run.ledger.forgetKept(run.intent.id, turn: run.intent.turn)
                    } else {
                        try await run.ledger.letGoKept(run.intent.id, turn: run.intent.turn)
                    }
                } catch {
                    keptLogger.warning(
                        "a kept intent's run could not be noted in its ledger (it is taken again once this worker ends): \(error)",
                        metadata: ["intent.id": run.intent.id])
                }
            }
        }
        loop = transport(loopConfiguration, logger.with(["component": "worker"]))
    }

    /// Consumes and handles intents, at most `concurrency` at once, until `stop()` (or a cancel of the calling task);
    /// then runs the deliveries it holds, lets the running handlers finish, waits up to 5 s for the broker to
    /// confirm their last events, and returns.
    public func run() async throws {
        logger.info(
            "worker starting",
            metadata: [
                "worker.types": registry.typeNames.joined(separator: ","),
                "worker.concurrency": "\(configuration.concurrency)", "amqp.prefetch": "\(configuration.prefetch)",
            ])
        lanes.start { [self] delivery in await process(delivery) }
        loop.start()
        // Read back from the cancellation stream, this marker says the stream has
        // been read up to the moment the worker started.
        loop.send(
            .publish(
                [
                    OutgoingMessage(
                        exchange: configuration.topology.cancelExchange, routingKey: "", body: [], persistent: true,
                        headers: [Topology.syncHeader: .string(cancellations.token)])
                ], thenAck: nil))
        // Scheduled intents kept in the ledgers join the same lanes when they are due, broker or not.
        let keeper = Task { await self.runKept(into: lanes) }
        let forgetter = Task { await self.forgetOldDecisions() }
        let renewer = Task { [claimRenewals, configuration, logger] in await claimRenewals.run(every: configuration.claimRenewal, logger: logger) }
        // The broker's deliveries go to the lanes from the I/O thread; a transport that hands them to the
        // stream instead has them added here. The stream ends when consuming stops, after the last delivery
        // handed over: read in a task of its own, which a cancel of `run()` does not cut short (a cancel stops
        // consuming, as `stop()` does), so that no delivery comes after the lanes are finished.
        await withTaskCancellationHandler {
            await Task { [loop, lanes] in
                for await delivery in loop.deliveries { lanes.add(delivery) }
            }.value
        } onCancel: { [loop] in
            loop.stopConsuming()
        }
        keeper.cancel()
        forgetter.cancel()
        await keeper.value
        await forgetter.value
        lanes.finish()
        await lanes.drained()
        // Renewed until the last run has ended.
        renewer.cancel()
        await renewer.value
        await loop.shutdown(grace: 5)
        logger.info("worker stopped")
    }

    /// Stops consuming; `run()` returns once the running handlers have finished. Returns at once.
    public func stop() {
        loop.stopConsuming()
    }

    /// A message of the cancellation stream (on the I/O thread): a canceled id, or a worker's marker.
    private static func noteCancellation(_ delivery: Delivery, in cancellations: Cancellations) {
        if let marker = delivery.headers[Topology.syncHeader]?.stringValue {
            if marker == cancellations.token { cancellations.markCaughtUp() }
        } else if delivery.body.count <= 4_096, let hint = try? JSONValue.parse(delivery.body), let id = hint["id"]?.stringValue {
            cancellations.add(id, from: delivery.userID, at: hint["at"]?.numberValue ?? 0)
        }
    }

    /// Whether the worker is connected to the broker now.
    public var isConnected: Bool { loop.isConnected }

    /// Takes the kept intents of the served types' ledgers as they come due and hands them to `lanes` as local
    /// deliveries (no broker delivered them, and none is acked), no more at once than twice its concurrency, so
    /// that the other workers sharing a ledger take their part. Looks at each ledger at the next due time and at
    /// least every 250 ms, which is how soon it sees what other workers sharing it have kept, or what a worker
    /// that died had taken. Ends when the task is canceled.
    private func runKept(into lanes: DeliveryLanes) async {
        let ledgers = servedLedgersWithTypes
        let taker = KeptTaker.current
        let room = max(1, configuration.concurrency * 2)
        while !Task.isCancelled {
            var next = Date().timeIntervalSince1970 + 0.25
            for (ledger, types) in ledgers {
                do {
                    let now = Date().timeIntervalSince1970
                    let free = room - keptRuns.unfinished
                    guard free > 0 else {
                        next = now + 0.01  // as busy as it takes on: looked at again as soon as runs end
                        continue
                    }
                    // Only what this worker serves: workers of other types may share the ledger (the worker's own, by
                    // default one file per user), and one would refuse what another runs.
                    let taken = try await ledger.takeDueKept(by: now, taker: taker.name, isHeld: KeptTaker.holds, limit: free, types: types)
                    for intent in taken { lanes.add(localDelivery(for: intent, number: keptRuns.add(intent, in: ledger))) }
                    if taken.count == free { next = now }
                    if let due = try await ledger.nextKeptDue(), due > now { next = min(next, due) }
                } catch {
                    logger.debug("kept intents not looked at this round: \(error)")
                }
            }
            let wait = next - Date().timeIntervalSince1970
            if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1_000) + 1)) }
        }
    }

    /// The ledgers of the served types, each once.
    private var servedLedgers: [any OutcomeLedger] { servedLedgersWithTypes.map(\.ledger) }

    /// The ledgers of the served types, each once, with the served types whose ledger it is.
    private var servedLedgersWithTypes: [(ledger: any OutcomeLedger, types: Set<String>)] {
        var ledgers: [(ledger: any OutcomeLedger, types: Set<String>)] = []
        var index: [ObjectIdentifier: Int] = [:]
        for type in registry.typeNames {
            guard let ledger = registry.ledger(for: type) ?? ownLedger else { continue }
            let key = ObjectIdentifier(ledger as AnyObject)
            if let at = index[key] {
                ledgers[at].types.insert(type)
            } else {
                index[key] = ledgers.count
                ledgers.append((ledger, [type]))
            }
        }
        return ledgers
    }

    /// Forgets, in each served ledger, the intents decided longer ago than `ledgerRetention`, so that a ledger stops
    /// growing once the retention has passed: a pass over its decisions in steps of 500, 100 ms apart (each step a
    /// read, and a short write between the handlers' own when it found old ones), then `ledgerForgetPause` until the
    /// next pass. Workers sharing a ledger each make their passes; a decision forgotten twice is forgotten once. Ends
    /// when the task is canceled.
    ///
    /// The retention is at least `minimumLedgerRetention`: an hour more than the longest time limit of a served
    /// type, since a time limit decides `timedOut` while the handler may still be running, and that handler's
    /// `once` must still find the decision when it returns.
    private func forgetOldDecisions() async {
        guard let asked = configuration.ledgerRetention else { return }
        let retention = max(asked, minimumLedgerRetention)
        if retention > asked {
            logger.warning(
                "decisions are kept \(JSONValue.formatNumber(retention)) s, not the \(JSONValue.formatNumber(asked)) s asked: an hour more than the longest time limit"
            )
        }
        let ledgers = servedLedgers
        let failures = RateLimitedNotice(interval: 3_600)
        while !Task.isCancelled {
            var forgotten = 0
            for ledger in ledgers {
                var cursor = ""
                while !Task.isCancelled {
                    do {
                        let step = try await ledger.forgetDecided(before: Date().timeIntervalSince1970 - retention, after: cursor, limit: 500)
                        forgotten += step.forgotten
                        guard let next = step.next else { break }
                        cursor = next
                    } catch {
                        // Busy or failing storage: the next pass tries again, and the ledger grows meanwhile.
                        failures.note { quiet in
                            logger.warning(
                                "old decisions not forgotten this pass (the next tries again)\(quiet > 0 ? ", nor in \(quiet) passes before" : ""): \(error)"
                            )
                        }
                        break
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            if forgotten > 0 {
                logger.info(
                    "forgot \(forgotten) intents decided more than \(JSONValue.formatNumber(retention)) s ago",
                    metadata: ["ledger.forgotten": "\(forgotten)"])
                configuration.metrics?.increment("intentqueue_ledger_forgotten_total", [:], by: Double(forgotten))
            }
            try? await Task.sleep(for: .seconds(max(0.01, min(configuration.ledgerForgetPause, 86_400))))
        }
    }

    /// The shortest a served ledger keeps a decision: an hour, and an hour more than the longest time limit of a
    /// served type.
    var minimumLedgerRetention: Double {
        3_600 + (registry.typeNames.map(longestRun(of:)).max() ?? 0)
    }

    /// The longest a run of `type` may take: its `--time-limit`, else its handler's own, else 600 s.
    private func longestRun(of type: String) -> Double {
        configuration.timeLimits[type] ?? registry.timeLimit(for: type) ?? 600
    }

    /// On a local delivery: when a worker first took the kept intent to run (see `KeptIntent.startedAt`).
    private static let keptStartHeader = "x-intent-kept-started"

    /// A kept intent as a delivery no broker made: its tag local (`number`), released, its owner named, trusted as
    /// the recorder's release is (only this process makes such a tag).
    private func localDelivery(for intent: KeptIntent, number: UInt64) -> Delivery {
        var headers: [String: HeaderValue] = [Topology.releasedHeader: .string(JSONValue.formatNumber(intent.dueAt))]
        if let owner = intent.owner { headers[Topology.ownerHeader] = .string(owner) }
        if let startedAt = intent.startedAt { headers[Self.keptStartHeader] = .string(JSONValue.formatNumber(startedAt)) }
        let envelope = try? IntentEnvelope.decode(intent.body)
        return Delivery(
            tag: .local(number), exchange: configuration.topology.intentsExchange, routingKey: envelope?.routingKey ?? "", body: intent.body,
            messageID: intent.id, type: envelope?.type, headers: headers)
    }

    /// What one delivery is about, worked out once.
    private struct Job: Sendable {
        /// What the delivery brought and what it was read as, the same for the delivery's whole life. Held by
        /// reference: a job is copied into closures and across suspension points several times an intent, and a copy
        /// is then one retain, not one for every string of the delivery and the envelope.
        private final class Fixed: Sendable {
            let delivery: Delivery
            let envelope: IntentEnvelope
            let ledger: any OutcomeLedger
            let logger: Logger
            let sender: Sender
            /// The number this delivery's run claims the intent with: no other run's (an attempt is not unique).
            let claimHolder = ClaimRenewals.nextHolder()

            init(delivery: Delivery, envelope: IntentEnvelope, ledger: any OutcomeLedger, logger: Logger, sender: Sender) {
                self.delivery = delivery
                self.envelope = envelope
                self.ledger = ledger
                self.logger = logger
                self.sender = sender
            }
        }

        private let fixed: Fixed
        var delivery: Delivery { fixed.delivery }
        var envelope: IntentEnvelope { fixed.envelope }
        var ledger: any OutcomeLedger { fixed.ledger }
        var logger: Logger { fixed.logger }
        /// Who sent it, as the broker verified (or, for a worker's retry or an operator's requeue, the owner it carries).
        var sender: Sender { fixed.sender }
        /// The number this delivery's run claims the intent with (see `OutcomeLedger.claim(_:holder:lasting:)`).
        var claimHolder: Int { fixed.claimHolder }
        /// Retries the type's policy counted, and retries spent waiting for storage.
        var retries: Int
        var storageWaits: Int
        var attempt: Int
        /// What the ledger said of it before anything ran.
        var admission = Admission()
        /// When this delivery's run started (resolve, confirm, handle), once it has.
        var startedAt: Double?
        /// Kept in the ledger, to be run by the workers sharing it when due (said on its `scheduled` event).
        var kept = false
        /// A kept intent taken up again (its worker died, or its run's outcome was lost): when a run of it began.
        var keptStart: Double?

        var id: String { envelope.id }
        /// The intent's owner, which every event about it names.
        var owner: String? { admission.owner }

        init(
            delivery: Delivery, envelope: IntentEnvelope, retries: Int, storageWaits: Int, attempt: Int, ledger: any OutcomeLedger,
            logger: Logger, sender: Sender
        ) {
            fixed = Fixed(delivery: delivery, envelope: envelope, ledger: ledger, logger: logger, sender: sender)
            self.retries = retries
            self.storageWaits = storageWaits
            self.attempt = attempt
        }
    }

    func process(_ delivery: Delivery) async {
        // A kept intent's run: no longer counted as taken on once it has ended, whichever way.
        defer { if delivery.tag.isLocal { keptRuns.finished(delivery.tag.value) } }
        guard loop.isLive(delivery.tag) else {
            // Held in the lanes while its connection was lost: the broker gives the message again (here or to another
            // worker), and a run of this copy as well would run it twice at once. Not run, nor settled.
            logger.info(
                "a delivery of a lost broker connection is left to its redelivery",
                metadata: ["intent.id": delivery.messageID ?? "", "amqp.generation": "\(delivery.tag.generation)"])
            return
        }
        configuration.faults.hit(.afterReceive, intentID: delivery.messageID)
        let sender = sender(of: delivery)
        let envelope: IntentEnvelope
        do throws(EnvelopeError) {
            guard delivery.body.count <= configuration.maxBodyBytes else {
                throw EnvelopeError(id: nil, reason: "the body of \(delivery.body.count) bytes is over the limit of \(configuration.maxBodyBytes)")
            }
            envelope = try IntentEnvelope.decode(delivery.body)
        } catch {
            await refuse(delivery, error: error, sender: sender)
            return
        }
        // Counters a worker's retry carries: believed only from a trusted publisher (a producer could otherwise make
        // its first transient failure its last), clamped, and added without overflow.
        let counted = delivery.headers[Topology.retriesHeader] != nil || delivery.headers[Topology.storageRetriesHeader] != nil
        let believed = counted && publisher(of: delivery).isTrusted
        let retries = believed ? Self.count(delivery.headers[Topology.retriesHeader]) : 0
        let storageWaits = believed ? Self.count(delivery.headers[Topology.storageRetriesHeader]) : 0
        let attempt = min(delivery.attempt, Self.countLimit) + retries + storageWaits
        let logger = self.logger.with(pairs: ["intent.id": envelope.id, "intent.type": envelope.type, "intent.attempt": String(attempt)])
        guard registry.serves(envelope.type), let ledger = registry.ledger(for: envelope.type) ?? ownLedger else {
            // Bound by another worker's registry: nothing of this type runs here.
            let outcome = PipelineOutcome.failure(
                IntentFailure(
                    code: FailureCode.unknownIntentType,
                    message: "this worker has no handler for intent type '\(envelope.type)' (it serves \(registry.typeNames.joined(separator: ", ")))"
                ))
            finish(delivery, envelope: envelope, attempt: attempt, outcome: outcome, owner: sender.user, refused: true)
            return
        }
        if envelope.submitsUnderScheduledRunID, !publisher(of: delivery).isTrusted {
            // Said to the sender only: a schedule's run due under that id runs as it would have.
            let refusal = IntentFailure(code: FailureCode.idInUse, message: IntentEnvelope.scheduledRunIDProblem)
            logger.warning("refused: \(refusal.message)", metadata: ["amqp.user_id": sender.user ?? "none", "intent.refusal": refusal.code])
            finish(delivery, envelope: envelope, attempt: attempt, outcome: .failure(refusal), owner: sender.user, refused: true)
            return
        }
        var job = Job(
            delivery: delivery, envelope: envelope, retries: retries, storageWaits: storageWaits, attempt: attempt,
            ledger: ledger, logger: logger, sender: sender)
        if delivery.tag.isLocal {
            job.keptStart = delivery.headers[Self.keptStartHeader]?.stringValue.flatMap(Double.init)
        }
        do {
            job.admission = try await ledger.admit(
                envelope.id, type: envelope.type, sender: sender, turn: envelope.turn, request: envelope.request,
                confirming: envelope.confirmed ?? [])
            if let refusal = job.admission.refusal {
                // Said to the sender only: the intent, its status and its effects stay as they were.
                job.logger.warning("refused: \(refusal.message)", metadata: ["amqp.user_id": sender.user ?? "none", "intent.refusal": refusal.code])
                finish(delivery, envelope: envelope, attempt: attempt, outcome: .failure(refusal), owner: sender.user, refused: true)
                return
            }
            if envelope.turn > 0, let answers = envelope.answers, !answers.isEmpty {
                // An answer changes values: a confirmation of them, or of the whole intent, given at an earlier turn no
                // longer stands (the user confirmed other values), and is asked again should the intent need it.
                job.admission.confirmed.subtract(answers.keys)
                job.admission.confirmed.remove(IntentPipeline.wholeIntent)
            }
            if let request = envelope.request {
                try await decide(request, for: job)
            } else {
                try await run(job)
            }
        } catch {
            giveUpOrWait(job, error: error)
        }
    }

    /// The ledger could not be read or written. A condition that passes (a
    /// busy or full database) waits in a retry queue; any other (a corrupt or
    /// read-only file) would fail the same way again, so the delivery goes to
    /// the dead-letter queue, where an operator sees it, rather than round and round.
    private func giveUpOrWait(_ job: Job, error: any Error) {
        if let retryable = error as? any RetryableError, retryable.isRetryable {
            waitForStorage(job, error: error)
        } else {
            job.logger.error("the outcome ledger failed, and will not by waiting: dead-lettered: \(error)")
            loop.send(.reject(job.delivery.tag, requeue: false))
        }
    }

    /// Who may cancel this job's intent with a hint: its owner, or an
    /// operator (anyone, for an intent submitted without a user).
    private func mayCancel(_ job: Job) -> @Sendable (String) -> Bool {
        let owner = job.owner
        let operators = configuration.operators
        return { user in owner == nil || user == owner || operators.contains(user) }
    }

    private func isTrusted(_ user: String?) -> Bool {
        user.map { trustedUsers.contains($0) } ?? false
    }

    /// The sender of a delivery, as the broker verified it. Two kinds of
    /// message are republished by someone else and say whose they are in
    /// headers, believed only from those who republish: a worker's retry
    /// (a trusted user) names the intent's owner; an operator's requeue names
    /// the message's original publisher (and, when that was a worker's retry,
    /// the owner it named). A requeued message acts as its original sender,
    /// not with the operator's authority.
    private func sender(of delivery: Delivery) -> Sender {
        // A kept intent taken from the ledger: its owner as the ledger admitted it.
        if delivery.tag.isLocal { return Sender(user: delivery.headers[Topology.ownerHeader]?.stringValue, isTrusted: true) }
        if let user = delivery.userID, configuration.operators.contains(user), delivery.headers[DeadLetters.requeuedHeader] == nil {
            return Sender(user: user, isOperator: true)
        }
        let publisher = publisher(of: delivery)
        if publisher.isTrusted {
            // Republished for an anonymous sender: it acts as no one, not as the trusted user republishing it.
            if delivery.headers[Topology.anonymousSenderHeader] != nil { return Sender(user: nil) }
            if let named = delivery.headers[Topology.ownerHeader]?.stringValue {
                return Sender(user: named, isTrusted: Self.namesTrustedSender(delivery))
            }
        }
        return Sender(user: publisher.user, isTrusted: publisher.isTrusted)
    }

    static let countLimit = 1_000_000

    /// Who published the delivery, as its headers are believed from: the message's original publisher for an
    /// operator's requeue, this worker for a kept intent taken from the ledger, else the broker-verified user.
    /// Whether that publisher is trusted is what a `released` header, and the sender a header names, are believed on.
    private func publisher(of delivery: Delivery) -> (user: String?, isTrusted: Bool) {
        if delivery.tag.isLocal { return (nil, true) }
        let user = DeadLetters.publisher(of: delivery, operators: configuration.operators)
        return (user, isTrusted(user))
    }

    /// Whether a trusted republisher's message says the sender it names was trusted too.
    private static func namesTrustedSender(_ delivery: Delivery) -> Bool {
        delivery.headers[Topology.trustedSenderHeader]?.integerValue == 1
    }

    private static func count(_ header: HeaderValue?) -> Int {
        Int(clamping: min(max(header?.integerValue ?? 0, 0), Int64(countLimit)))
    }

    /// A cancel, a denial or an expiry: decided in the ledger, published when it stands.
    private func decide(_ request: IntentRequest, for job: Job) async throws {
        let wanted: DecidedOutcome
        let decider: Decider
        switch request {
        case .cancel:
            cancellations.add(job.id, from: job.owner ?? "", at: Date().timeIntervalSince1970)
            wanted = .canceled("canceled by request before it was handled")
            decider = .cancel
        case .deny:
            wanted = .failure(
                IntentFailure(code: FailureCode.denied, message: "the user denied the confirmation asked at turn \(job.envelope.turn - 1)"))
            decider = .answer(question: job.envelope.turn - 1)
        case .expire:
            wanted = .failure(
                IntentFailure(
                    code: FailureCode.expired, message: "the question asked at turn \(job.envelope.turn - 1) went unanswered past its time to live"))
            decider = .answer(question: job.envelope.turn - 1)
        case .abandon:
            wanted = .failure(
                IntentFailure(
                    code: FailureCode.deadLettered,
                    message:
                        "the broker dead-lettered the answer to the question asked at turn \(job.envelope.turn - 1) (it reached the delivery limit, or could not be read); the answer is kept in the dead-letter queue"
                ))
            decider = .answer(question: job.envelope.turn - 1)
        }
        let decision = try await job.ledger.decision(job.id, wanted, attempt: job.attempt, by: decider)
        guard let standing = decision.standing else {
            job.logger.info("\(request.rawValue) request is moot: the intent moved on (a later question, or a handler that started)")
            loop.send(.ack(job.delivery.tag))
            return
        }
        if !decision.recordedByThisCall {
            job.logger.info(
                "\(request.rawValue) request came too late: the intent had already ended \(standing.state.rawValue) (\(standing.response.code))")
        } else {
            job.logger.info("\(request.rawValue) request decided: \(standing.state.rawValue) (\(standing.response.code))")
        }
        // Ended: a scheduled intent kept to run when due has nothing left to run (any turn of it).
        try await job.ledger.forgetKept(job.id, turn: Int.max)
        // A denial that decided says so: the store shows it as the turn's answer, whatever other answer it recorded.
        publish(standing, for: job, answered: request == .deny && decision.recordedByThisCall)
    }

    /// A turn of the intent: resolve, confirm, handle, unless already decided.
    private func run(_ admittedJob: Job) async throws {
        var job = admittedJob
        // What the user confirmed counts only as far as the intent asked (the ledger says).
        var admitted = job.envelope
        admitted.confirmed = job.admission.confirmed.isEmpty ? nil : job.admission.confirmed.sorted()
        let envelope = admitted
        let ledger = job.ledger
        if let decided = job.admission.decided {
            // A resubmitted or redelivered intent that already ended: its outcome
            // again, and nothing before it, so no one sees it start over.
            job.logger.info("already decided (\(decided.state.rawValue)): publishing its outcome again")
            publish(decided, for: job)
            return
        }
        // While the broker is away the cancellation stream cannot be read, and is not waited for: the ledger decides.
        let loop = self.loop
        if await cancellations.isCanceled(
            job.id, submittedAt: envelope.submittedAt, readable: { loop.isConnected }, by: mayCancel(job)),
            let standing = try await ledger.decide(job.id, .canceled("canceled before it was handled"), attempt: job.attempt, by: .cancel)
        {
            job.logger.info("canceled before it was handled")
            publish(standing, for: job)
            return
        }
        if registry.isRestricted(envelope.type), !(job.owner.map(configuration.allowedUsers.contains) ?? false) {
            job.logger.warning("restricted intent from a submitter not on the allow-list", metadata: ["amqp.user_id": job.owner ?? "none"])
            let refused = DecidedOutcome.failure(
                IntentFailure(
                    code: FailureCode.failureRequiringAppAuthentication,
                    message: "\(envelope.type) is restricted: the submitter \(job.owner.map { "'\($0)'" } ?? "(no user_id)") is not allowed"))
            if let standing = try await ledger.decide(job.id, refused, attempt: job.attempt, by: .run) {
                publish(standing, for: job)
            } else {
                loop.send(.ack(job.delivery.tag))
            }
            return
        }
        // The recorder's release of a scheduled intent, or a kept one taken when due: the first time it
        // runs, whatever the clocks say.
        let released = publisher(of: job.delivery).isTrusted && job.delivery.headers[Topology.releasedHeader] != nil
        if envelope.turn == 0, !job.admission.isNew, !released, !job.delivery.tag.isLocal, try await ledger.keptTurn(of: job.id) == 0 {
            // A submission under the id of an intent kept to run when due (the same one delivered again, or a second
            // one under a deduplication key's id): the kept one runs then, as it was submitted. This one neither
            // runs now nor replaces it, or the intent would run otherwise than the store says it will.
            job.logger.info("submitted again while it is kept to run when due: the kept submission stands")
            // The kept submission itself again (redelivered, or a retry's copy: the very body kept): its `scheduled`
            // event may never have been confirmed (the worker died or lost its connection after keeping it), and
            // without one the store would not know a worker keeps it, and would release it at its due time while a
            // worker takes it too. Said again, with the kept due time (the body's own). Any other copy says nothing.
            guard job.attempt > 1, let kept = try await ledger.keptIntent(of: job.id), kept.turn == 0, kept.body == job.delivery.body else {
                loop.send(.ack(job.delivery.tag))
                return
            }
            job.kept = true
            finish(PipelineOutcome(state: .scheduled), for: job)
            return
        }
        if !job.delivery.tag.isLocal, let dueAt = envelope.dueAt, released || dueAt <= Date().timeIntervalSince1970 {
            // The recorder released it, or the broker brought it again once due (its early ack was lost):
            // this run is its run, and no worker is to take it from the ledger as well.
            try await ledger.forgetKept(envelope.id, turn: envelope.turn)
        }
        var resolvesAhead = false
        if let dueAt = envelope.dueAt, envelope.request == nil, !released, dueAt > Date().timeIntervalSince1970 {
            // Scheduled: admitted (so it may be canceled meanwhile), kept in the ledger and acked. The workers
            // sharing the ledger run it when it is due; the recorder, which recorded the same submission (or
            // answering turn) from the ledger queue, releases it if none has a few seconds later (or at once
            // when the ledger keeps nothing).
            guard registry.resolutionTime(for: envelope.type) == .atSubmission else {
                job.logger.debug("scheduled for \(Timestamp.iso8601(seconds: dueAt)): kept, and run then")
                job.kept = try await keep(job, dueAt: dueAt)
                finish(PipelineOutcome(state: .scheduled), for: job)
                return
            }
            // Its type resolves at submission: resolved and confirmed now, its questions asked now; handled when due.
            job.logger.debug("scheduled for \(Timestamp.iso8601(seconds: dueAt)): resolved now, handled then")
            resolvesAhead = true
        }
        // A type limited per owner (or per parameter value) runs only in a free slot and within its rate;
        // otherwise it waits its turn. Taken before the claim, so that waiting leaves no claim behind.
        let slot = resolvesAhead ? nil : try await takeSlot(job)
        if slot == .full { return }
        func giveBackSlot() async {
            guard case .taken(let slot)? = slot else { return }
            do {
                try await ledger.releaseSlot(slot, intentID: job.id)
            } catch {
                job.logger.warning("its slot of \(slot) could not be given back (it frees itself later): \(error)")
            }
        }
        // A claim is held for as long as the run may last (its time limit, and a minute to record its outcome); a
        // ledger with the effects claims nothing.
        let claimLasting = ledger.holdsEffects ? 0 : longestRun(of: envelope.type) + 60
        let decidedBefore: DecidedOutcome?
        do {
            // A claim another delivery holds (a second release, say) throws: this one waits, and finds the outcome then.
            decidedBefore =
                ledger.holdsEffects ? nil : try await ledger.claim(job.id, attempt: job.attempt, holder: job.claimHolder, lasting: claimLasting)
        } catch {
            await giveBackSlot()
            throw error
        }
        if let decided = decidedBefore {
            await giveBackSlot()
            publish(decided, for: job)
            return
        }
        if !ledger.holdsEffects {
            // Renewed while this run lasts, however long its resolution or its handler takes.
            claimRenewals.add(holder: job.claimHolder, intentID: job.id, in: ledger, lasting: claimLasting)
        }
        defer { if !ledger.holdsEffects { claimRenewals.remove(holder: job.claimHolder) } }
        // Taken up again from the ledger, it had been begun whatever its attempt says.
        let begun = (!job.admission.isNew && !(released && job.attempt == 1)) || job.keptStart != nil
        if let expiresAt = envelope.expiresAt, envelope.turn == 0, !begun, !resolvesAhead, Date().timeIntervalSince1970 >= expiresAt {
            // Never begun, and now too late to begin: decided where a run's outcome would be (holding the
            // claim, for a ledger without the effects), so a cancel racing it, or a second delivery, finds one
            // outcome. Begun intents (admitted before) always run on.
            let expired = DecidedOutcome.failure(
                IntentFailure(
                    code: FailureCode.expired,
                    message: "not started before it expired at \(Timestamp.iso8601(seconds: expiresAt)): it never ran"))
            let standing = try await ledger.decide(job.id, expired, attempt: job.attempt, by: .run)
            await giveBackSlot()
            if let standing {
                job.logger.info("expired before it started: not run")
                publish(standing, for: job)
            } else {
                loop.send(.ack(job.delivery.tag))
            }
            return
        }
        let turn = envelope.turn
        let attempt = job.attempt
        let owner = job.owner
        let started = StatusEvent(
            id: envelope.id, type: envelope.type, state: .inProgress, at: job.keptStart ?? Date().timeIntervalSince1970, attempt: attempt,
            worker: configuration.workerName, turn: turn, owner: owner)
        if !resolvesAhead {
            job.startedAt = started.at
            if job.delivery.tag.isLocal, job.keptStart == nil {
                // Should this run be lost, the one that takes it up again knows it began, and when.
                do {
                    try await ledger.noteKeptStart(job.id, turn: turn, at: started.at)
                } catch {
                    job.logger.warning("the start of a kept intent's run could not be noted: \(error)")
                }
            }
        }
        // Published only if the run is still going after the delay (or says how far it has come first).
        let startedEvent =
            resolvesAhead
            ? nil
            : StartedEvent(on: loop, after: configuration.startedEventDelay) { [eventAddress] in
                eventAddress.topology.statusMessage(for: started)
            }

        // The closures below capture the id and type, not the whole envelope (a copy of each of its fields).
        let (intentID, intentType) = (envelope.id, envelope.type)
        var context = IntentContext(
            intentID: intentID, intentType: intentType, attempt: attempt, submittedAt: envelope.submittedAt,
            logger: job.logger,
            progress: { [eventAddress] progress in
                startedEvent?.publish()
                let event = StatusEvent(
                    id: intentID, type: intentType, state: .inProgress, attempt: attempt, progress: progress,
                    worker: eventAddress.workerName, turn: turn, owner: owner)
                loop.send(.publish([eventAddress.topology.statusMessage(for: event)], thenAck: nil))
            })
        context.userID = owner
        context.resolvesAhead = resolvesAhead
        let cancellations = self.cancellations
        let counts = mayCancel(job)
        let submittedAt = envelope.submittedAt
        context.isCanceled = {
            await cancellations.isCanceled(intentID, submittedAt: submittedAt, readable: { loop.isConnected }, by: counts)
        }
        let received = ContinuousClock.now
        let timedOut = Atomic<Bool>(false)
        // The handler runs in this runner's task; past its time limit, that task is canceled and the lanes give
        // the runner's next deliveries to a new one (see `DeliveryLanes.startRunner`). So what follows the
        // pipeline here may run canceled: nothing after it may wait on anything that a cancel cuts short.
        await IntentPipeline.run(
            envelope, registry: registry, context: context, timeLimit: configuration.timeLimits[envelope.type],
            deadlines: Deadlines.shared, inCallersTask: true
        ) { [job, committed = context.committed] outcome in
            // Whatever the outcome, what goes next for this delivery is not that it started.
            startedEvent?.supersede()
            if outcome.response?.code == FailureCode.timedOut { timedOut.store(true, ordering: .relaxed) }
            await self.conclude(job, outcome: outcome, received: received, committed: committed)
        }
        await giveBackSlot()
        // A handler past its time limit keeps its slot until it really returns,
        // so `--concurrency` bounds what runs, not what has been reported.
        if timedOut.load(ordering: .relaxed) {
            job.logger.info("the handler returned after its time limit; its slot is free again")
        }
    }

    /// What `takeSlot` found: no limit, a slot taken under `key`, or a limit reached (the intent sent to wait).
    private enum Slot: Equatable {
        case taken(String)
        case full
    }

    /// The job's slot under its type's concurrency limit and its start under its rate limit, when it has them:
    /// nil when it has neither, `.full` when either is reached (the job is then sent to wait a second in a
    /// retry queue, not counted against its retries, and acked).
    private func takeSlot(_ job: Job) async throws -> Slot? {
        let envelope = job.envelope
        let ledger = job.ledger
        var slot: Slot?
        if let limit = configuration.concurrencyLimits[envelope.type] ?? registry.concurrencyLimit(for: envelope.type) {
            let key = limit.key(type: envelope.type, owner: job.owner, parameters: envelope.parameters)
            if try await ledger.acquireSlot(key, intentID: job.id, maximum: limit.maximum, staleAfter: longestRun(of: envelope.type) + 60) {
                slot = .taken(key)
            } else {
                job.logger.debug("\(limit.maximum) of \(key) already running: it waits its turn")
                slot = .full
            }
        }
        if slot != .full, let rate = configuration.rateLimits[envelope.type] ?? registry.rateLimit(for: envelope.type) {
            // A start is a slot kept for the whole window: never given back, it frees itself when the window has passed.
            let key = rate.key(type: envelope.type, owner: job.owner, parameters: envelope.parameters)
            let started: Bool
            do {
                started = try await ledger.acquireSlot(key, intentID: job.id, maximum: rate.maximum, staleAfter: rate.seconds)
            } catch {
                if case .taken(let held)? = slot { try? await ledger.releaseSlot(held, intentID: job.id) }
                throw error
            }
            if !started {
                job.logger.debug("\(rate.maximum) of \(key) started within \(JSONValue.formatNumber(rate.seconds)) s: it waits its turn")
                if case .taken(let held)? = slot { try await ledger.releaseSlot(held, intentID: job.id) }
                slot = .full
            }
        }
        guard slot == .full else { return slot }
        let wait = configuration.topology.retryQueue(forDelay: 1)
        loop.send(.publish([again(job, retries: job.retries, storageWaits: job.storageWaits, bucket: wait.bucket)], thenAck: job.delivery.tag))
        return .full
    }

    /// Gives back the claim of a run that decided nothing (a ledger without the effects), and returns the outcome a
    /// cancel requested meanwhile decided then, if any: the intent's outcome, to be published in place of what the
    /// run would have said (a retry, or `scheduled`).
    private func releaseClaim(of job: Job) async throws -> DecidedOutcome? {
        guard !job.ledger.holdsEffects else { return nil }
        try await job.ledger.release(job.id, holder: job.claimHolder)
        return try await job.ledger.outcome(of: job.id)
    }

    /// The pipeline's outcome, decided in the ledger and published. A time
    /// limit arrives here at its deadline, before the handler has returned.
    private func conclude(_ job: Job, outcome: PipelineOutcome, received: ContinuousClock.Instant, committed: CommittedOutcome) async {
        configuration.faults.hit(.afterHandle, intentID: job.id)
        if let metrics = configuration.metrics {
            let elapsed = received.duration(to: .now)
            metrics.observe(
                "intentqueue_worker_handle_duration_seconds", ["type": job.envelope.type],
                Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            metrics.increment(
                "intentqueue_worker_handled_total",
                [
                    "type": job.envelope.type, "state": outcome.retryReason == nil ? outcome.state.rawValue : "retry",
                ])
        }
        do {
            if let reason = outcome.retryReason {
                // The intent waits in a retry queue: unclaimed, so it may still be canceled meanwhile.
                if let canceled = try await releaseClaim(of: job) {
                    publish(canceled, for: job)
                    return
                }
                if outcome.waitsForStorage {
                    waitForStorage(job, reason: reason)
                } else {
                    try await retry(job, reason: reason)
                }
                return
            }
            if outcome.state == .scheduled, let dueAt = job.envelope.dueAt {
                // Resolved and confirmed ahead of its due time: nothing decided, the claim given back, kept to run then.
                if let canceled = try await releaseClaim(of: job) {
                    publish(canceled, for: job)
                    return
                }
                var kept = job
                kept.kept = try await keep(job, dueAt: dueAt)
                // Nothing decided: which answer is the turn's is said by the outcome its run reaches when due.
                finish(outcome, for: kept)
                return
            }
            if outcome.state == .needsInput {
                if let size = oversized(outcome, job: job) {
                    // A question too large to publish: refused here, before anything was done.
                    let failure = DecidedOutcome.failure(
                        IntentFailure(
                            code: FailureCode.outcomeTooLarge,
                            message: "the question's status event would be \(size) bytes, over the limit of \(configuration.maxEventBytes)"))
                    if let standing = try await job.ledger.decide(job.id, failure, attempt: job.attempt, by: .run) {
                        publish(standing, for: job)
                    }
                    return
                }
                let asked = outcome.resolutions.compactMap { resolution -> String? in
                    if case .confirmationRequired = resolution.result { return resolution.parameter }
                    return nil
                }
                if let decided = try await job.ledger.ask(
                    job.id, turn: job.envelope.turn, confirmations: asked, granted: job.admission.confirmed,
                    holder: job.ledger.holdsEffects ? nil : job.claimHolder)
                {
                    job.logger.info("decided while resolving (\(decided.state.rawValue)): the question is not asked")
                    publish(decided, for: job)
                } else {
                    finish(outcome, for: job, answered: true)
                }
                return
            }
            let ours = DecidedOutcome(
                state: outcome.state, response: outcome.response ?? IntentResponse(code: outcome.state.rawValue))
            // The handler's `once` committed this very outcome with its effects: it stands, with no second write.
            // Otherwise the ledger says whether this run decided: the outcome may have been decided before it (another
            // delivery of it, another answer to its question, a request), even an equal one (two runs that timed out).
            let decision =
                committed.value == ours ? Decision(standing: ours, recordedByThisCall: true) : try await decideRun(job, ours)
            guard let standing = decision.standing else {
                loop.send(.ack(job.delivery.tag))  // a run always decides; nothing to publish if it did not
                return
            }
            if decision.recordedByThisCall, !outcome.decidedBefore {
                job.logger.debug("\(outcome.state.rawValue)\(outcome.response.map { ": \($0.code)" } ?? "")")
                finish(outcome, for: job, answered: true)
            } else {
                // Published as it stands, with nothing of this run's, whose resolutions and answer did not decide it.
                job.logger.info("the outcome was decided first elsewhere: \(standing.state.rawValue) (\(standing.response.code))")
                publish(standing, for: job)
            }
        } catch {
            giveUpOrWait(job, error: error)
        }
    }

    /// Records a run's outcome in the ledger. For a ledger without the effects (effects outside any database: a
    /// message sent), the handler has acted by now: a storage failure here (busy, full) is waited out in place, the
    /// delivery held, rather than sent round a retry queue, whose next delivery would find the run's claim, wait
    /// for it to go stale, and run the handler a second time. A ledger with the effects lost nothing with the write
    /// that failed: its delivery waits in a retry queue as any other.
    private func decideRun(_ job: Job, _ outcome: DecidedOutcome) async throws -> Decision {
        var wait = 0.05
        while true {
            do {
                return try await job.ledger.decision(job.id, outcome, attempt: job.attempt, by: .run)
            } catch let error as any RetryableError where error.isRetryable && !job.ledger.holdsEffects {
                job.logger.warning("the run's outcome could not be recorded yet, trying again in \(JSONValue.formatNumber(wait)) s: \(error)")
                // Not `Task.sleep`: the runner's task may be canceled (a time limit passed), and the outcome is to be
                // recorded all the same.
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    DispatchQueue.global().asyncAfter(deadline: .now() + wait) { done.resume() }
                }
                wait = min(wait * 2, 5)
            }
        }
    }

    /// Keeps the job's turn in its ledger, to run when due; whether the ledger keeps it.
    private func keep(_ job: Job, dueAt: Double) async throws -> Bool {
        try await job.ledger.keep(KeptIntent(id: job.id, turn: job.envelope.turn, dueAt: dueAt, body: job.delivery.body, owner: job.owner))
    }

    /// Publishes an outcome the ledger holds and acks the delivery once it is confirmed; `answered` when the job's
    /// message decided it (a denial).
    private func publish(_ decided: DecidedOutcome, for job: Job, answered: Bool = false) {
        finish(PipelineOutcome(state: decided.state, response: decided.response), for: job, answered: answered)
    }

    /// Publishes the job's outcome, as its intent's owner's, with when its run started; with `answered`, the outcome is
    /// the doing of the job's message, and an answer (turn ≥ 1) says what it was.
    private func finish(_ outcome: PipelineOutcome, for job: Job, answered: Bool = false) {
        finish(
            job.delivery, envelope: job.envelope, attempt: job.attempt, outcome: outcome, owner: job.owner, startedAt: job.startedAt,
            kept: job.kept, answered: answered ? Self.answered(job) : nil)
    }

    /// The answer a job's message gave (nil for a submission or a request other than a denial), as the event says it.
    private static func answered(_ job: Job) -> StatusEvent.Answered? {
        let envelope = job.envelope
        guard envelope.turn > 0 else { return nil }
        let confirmed = job.admission.confirmed.sorted()
        switch envelope.request {
        case nil:
            return StatusEvent.Answered(answer: .object(envelope.answers ?? [:]), parameters: envelope.parameters, confirmed: confirmed)
        case .deny:
            return StatusEvent.Answered(answer: .string("denied"), confirmed: confirmed)
        default:
            return nil
        }
    }

    /// Publishes the outcome and acks the delivery once the broker confirmed it.
    /// A refusal goes to its sender (`owner`) and is not the intent's state.
    /// An event over `maxEventBytes` goes without its resolutions, then with
    /// its response cut down: the state it reports stays the decided one (the
    /// ledger keeps the whole response).
    private func finish(
        _ delivery: Delivery, envelope: IntentEnvelope, attempt: Int, outcome: PipelineOutcome, owner: String?, refused: Bool = false,
        startedAt: Double? = nil, kept: Bool = false, answered: StatusEvent.Answered? = nil
    ) {
        // The app's own view, drawn here where the app is, from a run's resolutions.
        let view =
            refused || outcome.resolutions.isEmpty
            ? nil
            : registry.render(
                IntentView(
                    type: envelope.type, state: outcome.state, parameters: envelope.parameters, resolutions: outcome.resolutions,
                    response: outcome.response))
        var event = StatusEvent(
            id: envelope.id, type: envelope.type, state: outcome.state, attempt: attempt, response: outcome.response,
            resolutions: outcome.resolutions.isEmpty ? nil : outcome.resolutions, worker: configuration.workerName,
            turn: envelope.turn, owner: owner, refused: refused, view: view, startedAt: refused ? nil : startedAt,
            dueAt: outcome.state == .scheduled ? envelope.dueAt : nil, kept: outcome.state == .scheduled && kept,
            answered: refused ? nil : answered)
        var body = event.encoded()
        if body.count > configuration.maxEventBytes, event.answered != nil {
            // What the answer was goes first (the store then shows the answer it recorded first).
            event.answered = nil
            body = event.encoded()
        }
        if body.count > configuration.maxEventBytes {
            let size = body.count
            event.resolutions = nil
            if event.encoded().count > configuration.maxEventBytes, let response = event.response {
                event.response = IntentResponse(
                    code: response.code,
                    message:
                        "\(String((response.message ?? "").prefix(1_000))) [the response was \(size) bytes, over the \(configuration.maxEventBytes) a status event may carry: \(FailureCode.outcomeTooLarge)]"
                )
            }
            body = event.encoded()
            logger.warning(
                "an outcome of \(size) bytes was cut down to \(body.count) to be published",
                metadata: ["intent.id": envelope.id, "intent.type": envelope.type])
        }
        loop.send(.publish([configuration.topology.statusMessage(for: event, encoded: body)], thenAck: delivery.tag))
    }

    /// The size of the event an outcome would make, when it is over `maxEventBytes`.
    private func oversized(_ outcome: PipelineOutcome, job: Job) -> Int? {
        let size = StatusEvent(
            id: job.id, type: job.envelope.type, state: outcome.state, attempt: job.attempt, response: outcome.response,
            resolutions: outcome.resolutions, worker: configuration.workerName, turn: job.envelope.turn, owner: job.owner
        ).encoded().count
        return size > configuration.maxEventBytes ? size : nil
    }

    /// A transient failure: the intent waits in a retry queue (with no delivery
    /// held unacked meanwhile) and comes back; past the type's policy it fails.
    private func retry(_ job: Job, reason: String) async throws {
        let policy = registry.retryPolicy(for: job.envelope.type)
        guard job.retries < policy.maxRetries else {
            job.logger.warning("giving up after \(job.retries) retries: \(reason)")
            let failure = DecidedOutcome.failure(
                IntentFailure(
                    code: FailureCode.retriesExhausted, message: "gave up after \(job.retries) retries: \(reason)"))
            if let standing = try await job.ledger.decide(job.id, failure, attempt: job.attempt, by: .run) {
                publish(standing, for: job)
            } else {
                loop.send(.ack(job.delivery.tag))
            }
            return
        }
        configuration.metrics?.increment("intentqueue_worker_retries_total", ["type": job.envelope.type])
        let wait = configuration.topology.retryQueue(forDelay: policy.delay(beforeRetry: job.retries))
        job.logger.info("retry \(job.retries + 1) of \(policy.maxRetries) in \(wait.seconds) s: \(reason)")
        let progress = StatusEvent(
            id: job.id, type: job.envelope.type, state: .inProgress, attempt: job.attempt,
            progress: .init(fraction: nil, message: "retry \(job.retries + 1) of \(policy.maxRetries) in \(wait.seconds) s: \(reason)"),
            worker: configuration.workerName, turn: job.envelope.turn, owner: job.owner)
        loop.send(
            .publish(
                [message(for: progress), again(job, retries: job.retries + 1, storageWaits: job.storageWaits, bucket: wait.bucket)],
                thenAck: job.delivery.tag))
    }

    /// Storage failed (the app database or the ledger: a full disk, an I/O
    /// error, a lock held too long): the intent waits in a retry queue and
    /// comes back, for as long as it takes, without counting against its
    /// retry policy, and nothing is decided meanwhile.
    private func waitForStorage(_ job: Job, error: any Error) {
        waitForStorage(job, reason: "\(error)")
    }

    private func waitForStorage(_ job: Job, reason: String) {
        let delay = min(30, 0.5 * Double(1 << min(job.storageWaits, 6)))
        let wait = configuration.topology.retryQueue(forDelay: delay)
        storageNotices.note { suppressed in
            job.logger.warning(
                "waiting for storage: the intent is tried again in \(wait.seconds) s\(suppressed > 0 ? " (\(suppressed) more intents waiting since the last notice)" : ""): \(reason)"
            )
        }
        loop.send(.publish([again(job, retries: job.retries, storageWaits: job.storageWaits + 1, bucket: wait.bucket)], thenAck: job.delivery.tag))
    }

    /// The delivery's message, back through a retry queue.
    private func again(_ job: Job, retries: Int, storageWaits: Int, bucket: String) -> OutgoingMessage {
        var headers: [String: HeaderValue] = [
            Topology.retriesHeader: .integer(Int64(retries)), Topology.retryBucketHeader: .string(bucket),
        ]
        if storageWaits > 0 { headers[Topology.storageRetriesHeader] = .integer(Int64(storageWaits)) }
        // A released scheduled intent stays released when it comes back (else, early by this worker's clock, it would be dropped).
        if publisher(of: job.delivery).isTrusted, let released = job.delivery.headers[Topology.releasedHeader] {
            headers[Topology.releasedHeader] = released
        }
        // Republished by this worker, the message loses its submitter's user_id: the owner travels in a header, and
        // whether the sender was trusted in another (a retry before the admission names the sender, who must not
        // come back trusted for being republished by a worker).
        Topology.name(owner: job.owner ?? job.sender.user, trusted: job.sender.isTrusted, in: &headers)
        return OutgoingMessage(
            exchange: configuration.topology.retryExchange, routingKey: job.envelope.routingKey, body: job.delivery.body,
            messageID: job.id, type: job.envelope.type, persistent: true, mandatory: true, headers: headers)
    }

    /// A body that is not a usable envelope. Without a usable id it goes to the
    /// dead-letter queue. With one, an id no one has used yet ends
    /// `failure`/`invalidIntent` (decided in the ledger, so the id is then
    /// taken); for an id already in use the failure is a refusal, said to the
    /// sender only, and the intent under that id is untouched.
    private func refuse(_ delivery: Delivery, error: EnvelopeError, sender: Sender) async {
        let messageID = delivery.messageID.flatMap { IntentEnvelope.problem(withID: $0) == nil ? $0 : nil }
        guard let id = error.id ?? messageID else {
            logger.error(
                "unreadable message with no usable id, dead-lettered: \(error.reason)",
                metadata: ["amqp.routing_key": delivery.routingKey, "amqp.user_id": sender.user ?? "none"])
            loop.send(.reject(delivery.tag, requeue: false))
            return
        }
        let candidate = delivery.type ?? delivery.routingKey
        let type = IntentEnvelope.problem(withType: candidate) == nil ? candidate : "unknown"
        logger.warning("invalid submission: \(error.reason)", metadata: ["intent.id": id, "intent.type": type])
        let envelope = IntentEnvelope(id: id, type: type, parameters: [:], submittedAt: 0)
        let failure = IntentFailure(code: FailureCode.invalidIntent, message: error.reason)
        if IntentEnvelope.isScheduledRunID(id), !publisher(of: delivery).isTrusted {
            // Not decided under a schedule's run id, which would take it before the run: said to the sender only.
            finish(delivery, envelope: envelope, attempt: delivery.attempt, outcome: .failure(failure), owner: sender.user, refused: true)
            return
        }
        guard let ledger = registry.ledger(for: type) ?? ownLedger else {
            finish(delivery, envelope: envelope, attempt: delivery.attempt, outcome: .failure(failure), owner: sender.user, refused: true)
            return
        }
        do {
            let admission = try await ledger.admit(id, type: type, sender: sender, turn: 0, request: nil, confirming: [])
            guard admission.refusal == nil, admission.isNew,
                let standing = try await ledger.decide(id, .failure(failure), attempt: delivery.attempt, by: .run)
            else {
                finish(delivery, envelope: envelope, attempt: delivery.attempt, outcome: .failure(failure), owner: sender.user, refused: true)
                return
            }
            finish(
                delivery, envelope: envelope, attempt: delivery.attempt,
                outcome: PipelineOutcome(state: standing.state, response: standing.response), owner: admission.owner)
        } catch {
            // The ledger cannot be written: the message waits in a retry queue, as for any storage failure.
            let waits = Self.count(delivery.headers[Topology.storageRetriesHeader])
            let wait = configuration.topology.retryQueue(forDelay: min(30, 0.5 * Double(1 << min(waits, 6))))
            // Republished by this worker, whose headers the workers believe: the sender's own are not kept (an owner
            // it named would come back believed), only the sender as verified.
            let kept: Set<String> = [Topology.retriesHeader, Topology.releasedHeader]
            var headers = sender.isTrusted ? delivery.headers.filter { kept.contains($0.key) } : [:]
            headers[Topology.retryBucketHeader] = .string(wait.bucket)
            headers[Topology.storageRetriesHeader] = .integer(Int64(waits + 1))
            Topology.name(owner: sender.user, trusted: sender.isTrusted, in: &headers)
            loop.send(
                .publish(
                    [
                        OutgoingMessage(
                            exchange: configuration.topology.retryExchange, routingKey: type, body: delivery.body, messageID: id, type: type,
                            persistent: true, mandatory: true, headers: headers)
                    ], thenAck: delivery.tag))
        }
    }

    private func message(for event: StatusEvent) -> OutgoingMessage {
        configuration.topology.statusMessage(for: event)
    }
}

/// The kept intents a worker took from its ledgers, by the number of their local delivery tag: waiting for a slot
/// or running, then (run) until what they published is settled (`ConsumerLoop.Configuration.onLocalSettled`).
final class KeptRuns: Sendable {
    private struct State {
        var next: UInt64 = 0
        var runs: [UInt64: (intent: KeptIntent, ledger: any OutcomeLedger)] = [:]
        var unfinished = Set<UInt64>()
    }

    private let state = Mutex(State())

    /// Notes a run of `intent`, taken from `ledger`; returns its number.
    func add(_ intent: KeptIntent, in ledger: any OutcomeLedger) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.runs[state.next] = (intent, ledger)
            state.unfinished.insert(state.next)
            return state.next
        }
    }

    /// Notes that the run numbered `number` has ended (what it published may wait for the broker).
    func finished(_ number: UInt64) {
        _ = state.withLock { $0.unfinished.remove(number) }
    }

    /// The run numbered `number`, no longer noted; nil when it was not.
    func remove(_ number: UInt64) -> (intent: KeptIntent, ledger: any OutcomeLedger)? {
        state.withLock { state in
            state.unfinished.remove(number)
            return state.runs.removeValue(forKey: number)
        }
    }

    /// How many runs wait for a slot or are running: what the worker has taken on and not done.
    var unfinished: Int { state.withLock { $0.unfinished.count } }
}

/// How a worker names itself when it takes a kept intent, and how it tells whether another still holds one.
/// A ledger is shared by the workers of one machine (or of the containers sharing one volume): the name is
/// the host, the process id and a token drawn at start, so a process that took the place of one that ended
/// (a restarted container is process 1 again) is told apart from it.
struct KeptTaker: Sendable {
    let host: String
    let pid: Int32
    let token: String

    var name: String { "\(host) \(pid) \(token)" }

    static let current: KeptTaker = {
        var buffer = [CChar](repeating: 0, count: 256)
        let host =
            gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
        return KeptTaker(host: host.isEmpty ? "unknown" : host, pid: getpid(), token: String(UInt64.random(in: 1...UInt64.max), radix: 36))
    }()

    /// How long a kept intent taken on another host (whose processes cannot be looked at) counts as held.
    static let otherHostLease = 900.0

    /// Whether the taker named `name`, which took one at `takenAt`, still holds it: a process of this host
    /// that is still running (and is not a later process with its id), or, on another host, for the lease.
    @Sendable static func holds(_ name: String, takenAt: Double) -> Bool {
        let parts = name.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, let pid = Int32(parts[1]) else { return false }
        let me = current
        guard parts[0] == me.host else { return Date().timeIntervalSince1970 - takenAt < otherHostLease }
        if pid == me.pid { return parts[2] == me.token }
        return kill(pid, 0) == 0 || errno == EPERM
    }
}

/// A run's `inProgress` event, held back for `startedEventDelay`: the deadline thread publishes it if
/// the run is still going then, a progress event publishes it first, and once the run's outcome (or its
/// retry) is on its way it is never published. Held here rather than on the I/O thread, so that a quick
/// run costs that thread no wake-up for it at all. Its message is written only when it is published: most
/// runs never need it.
final class StartedEvent: Sendable {
    /// Until it is published or superseded.
    private let waiting = Mutex(true)
    private let message: @Sendable () -> OutgoingMessage
    private let transport: any DeliveryTransport
    private let token = Atomic<Int>(-1)

    /// Published at once when `delay` is 0, else by the deadline thread (which looks every 20 ms) once it has passed.
    init(on transport: any DeliveryTransport, after delay: Double, message: @escaping @Sendable () -> OutgoingMessage) {
        self.message = message
        self.transport = transport
        if delay <= 0 {
            publish()
        } else {
            token.store(Deadlines.shared.schedule(after: delay) { [self] in publish() }, ordering: .releasing)
        }
    }

    /// Publishes it, unless it was already or the outcome came first. Sent under the lock, so that
    /// whatever is sent after `supersede()` returns follows it.
    func publish() {
        waiting.withLock { waiting in
            guard waiting else { return }
            waiting = false
            transport.send(.publish([message()], thenAck: nil))
        }
    }

    /// The run's outcome goes next: from now on the event is not published.
    func supersede() {
        waiting.withLock { $0 = false }
        Deadlines.shared.clear(token.load(ordering: .acquiring))
    }
}
