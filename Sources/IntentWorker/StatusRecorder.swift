import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization

/// The status store's only writer. It consumes the ledger queue on its own
/// thread, which owns both the AMQP connection and the SQLite connection, and
/// writes what it reads in batches: one `BEGIN IMMEDIATE` transaction per batch,
/// then one `multiple` ack for the whole batch once the commit is durable.
public final class StatusRecorder: Service {
    public struct Configuration: Sendable {
        public var brokerURL: BrokerURL
        public var topology: Topology
        public var storePath: String
        /// Most events written in one transaction.
        public var batchSize: Int
        public var heartbeat: Int
        /// A `needsInput` question unanswered this long (seconds) fails with `expired`.
        public var questionTimeToLive: Double = 86_400

        public init(brokerURL: BrokerURL, topology: Topology = Topology(), storePath: String, batchSize: Int = 500, heartbeat: Int = 30) {
            self.brokerURL = brokerURL
            self.topology = topology
            self.storePath = storePath
            self.batchSize = max(1, batchSize)
            self.heartbeat = heartbeat
        }
    }

    private let configuration: Configuration
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let failure = Mutex<(any Error)?>(nil)

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger.with(["component": "recorder"])
    }

    public func run() async throws {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                runThread()
                continuation.resume()
            }
            thread.name = "intentqueue.recorder"
            thread.start()
        }
        if let error = failure.withLock({ $0 }) { throw error }
    }

    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
    }

    private var isStopping: Bool { stopping.load(ordering: .sequentiallyConsistent) }

    private func runThread() {
        let store: StatusStore
        do {
            store = try StatusStore(path: configuration.storePath)
        } catch {
            logger.error("cannot open the status store: \(error)", metadata: ["store.path": configuration.storePath])
            failure.withLock { $0 = error }
            return
        }
        logger.info("recording to \(configuration.storePath)")
        var backoff = ReconnectBackoff()
        var generation: UInt64 = 0
        while !isStopping {
            generation += 1
            let connection: AMQPConnection
            do {
                connection = try AMQPConnection(url: configuration.brokerURL, heartbeat: configuration.heartbeat, generation: generation)
                try configuration.topology.declareLedger(on: connection)
                try connection.setPrefetch(UInt16(clamping: configuration.batchSize * 2))
                try connection.consume(configuration.topology.ledgerQueue)
            } catch {
                let wait = backoff.next()
                logger.warning("broker unavailable, retrying in \(String(format: "%.1f", wait)) s: \(error)",
                               metadata: ["amqp.url": configuration.brokerURL.description])
                pause(wait)
                continue
            }
            backoff.reset()
            logger.info("connected", metadata: ["amqp.url": configuration.brokerURL.description])
            do {
                try record(from: connection, into: store)
                connection.close()
            } catch {
                connection.abandon()
                logger.warning("recorder interrupted, reconnecting: \(error)")
                pause(backoff.delay)
            }
        }
        store.database.close()
        logger.info("recorder stopped")
    }

    private func pause(_ seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !isStopping, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
    }

    private func record(from connection: AMQPConnection, into store: StatusStore) throws {
        var batch: [StatusStore.Update] = []
        var lastTag: UInt64 = 0
        var ackedTag: UInt64 = 0
        let intentsExchange = configuration.topology.intentsExchange

        func flush() throws {
            guard lastTag > ackedTag else { return }
            try store.record(batch)
            try connection.ack(lastTag, multiple: true)
            ackedTag = lastTag
            batch.removeAll(keepingCapacity: true)
        }

        var nextSweep = Date()
        var batchStarted = Date()
        while !isStopping {
            if Date() >= nextSweep {
                let expired = try store.expireQuestions(olderThan: configuration.questionTimeToLive)
                if expired > 0 { logger.info("\(expired) unanswered questions expired") }
                nextSweep = Date().addingTimeInterval(min(30, max(0.5, configuration.questionTimeToLive / 4)))
            }
            // An open batch waits a little for more (1 ms of quiet, 5 ms at most) so
            // that one commit serves many events without delaying any much.
            let waiting: Double
            if batch.isEmpty && lastTag == ackedTag {
                waiting = 0.25
            } else {
                waiting = max(0, min(0.001, 0.005 - Date().timeIntervalSince(batchStarted)))
            }
            let event = try connection.nextEvent(timeout: waiting)
            guard let event else {
                try flush()
                continue
            }
            guard case .delivery(let delivery) = event else { continue }
            if lastTag == ackedTag { batchStarted = Date() }
            lastTag = delivery.tag.value
            if let update = update(from: delivery, intentsExchange: intentsExchange) { batch.append(update) }
            if batch.count >= configuration.batchSize { try flush() }
        }
        try flush()
    }

    private func update(from delivery: Delivery, intentsExchange: String) -> StatusStore.Update? {
        if delivery.exchange == configuration.topology.cancelExchange {
            guard delivery.headers[Topology.syncHeader] == nil,
                  let id = (try? JSONValue.parse(delivery.body))?["id"]?.stringValue
            else { return nil }
            return .canceled(id: id)
        }
        if delivery.exchange == configuration.topology.deadLetterExchange {
            // The broker gave up on a submission: record it once as a failure.
            guard let id = (try? IntentEnvelope.decode(delivery.body))?.id ?? delivery.messageID else { return nil }
            let reason = delivery.headers["x-first-death-reason"]?.stringValue ?? "dead-lettered"
            return .event(StatusEvent(
                id: id, type: delivery.type ?? delivery.routingKey, state: .failure,
                attempt: (delivery.deliveryCount ?? 0) + 1,
                response: IntentResponse(
                    code: FailureCode.deadLettered,
                    message: "the broker dead-lettered it (\(reason)): it reached the delivery limit of \(configuration.topology.deliveryLimit) or could not be read; it is kept in queue \(configuration.topology.deadLetterQueue)")))
        }
        if delivery.exchange == intentsExchange {
            // A submission the broker accepted. One that cannot be read is the
            // worker's to report, as a failure, when it can read an id.
            guard let envelope = try? IntentEnvelope.decode(delivery.body) else { return nil }
            return delivery.headers[DeadLetters.requeuedHeader] != nil ? .requeued(envelope) : .queued(envelope)
        }
        do {
            return .event(try StatusEvent.decode(delivery.body))
        } catch {
            logger.warning("skipping an unreadable status event: \(error)", metadata: ["amqp.routing_key": delivery.routingKey])
            return nil
        }
    }
}
