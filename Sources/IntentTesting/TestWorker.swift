import Foundation
import IntentQueue
import Synchronization

/// The real worker — the pipeline, the ledger, the status events and the acks
/// — on an in-memory transport, for unit tests of an app's handlers with no
/// broker: submit an intent, get the outcome the status store would record.
///
/// ```swift
/// let worker = try TestWorker(AddTodoHandler(database: database))
/// let asked = try await worker.submit("AddTodo", ["title": "Buy milk", "list": "s"])
/// #expect(asked.state == .needsInput)
/// #expect(try await worker.answer(asked.id, ["list": "Shopping"]).state == .success)
/// ```
public final class TestWorker: Sendable {
    /// What the worker published, acked and rejected, to look at more closely.
    public let transport: InMemoryTransport
    /// The broker user the test submits as: each intent's owner.
    public let user: String
    private let worker: WorkerService
    private let running: Task<Void, any Error>
    private let submitted = Mutex<[String: IntentEnvelope]>([:])

    /// Thrown when the worker does not take a message within the timeout.
    public struct Timeout: Error, CustomStringConvertible {
        /// What did not happen: the id was never submitted, no question was asked, or the worker did not take the message in time.
        public var description: String
    }

    /// A worker for these handlers. Types whose handler keeps no ledger of its
    /// own decide their outcomes in memory; `configure` adjusts the rest
    /// (`allowedUsers` for restricted types, `timeLimits`, `concurrency`;
    /// `startedEventDelay` is 0, so every run's `inProgress` is published).
    public init<each H: IntentHandler>(
        _ handler: repeat each H, user: String = "tester", configure: (inout WorkerConfiguration) -> Void = { _ in }
    ) throws {
        var registry = IntentRegistry()
        for handler in repeat each handler {
            try registry.register(handler)
        }
        var configuration = WorkerConfiguration(brokerURL: try BrokerURL("amqp://worker:worker@127.0.0.1:1/%2f"), concurrency: 4)
        configuration.workerName = "test-worker"
        configuration.ledger = InMemoryOutcomeLedger()
        // Every event a run has, as a run that outlasts the delay publishes them: `inProgress` too.
        configuration.startedEventDelay = 0
        configure(&configuration)
        let loopback = configuration.topology.cancelExchange
        let made = Mutex<InMemoryTransport?>(nil)
        worker = try WorkerService(registry: registry, configuration: configuration, logger: .disabled()) { loop, _ in
            let transport = InMemoryTransport(configuration: loop, loopback: [loopback])
            made.withLock { $0 = transport }
            return transport
        }
        transport = made.withLock { $0! }
        self.user = user
        running = Task { [worker] in try await worker.run() }
    }

    /// Submits a typed intent; returns its outcome once the worker is done with it.
    public func submit<I: Intent>(_ intent: I, id: String = IntentID.make(), timeout: Double = 120) async throws -> StatusEvent {
        try await take(try IntentEnvelope(intent, id: id), timeout: timeout)
    }

    /// Submits an intent by type and parameters, as a client would on the wire
    /// (`lenient`: as typed on a command line).
    public func submit(
        _ type: String, _ parameters: [String: JSONValue], id: String = IntentID.make(), lenient: Bool = false,
        timeout: Double = 120
    ) async throws -> StatusEvent {
        try await take(
            IntentEnvelope(id: id, type: type, parameters: parameters, submittedAt: Date().timeIntervalSince1970, lenientParameters: lenient),
            timeout: timeout)
    }

    /// Answers the question an intent asked, as `intent-submit --answer` does.
    public func answer(_ id: String, _ answers: [String: JSONValue], lenient: Bool = false, timeout: Double = 120) async throws -> StatusEvent {
        let (asked, question) = try waiting(id)
        return try await take(
            IntentEnvelope.answering(
                id: id, type: asked.type, parameters: asked.parameters, turn: question.turn ?? 0,
                answers: IntentEnvelope.applying(answers, to: asked.parameters, asked: question.resolutions ?? []),
                confirmed: asked.confirmed ?? [], group: asked.group, lenient: lenient || asked.lenientParameters), timeout: timeout)
    }

    /// Confirms what an intent asks to confirm (a value, or the whole intent).
    public func confirm(_ id: String, timeout: Double = 120) async throws -> StatusEvent {
        let (asked, question) = try waiting(id)
        let confirming = (question.resolutions ?? []).filter {
            if case .confirmationRequired = $0.result { return true } else { return false }
        }.map(\.parameter)
        return try await take(
            IntentEnvelope.answering(
                id: id, type: asked.type, parameters: asked.parameters, turn: question.turn ?? 0, answers: [:],
                confirmed: asked.confirmed ?? [], confirming: confirming, group: asked.group, lenient: asked.lenientParameters), timeout: timeout)
    }

    /// Refuses the confirmation an intent asks for: it ends `failure`/`denied`.
    public func deny(_ id: String, timeout: Double = 120) async throws -> StatusEvent {
        let (asked, question) = try waiting(id)
        return try await take(.request(.deny, id: id, type: asked.type, turn: (question.turn ?? 0) + 1), timeout: timeout)
    }

    /// Cancels an intent not decided yet: it ends `canceled`, or keeps the outcome it has.
    public func cancel(_ id: String, timeout: Double = 120) async throws -> StatusEvent {
        guard let asked = submitted.withLock({ $0[id] }) else { throw Timeout(description: "\(id) was never submitted") }
        return try await take(.request(.cancel, id: id, type: asked.type), timeout: timeout, remember: false)
    }

    /// The status events published for an intent, in order.
    public func events(_ id: String) -> [StatusEvent] {
        transport.published.filter { $0.exchange == "intents.status" && $0.messageID == id }.compactMap { try? StatusEvent.decode($0.body) }
    }

    /// Stops the worker; call it at the end of each test.
    public func stop() async {
        worker.stop()
        _ = await running.result
    }

    private func waiting(_ id: String) throws -> (IntentEnvelope, StatusEvent) {
        guard let asked = submitted.withLock({ $0[id] }), let question = events(id).last(where: { $0.state == .needsInput }) else {
            throw Timeout(description: "\(id) never asked a question")
        }
        return (asked, question)
    }

    private func take(_ envelope: IntentEnvelope, timeout: Double, remember: Bool = true) async throws -> StatusEvent {
        if remember { submitted.withLock { $0[envelope.id] = envelope } }
        let tag = transport.deliver(
            body: envelope.encoded(), routingKey: envelope.routingKey, messageID: envelope.id, type: envelope.type, userID: user)
        guard await transport.wait(timeout: timeout, until: { $0.acked.contains(tag) }), let outcome = events(envelope.id).last else {
            throw Timeout(description: "the worker did not take \(envelope.id) within \(timeout) s")
        }
        return outcome
    }
}
