import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

@testable import IntentWorker

/// With the worker's own ledger (handlers whose effects are outside any database), a run holds a claim, and a cancel
/// that comes meanwhile is only noted: the run's end decides it. A run that ends without an outcome (a type resolved
/// at submission, kept for its due time) gives its claim back, and the cancel then stands: that is what is published,
/// not `scheduled`, or the store would say `cancelRequested` until the due time.
@Suite(.timeLimit(.minutes(10)))
struct ClaimReleaseTests {
    /// "Call them then": resolved when submitted, the resolution held until the test lets it go.
    struct Call: Intent {
        static let typeName = "Call"
        @Parameter("Whom?") var whom: String
    }

    struct CallHandler: IntentHandler {
        let resolving: AsyncStream<Void>.Continuation
        let gate: WorkerServiceTests.Gate

        var resolutionTime: ResolutionTime { .atSubmission }

        func resolve(_ intent: Call, context: IntentContext) async throws {
            resolving.yield()
            await gate.wait()
        }

        func handle(_ intent: Call, context: IntentContext) async throws -> IntentResponse { .success("called") }
    }

    /// A worker on an in-memory transport, with `handler` and `ledger` as its own.
    static func worker(
        _ handler: some IntentHandler, ledger: any OutcomeLedger, claimRenewal: Double = 300
    ) throws -> (WorkerService, InMemoryTransport) {
        var registry = IntentRegistry()
        try registry.register(handler)
        var configuration = WorkerConfiguration(brokerURL: try BrokerURL("amqp://guest:guest@127.0.0.1:1/%2f"), concurrency: 2)
        configuration.workerName = "test-worker"
        configuration.ledger = ledger
        configuration.claimRenewal = claimRenewal
        let topology = configuration.topology
        let made = Mutex<InMemoryTransport?>(nil)
        let worker = try WorkerService(registry: registry, configuration: configuration, logger: .disabled()) { loop, _ in
            let transport = InMemoryTransport(configuration: loop, loopback: [topology.cancelExchange])
            made.withLock { $0 = transport }
            return transport
        }
        return (worker, try #require(made.withLock { $0 }))
    }

    /// The cancel comes to another worker sharing the ledger: the run's own worker never hears of it, and only the
    /// ledger's release decides it.
    @Test func aCancelThatComesWhileARunHoldsItsClaimIsPublishedWhenTheRunGivesTheClaimBack() async throws {
        let gate = WorkerServiceTests.Gate()
        let (resolving, resolvingNow) = AsyncStream<Void>.makeStream()
        let handler = CallHandler(resolving: resolvingNow, gate: gate)
        let ledger = InMemoryOutcomeLedger()
        let (runner, runnerTransport) = try Self.worker(handler, ledger: ledger)
        let (other, otherTransport) = try Self.worker(handler, ledger: ledger)
        let running = [Task { try await runner.run() }, Task { try await other.run() }]

        let due = Date().timeIntervalSince1970 + 3_600
        let call = IntentEnvelope(id: "c", type: Call.typeName, parameters: ["whom": "Bob"], submittedAt: 0, dueAt: due)
        let callTag = runnerTransport.deliver(body: call.encoded(), routingKey: Call.typeName, messageID: "c", type: Call.typeName, userID: "alice")
        var resolvingEvents = resolving.makeAsyncIterator()
        await resolvingEvents.next()
        // The run holds its claim: the cancel is noted in the ledger, decides nothing, and is acked.
        let cancel = IntentEnvelope.request(.cancel, id: "c", type: Call.typeName)
        let cancelTag = otherTransport.deliver(
            body: cancel.encoded(), routingKey: Call.typeName, messageID: "c", type: Call.typeName, userID: "alice")
        #expect(await otherTransport.wait { $0.acked.contains(cancelTag) })
        #expect(try await ledger.outcome(of: "c") == nil, "noted, not decided, while the run holds the claim")
        gate.open()
        #expect(await runnerTransport.wait { $0.acked.contains(callTag) })

        let events = try runnerTransport.published.filter { $0.exchange == "intents.status" && $0.messageID == "c" }.map {
            try StatusEvent.decode($0.body)
        }
        #expect(events.last?.state == .canceled, "\(events.map(\.state))")
        #expect(try await ledger.outcome(of: "c")?.state == .canceled)
        for worker in [runner, other] { worker.stop() }
        for task in running { _ = await task.result }
    }

    /// The worker's own ledger, whose first decision of a run's outcome fails as a busy database would.
    final class FlakyLedger: OutcomeLedger {
        let inner = InMemoryOutcomeLedger()
        let failures = Mutex(1)
        var holdsEffects: Bool { false }

        func outcome(of intentID: String) async throws -> DecidedOutcome? { try await inner.outcome(of: intentID) }
        func admit(
            _ intentID: String, type: String, sender: Sender, turn: Int, request: IntentRequest?, confirming: [String]
        ) async throws -> Admission {
            try await inner.admit(intentID, type: type, sender: sender, turn: turn, request: request, confirming: confirming)
        }
        func decide(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> DecidedOutcome? {
            if case .run = decider, takeFailure() {
                throw DatabaseError(code: 5, message: "database is locked", context: "recording the outcome")
            }
            return try await inner.decide(intentID, outcome, attempt: attempt, by: decider)
        }
        /// Whether this decision fails (one of the failures left).
        private func takeFailure() -> Bool {
            failures.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0
            }
        }

        func ask(_ intentID: String, turn: Int, confirmations: [String], granted: Set<String>) async throws -> DecidedOutcome? {
            try await inner.ask(intentID, turn: turn, confirmations: confirmations, granted: granted)
        }
        func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome? { try await inner.claim(intentID, attempt: attempt) }
        func release(_ intentID: String) async throws { try await inner.release(intentID) }
    }

    /// "Ring them now", counted each time its handler runs.
    struct Ring: Intent {
        static let typeName = "Ring"
        @Parameter("Whom?") var whom: String
    }

    final class Rings: Sendable {
        let count = Mutex(0)
    }

    struct RingHandler: IntentHandler {
        let rings: Rings

        func handle(_ intent: Ring, context: IntentContext) async throws -> IntentResponse {
            rings.count.withLock { $0 += 1 }
            return .success("rang")
        }
    }

    /// "Ring them now", which asks who first when told "?", or finds the line busy (a retry) when told "busy".
    struct RingOrAskHandler: IntentHandler {
        let rings: Rings

        func resolve(_ intent: Ring, context: IntentContext) async throws {
            if intent.whom == "?" { throw intent.$whom.needsValue() }
        }

        func handle(_ intent: Ring, context: IntentContext) async throws -> IntentResponse {
            if intent.whom == "busy" { throw TransientFailure("the line is busy") }
            rings.count.withLock { $0 += 1 }
            return .success("rang")
        }
    }

    /// The worker's own ledger on file, holding the claim of a run (attempt 1) whose worker died after a cancel by
    /// its owner was noted, twenty minutes ago: past the claim's lifetime.
    static func ledgerWithADeadRunCanceled(_ id: String) async throws -> DatabaseOutcomeLedger {
        let ledger = try DatabaseOutcomeLedger(path: NSTemporaryDirectory() + "takeover-\(UUID().uuidString).sqlite")
        let alice = Sender(user: "alice")
        _ = try await ledger.admit(id, type: Ring.typeName, sender: alice, turn: 0, request: nil, confirming: [])
        #expect(try await ledger.claim(id, attempt: 1) == nil)
        #expect(try await ledger.decide(id, .canceled("stop"), attempt: 1, by: .cancel) == nil)
        try await ledger.queue.write { db in
            try db.run("UPDATE intent_pending SET updated_at = updated_at - 1200, claim_until = claim_until - 1200")
        }
        return ledger
    }

    /// The submission redelivered (its worker died holding it) to a worker of `handler` on `ledger`; its status events.
    static func redeliver(_ ring: IntentEnvelope, to handler: RingOrAskHandler, ledger: DatabaseOutcomeLedger) async throws -> [StatusEvent] {
        let (worker, transport) = try Self.worker(handler, ledger: ledger)
        let running = Task { try await worker.run() }
        let tag = transport.deliver(
            body: ring.encoded(), routingKey: Ring.typeName, messageID: ring.id, type: Ring.typeName, userID: "alice", deliveryCount: 1)
        #expect(await transport.wait { $0.acked.contains(tag) })
        worker.stop()
        _ = await running.result
        return try transport.published.filter { $0.exchange == "intents.status" && $0.messageID == ring.id }.map {
            try StatusEvent.decode($0.body)
        }
    }

    /// The run that takes over a dead run's claim (on a worker that never heard of the cancel) would ask a question, or
    /// wait for a retry: the cancel noted during the dead run ends it `canceled` instead, and no question is asked.
    @Test(arguments: ["?", "busy"])
    func aRunThatTakesOverADeadRunsClaimEndsCanceledWhenItWouldAskOrRetry(whom: String) async throws {
        let ledger = try await Self.ledgerWithADeadRunCanceled("t")
        let ring = IntentEnvelope(id: "t", type: Ring.typeName, parameters: ["whom": .string(whom)], submittedAt: 0)
        let events = try await Self.redeliver(ring, to: RingOrAskHandler(rings: Rings()), ledger: ledger)
        #expect(events.last?.state == .canceled, "\(events.map(\.state))")
        #expect(!events.contains { $0.state == .needsInput }, "no question is asked of a canceled intent")
        #expect(try await ledger.outcome(of: "t")?.state == .canceled)
    }

    /// "Ring them now", whose handler says it started, then waits for the test.
    struct GatedRingHandler: IntentHandler {
        let rings: Rings
        let started: AsyncStream<Void>.Continuation
        let gate: WorkerServiceTests.Gate

        func handle(_ intent: Ring, context: IntentContext) async throws -> IntentResponse {
            rings.count.withLock { $0 += 1 }
            started.yield()
            await gate.wait()
            return .success("rang")
        }
    }

    /// When the intent's claim runs out, as the ledger's row says.
    static func claimUntil(_ id: String, in ledger: DatabaseOutcomeLedger) throws -> Double? {
        try ledger.queue.sync { db in
            try db.queryFirst("SELECT claim_until FROM intent_pending WHERE intent_id = ?", [.text(id)]) { $0.optionalDouble(0) } ?? nil
        }
    }

    /// A run longer than its claim's lifetime keeps its claim while it lives: a second delivery of the intent finds it
    /// held and waits, instead of taking the claim for a dead worker's and running the handler beside the first. (A
    /// claim used to run out after 15 minutes, or the time limit, whatever the run was still doing.)
    @Test func aRunLongerThanItsClaimsLifetimeKeepsItsClaimAndASecondDeliveryWaits() async throws {
        let rings = Rings()
        let gate = WorkerServiceTests.Gate()
        let (started, startedNow) = AsyncStream<Void>.makeStream()
        let ledger = try DatabaseOutcomeLedger(path: NSTemporaryDirectory() + "renewal-\(UUID().uuidString).sqlite")
        let handler = GatedRingHandler(rings: rings, started: startedNow, gate: gate)
        let (worker, transport) = try Self.worker(handler, ledger: ledger, claimRenewal: 0.05)
        let running = Task { try await worker.run() }
        let ring = IntentEnvelope(id: "long", type: Ring.typeName, parameters: ["whom": "Bob"], submittedAt: 0)
        let first = transport.deliver(body: ring.encoded(), routingKey: Ring.typeName, messageID: "long", type: Ring.typeName, userID: "alice")
        var starts = started.makeAsyncIterator()
        await starts.next()
        // The claim's lifetime passes while the handler runs, as if it had run for 20 minutes.
        let now = Date().timeIntervalSince1970
        try await ledger.queue.write { db in
            try db.run("UPDATE intent_pending SET updated_at = updated_at - 1200, claim_until = ?", [.real(now - 1)])
        }
        // The worker renews it while the run lives.
        #expect(await transport.wait { _ in (try? Self.claimUntil("long", in: ledger)) ?? 0 > now }, "the claim was renewed")
        // A second delivery (the first's connection lost, say) finds the claim held: it waits in a retry queue.
        let second = transport.deliver(
            body: ring.encoded(), routingKey: Ring.typeName, messageID: "long", type: Ring.typeName, userID: "alice", deliveryCount: 1)
        #expect(await transport.wait { $0.acked.contains(second) })
        #expect(rings.count.withLock { $0 } == 1, "the handler did not run beside the first run")
        gate.open()
        #expect(await transport.wait { $0.acked.contains(first) })
        let events = try transport.published.filter { $0.exchange == "intents.status" && $0.messageID == "long" }.map {
            try StatusEvent.decode($0.body)
        }
        #expect(events.last?.state == .success, "\(events.map(\.state))")
        #expect(try Self.claimUntil("long", in: ledger) == nil, "decided: the claim is gone, and renewed no more")
        worker.stop()
        _ = await running.result
    }

    /// A call placed, then its outcome not recorded (the ledger busy for a moment): the handler has acted, and must
    /// not act again. The worker waits the failure out with the delivery held, and publishes the outcome; before,
    /// the delivery went round a retry queue, and its next delivery found the run's claim, waited for it to go
    /// stale (15 minutes), and placed the call a second time.
    @Test func aRunWhoseOutcomeCannotBeRecordedYetIsRecordedLaterWithoutRunningAgain() async throws {
        let rings = Rings()
        let ledger = FlakyLedger()
        let (worker, transport) = try Self.worker(RingHandler(rings: rings), ledger: ledger)
        let running = Task { try await worker.run() }
        let ring = IntentEnvelope(id: "r", type: Ring.typeName, parameters: ["whom": "Bob"], submittedAt: 0)
        let tag = transport.deliver(body: ring.encoded(), routingKey: Ring.typeName, messageID: "r", type: Ring.typeName, userID: "alice")
        #expect(await transport.wait { $0.acked.contains(tag) })

        #expect(ledger.failures.withLock { $0 } == 0, "the first decision failed")
        let published = transport.published
        #expect(!published.contains { $0.exchange == "intents.retry" }, "nothing sent round a retry queue")
        let events = try published.filter { $0.exchange == "intents.status" && $0.messageID == "r" }.map { try StatusEvent.decode($0.body) }
        #expect(events.last?.state == .success, "\(events.map(\.state))")
        #expect(try await ledger.outcome(of: "r")?.state == .success)
        #expect(rings.count.withLock { $0 } == 1)
        worker.stop()
        _ = await running.result
    }
}
