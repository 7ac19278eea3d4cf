import Foundation
import IntentAMQP
import IntentKit
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

    /// A worker on an in-memory transport, with the handler above and `ledger` as its own.
    static func worker(_ handler: CallHandler, ledger: InMemoryOutcomeLedger) throws -> (WorkerService, InMemoryTransport) {
        var registry = IntentRegistry()
        try registry.register(handler)
        var configuration = WorkerConfiguration(brokerURL: try BrokerURL("amqp://guest:guest@127.0.0.1:1/%2f"), concurrency: 2)
        configuration.workerName = "test-worker"
        configuration.ledger = ledger
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
}
