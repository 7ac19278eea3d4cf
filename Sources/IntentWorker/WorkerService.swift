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
    private let cancellations = Cancellations()

    public init(registry: IntentRegistry, configuration: WorkerConfiguration, logger: Logger) {
        self.registry = registry
        self.configuration = configuration
        self.logger = logger
        let topology = configuration.topology
        let types = registry.typeNames
        let token = cancellations.token
        var loopConfiguration = ConsumerLoop.Configuration(
            url: configuration.brokerURL, queue: topology.workQueue, prefetch: configuration.prefetch,
            heartbeat: configuration.heartbeat, faults: configuration.faults,
            declare: { connection in
                try topology.declareWork(on: connection, types: types)
                // Read back, this marker says the stream has been read up to now.
                try connection.publish(OutgoingMessage(
                    exchange: topology.cancelExchange, routingKey: "", body: [], persistent: true,
                    headers: [Topology.syncHeader: .string(token)]))
            })
        loopConfiguration.extraQueues = [(topology.cancelStream, ["x-stream-offset": .string("first")])]
        let cancellations = self.cancellations
        loopConfiguration.onExtraDelivery = { delivery in Self.noteCancellation(delivery, in: cancellations) }
        loop = ConsumerLoop(configuration: loopConfiguration, logger: logger.with(["component": "worker"]))
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

    /// A message of the cancellation stream (on the I/O thread): a canceled id, or a worker's marker.
    private static func noteCancellation(_ delivery: Delivery, in cancellations: Cancellations) {
        if let marker = delivery.headers[Topology.syncHeader]?.stringValue {
            if marker == cancellations.token { cancellations.markCaughtUp() }
        } else if let id = (try? JSONValue.parse(delivery.body))?["id"]?.stringValue {
            cancellations.add(id)
        }
    }

    /// Whether the worker is connected to the broker now.
    public var isConnected: Bool { loop.isConnected }

    func process(_ delivery: Delivery) async {
        configuration.faults.hit(.afterReceive, intentID: delivery.messageID)
        let envelope: IntentEnvelope
        do throws(EnvelopeError) {
            guard delivery.body.count <= configuration.maxBodyBytes else {
                throw EnvelopeError(id: nil, reason: "the body of \(delivery.body.count) bytes is over the limit of \(configuration.maxBodyBytes)")
            }
            envelope = try IntentEnvelope.decode(delivery.body)
        } catch {
            refuse(delivery, error: error)
            return
        }
        let retries = Int(clamping: delivery.headers[Topology.retriesHeader]?.integerValue ?? 0)
        let attempt = delivery.attempt + retries
        let logger = self.logger.with(["intent.id": envelope.id, "intent.type": envelope.type, "intent.attempt": "\(attempt)"])
        let received = ContinuousClock.now
        let loop = self.loop
        let turn = envelope.turn
        if await cancellations.isCanceled(envelope.id) {
            logger.info("canceled before it was handled")
            finish(delivery, envelope: envelope, attempt: attempt, outcome: PipelineOutcome(
                state: .canceled, response: IntentResponse(code: FailureCode.canceled, message: "canceled before it was handled")))
            return
        }
        if registry.isRestricted(envelope.type), !(delivery.userID.map(configuration.allowedUsers.contains) ?? false) {
            logger.warning("restricted intent from a submitter not on the allow-list", metadata: ["amqp.user_id": delivery.userID ?? "none"])
            finish(delivery, envelope: envelope, attempt: attempt, outcome: .failure(IntentFailure(
                code: FailureCode.failureRequiringAppAuthentication,
                message: "\(envelope.type) is restricted: the submitter \(delivery.userID.map { "'\($0)'" } ?? "(no user_id)") is not allowed")))
            return
        }
        let started = StatusEvent(
            id: envelope.id, type: envelope.type, state: .inProgress, attempt: attempt, worker: configuration.workerName, turn: turn)
        loop.send(.publish([message(for: started)], thenAck: nil))

        var context = IntentContext(
            intentID: envelope.id, intentType: envelope.type, attempt: attempt, submittedAt: envelope.submittedAt,
            logger: logger,
            progress: { [configuration] progress in
                let event = StatusEvent(
                    id: envelope.id, type: envelope.type, state: .inProgress, attempt: attempt, progress: progress,
                    worker: configuration.workerName, turn: turn)
                loop.send(.publish([configuration.topology.statusMessage(for: event)], thenAck: nil))
            })
        context.userID = delivery.userID
        let cancellations = self.cancellations
        context.isCanceled = { await cancellations.isCanceled(envelope.id) }
        let outcome = await IntentPipeline.run(
            envelope, registry: registry, context: context, timeLimit: configuration.timeLimits[envelope.type])
        configuration.faults.hit(.afterHandle, intentID: envelope.id)
        if let metrics = configuration.metrics {
            let elapsed = received.duration(to: .now)
            metrics.observe("intentqueue_worker_handle_duration_seconds", ["type": envelope.type],
                            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            metrics.increment("intentqueue_worker_handled_total", [
                "type": envelope.type, "state": outcome.retryReason == nil ? outcome.state.rawValue : "retry",
            ])
        }
        if let reason = outcome.retryReason {
            retry(delivery, envelope: envelope, retries: retries, attempt: attempt, reason: reason, logger: logger)
            return
        }
        logger.debug("\(outcome.state.rawValue)\(outcome.response.map { ": \($0.code)" } ?? "")")
        finish(delivery, envelope: envelope, attempt: attempt, outcome: outcome)
    }

    /// Publishes the outcome and acks the delivery once the broker confirmed it.
    private func finish(_ delivery: Delivery, envelope: IntentEnvelope, attempt: Int, outcome: PipelineOutcome) {
        let event = StatusEvent(
            id: envelope.id, type: envelope.type, state: outcome.state, attempt: attempt, response: outcome.response,
            resolutions: outcome.resolutions.isEmpty ? nil : outcome.resolutions, worker: configuration.workerName,
            turn: envelope.turn)
        loop.send(.publish([message(for: event)], thenAck: delivery.tag))
    }

    /// A transient failure: the intent waits in a retry queue (with no delivery
    /// held unacked meanwhile) and comes back; past the type's policy it fails.
    private func retry(_ delivery: Delivery, envelope: IntentEnvelope, retries: Int, attempt: Int, reason: String, logger: Logger) {
        let policy = registry.retryPolicy(for: envelope.type)
        guard retries < policy.maxRetries else {
            logger.warning("giving up after \(retries) retries: \(reason)")
            finish(delivery, envelope: envelope, attempt: attempt, outcome: .failure(IntentFailure(
                code: FailureCode.retriesExhausted, message: "gave up after \(retries) retries: \(reason)")))
            return
        }
        let topology = configuration.topology
        configuration.metrics?.increment("intentqueue_worker_retries_total", ["type": envelope.type])
        let wait = topology.retryQueue(forDelay: policy.delay(beforeRetry: retries))
        logger.info("retry \(retries + 1) of \(policy.maxRetries) in \(wait.seconds) s: \(reason)")
        let progress = StatusEvent(
            id: envelope.id, type: envelope.type, state: .inProgress, attempt: attempt,
            progress: .init(fraction: nil, message: "retry \(retries + 1) of \(policy.maxRetries) in \(wait.seconds) s: \(reason)"),
            worker: configuration.workerName, turn: envelope.turn)
        let again = OutgoingMessage(
            exchange: topology.retryExchange, routingKey: envelope.type, body: delivery.body, messageID: envelope.id,
            type: envelope.type, persistent: true,
            headers: [Topology.retriesHeader: .integer(Int64(retries + 1)), Topology.retryBucketHeader: .string(wait.bucket)])
        loop.send(.publish([message(for: progress), again], thenAck: delivery.tag))
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
        configuration.topology.statusMessage(for: event)
    }
}
