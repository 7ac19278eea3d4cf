import Foundation
import IntentAMQP
import IntentKit

/// Consumes submitted intents and runs them through the pipeline.
///
/// Deliveries come from the I/O thread; each runs as a task, at most
/// `concurrency` at once. A task publishes `inProgress`, runs resolve →
/// confirm → handle, publishes the outcome (`needsInput`, `success` or
/// `failure`) and asks for the delivery to be acked once the broker has
/// confirmed that event, so an intent is never acked before its outcome is safe.
public final class WorkerService: Service {
    private let registry: IntentRegistry
    private let configuration: WorkerConfiguration
    private let logger: Logger
    private let loop: ConsumerLoop

    public init(registry: IntentRegistry, configuration: WorkerConfiguration, logger: Logger) {
        self.registry = registry
        self.configuration = configuration
        self.logger = logger
        let topology = configuration.topology
        let types = registry.typeNames
        loop = ConsumerLoop(
            configuration: ConsumerLoop.Configuration(
                url: configuration.brokerURL, queue: topology.workQueue, prefetch: configuration.prefetch,
                heartbeat: configuration.heartbeat,
                declare: { connection in try topology.declareWork(on: connection, types: types) }),
            logger: logger.with(["component": "worker"]))
    }

    public func run() async throws {
        logger.info("worker starting", metadata: [
            "worker.types": registry.typeNames.joined(separator: ","),
            "worker.concurrency": "\(configuration.concurrency)", "amqp.prefetch": "\(configuration.prefetch)",
        ])
        loop.start()
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await delivery in loop.deliveries {
                if running >= configuration.concurrency {
                    await group.next()
                    running -= 1
                }
                group.addTask { await self.process(delivery) }
                running += 1
            }
        }
        await loop.shutdown()
        logger.info("worker stopped")
    }

    public func stop() {
        loop.stopConsuming()
    }

    /// Whether the worker is connected to the broker now.
    public var isConnected: Bool { loop.isConnected }

    func process(_ delivery: Delivery) async {
        let envelope: IntentEnvelope
        do {
            envelope = try IntentEnvelope.decode(delivery.body)
        } catch {
            refuse(delivery, error: error)
            return
        }
        let attempt = delivery.attempt
        let logger = self.logger.with(["intent.id": envelope.id, "intent.type": envelope.type, "intent.attempt": "\(attempt)"])
        let loop = self.loop
        let started = StatusEvent(id: envelope.id, type: envelope.type, state: .inProgress, attempt: attempt, worker: configuration.workerName)
        loop.send(.publish([message(for: started)], thenAck: nil))

        let context = IntentContext(
            intentID: envelope.id, intentType: envelope.type, attempt: attempt, submittedAt: envelope.submittedAt,
            logger: self.logger,
            progress: { [configuration] progress in
                let event = StatusEvent(
                    id: envelope.id, type: envelope.type, state: .inProgress, attempt: attempt, progress: progress,
                    worker: configuration.workerName)
                loop.send(.publish([Self.message(for: event, topology: configuration.topology)], thenAck: nil))
            })
        let outcome = await IntentPipeline.run(envelope, registry: registry, context: context)
        let event = StatusEvent(
            id: envelope.id, type: envelope.type, state: outcome.state, attempt: attempt, response: outcome.response,
            resolutions: outcome.resolutions.isEmpty ? nil : outcome.resolutions, worker: configuration.workerName)
        logger.debug("\(outcome.state.rawValue)\(outcome.response.map { ": \($0.code)" } ?? "")")
        loop.send(.publish([message(for: event)], thenAck: delivery.tag))
    }

    /// A body that is not a usable envelope: recorded as `failure` when its id
    /// can be read, otherwise sent to the dead-letter queue.
    private func refuse(_ delivery: Delivery, error: EnvelopeError) {
        guard let id = error.id ?? delivery.messageID, !id.isEmpty else {
            logger.error("unreadable message with no id, dead-lettered: \(error.reason)",
                         metadata: ["amqp.routing_key": delivery.routingKey])
            loop.send(.reject(delivery.tag, requeue: false))
            return
        }
        let type = delivery.type ?? delivery.routingKey
        logger.warning("invalid submission: \(error.reason)", metadata: ["intent.id": id, "intent.type": type])
        let event = StatusEvent(
            id: id, type: type, state: .failure, attempt: delivery.attempt,
            response: IntentResponse(code: FailureCode.invalidIntent, message: error.reason), worker: configuration.workerName)
        loop.send(.publish([message(for: event)], thenAck: delivery.tag))
    }

    private func message(for event: StatusEvent) -> OutgoingMessage {
        Self.message(for: event, topology: configuration.topology)
    }

    static func message(for event: StatusEvent, topology: Topology) -> OutgoingMessage {
        OutgoingMessage(
            exchange: topology.statusExchange, routingKey: event.routingKey, body: event.encoded(),
            messageID: event.id, type: event.type, persistent: true)
    }
}
