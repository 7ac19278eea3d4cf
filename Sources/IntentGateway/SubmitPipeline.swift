import Foundation
import IntentAMQP
import IntentClient
import IntentKit
import Synchronization

/// Publishes the submissions of every HTTP request on one confirmed
/// connection, many in flight at once: each request is answered when the
/// broker confirms its message (202), returns it (no worker serves the type:
/// 404) or refuses it. So a burst of requests costs a few round trips, not one
/// each — the windowed publisher `intent-submit` and the benchmark use, shared.
///
/// A request is never told "accepted" for a message the broker did not
/// confirm: when the connection ends with messages unconfirmed, those
/// requests are answered 503 (resubmitting the same id never repeats its
/// effects, so a client retries safely).
final class SubmitPipeline: Sendable {
    typealias Done = @Sendable (Result<Void, IntentClientError>) -> Void

    struct Pending: Sendable {
        var message: OutgoingMessage
        var done: Done
        /// When it was published: what the confirm timeout counts from (a message that waited its turn in the queue
        /// behind a full window has not waited for the broker).
        var since = ContinuousClock.now
    }

    private let queue = Mutex<[Pending]>([])
    private let wake = WakeSignal()
    private let stopping = Atomic<Bool>(false)
    private let url: BrokerURL
    private let logger: Logger
    /// The most messages unconfirmed at once.
    let window: Int
    /// The longest a message may wait for its confirm: past it the connection
    /// is taken as stuck (a broker that blocks publishers, or stopped
    /// answering), its requests are answered 503 and a new one is made.
    let confirmTimeout: Duration

    init(url: BrokerURL, window: Int = 512, confirmTimeout: Duration = .seconds(10), logger: Logger) {
        self.url = url
        self.window = window
        self.confirmTimeout = confirmTimeout
        self.logger = logger
        Thread.named("gw-submit") { [self] in run() }.start()
    }

    /// Publishes `message` (persistent, mandatory, with its `user_id`); `done` is called once, from the pipeline's thread.
    func submit(_ message: OutgoingMessage, done: @escaping Done) {
        queue.withLock { $0.append(Pending(message: message, done: done)) }
        wake.wake()
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        wake.wake()
    }

    // MARK: The pipeline's thread

    private func run() {
        var backoff = 0.1
        while !stopping.load(ordering: .relaxed) {
            let connection: AMQPConnection
            do {
                connection = try AMQPConnection(url: url, heartbeat: 30, connectTimeout: 3, rpcTimeout: 5)
                try connection.enableConfirms()
            } catch {
                // Nothing can be published now: say so to whoever waits, then try again.
                fail(takeQueued(), error)
                logger.warning("gateway: cannot publish submissions: \(error); again in \(backoff) s")
                waitForWork(seconds: backoff)
                backoff = min(backoff * 2, 2)
                continue
            }
            backoff = 0.1
            var inFlight = InFlight()
            do {
                try serve(connection, &inFlight)
            } catch {
                logger.warning("gateway: the submission connection ended: \(error)")
            }
            connection.close()
            fail(inFlight.all(), AMQPError(.connection, context: "submitting", detail: "the connection ended before the broker confirmed"))
        }
        fail(takeQueued(), AMQPError(.connection, context: "submitting", detail: "the gateway is stopping"))
    }

    private func serve(_ connection: AMQPConnection, _ inFlight: inout InFlight) throws(AMQPError) {
        while !stopping.load(ordering: .relaxed) {
            let room = window - inFlight.count
            var batch: [Pending] = []
            if room > 0 {
                batch = queue.withLock { queue in
                    let taken = Array(queue.prefix(room))
                    queue.removeFirst(taken.count)
                    return taken
                }
            }
            func publishBatch() throws(AMQPError) {
                for (index, pending) in batch.enumerated() {
                    do throws(AMQPError) {
                        inFlight.add(try connection.publish(pending.message), pending)
                    } catch {
                        // What was taken and not published is answered here; what is in flight, by the caller.
                        fail(Array(batch[index...]), error)
                        throw error
                    }
                }
            }
            // One message leaves at once; several, corked, in as few segments as they fit.
            if batch.count > 1 { try connection.corked(publishBatch) } else { try publishBatch() }
            if !connection.hasBufferedData {
                // Woken by a new submission or by the broker's answer; at least once a second for heartbeats.
                wake.wait(socket: connection.socketDescriptor, timeoutMilliseconds: inFlight.count > 0 ? 100 : 1000)
            }
            wake.drain()
            while let event = try connection.nextEvent(timeout: 0) {
                switch event {
                case .confirmed(let sequence, let multiple):
                    for pending in inFlight.take(through: sequence, multiple: multiple) { pending.done(.success(())) }
                case .rejected(let sequence, let multiple):
                    fail(
                        inFlight.take(through: sequence, multiple: multiple),
                        AMQPError(.rejected, context: "submitting", detail: "the broker refused the message"))
                case .returned(let message):
                    // A mandatory message comes back before its confirm: answered now, its confirm then finds nothing.
                    if let pending = inFlight.takeReturned(messageID: message.messageID, routingKey: message.routingKey) {
                        pending.done(
                            .failure(
                                IntentClientError(
                                    .noWorker,
                                    "no worker serves intent type '\(IntentPriority.type(ofRoutingKey: message.routingKey))' (nothing is bound for it on exchange '\(message.exchange)')"
                                )))
                    }
                case .delivery:
                    continue
                }
            }
            if let oldest = inFlight.oldest, oldest.duration(to: .now) > confirmTimeout {
                throw AMQPError(
                    .timeout, context: "submitting",
                    detail: "the broker confirmed nothing for \(confirmTimeout.components.seconds) s (blocked or stalled); try again")
            }
        }
    }

    private func takeQueued() -> [Pending] {
        queue.withLock { queue in
            defer { queue = [] }
            return queue
        }
    }

    private func fail(_ pending: [Pending], _ error: AMQPError) {
        let failure = IntentClientError(error)
        for request in pending { request.done(.failure(failure)) }
    }

    private func waitForWork(seconds: Double) {
        wake.wait(socket: -1, seconds: seconds)
        wake.drain()
    }

    /// The messages published and not yet confirmed, by sequence number.
    struct InFlight {
        private var bySequence: [UInt64: Pending] = [:]
        private var order: [UInt64] = []
        private var head = 0
        private var returned: Set<UInt64> = []

        var count: Int { bySequence.count }

        /// When the oldest request still waiting for its confirm was published.
        var oldest: ContinuousClock.Instant? {
            var index = head
            while index < order.count {
                if let pending = bySequence[order[index]] { return pending.since }
                index += 1
            }
            return nil
        }

        mutating func add(_ sequence: UInt64, _ pending: Pending) {
            var published = pending
            published.since = .now
            bySequence[sequence] = published
            order.append(sequence)
        }

        /// The requests a confirm (or nack) answers; a returned one was answered already.
        mutating func take(through sequence: UInt64, multiple: Bool) -> [Pending] {
            var taken: [Pending] = []
            if multiple {
                while head < order.count, order[head] <= sequence {
                    let next = order[head]
                    head += 1
                    if let pending = bySequence.removeValue(forKey: next), returned.remove(next) == nil { taken.append(pending) }
                }
            } else if let pending = bySequence.removeValue(forKey: sequence), returned.remove(sequence) == nil {
                taken.append(pending)
            }
            while head < order.count, bySequence[order[head]] == nil { head += 1 }
            if head > 4096 {
                order.removeFirst(head)
                head = 0
            }
            return taken
        }

        /// The oldest unconfirmed request with this message id and routing key
        /// not yet returned: whether a message is routable depends on its
        /// routing key, so another submitter's message under the same id but
        /// another type is never the one taken.
        mutating func takeReturned(messageID: String?, routingKey: String) -> Pending? {
            guard let messageID else { return nil }
            for index in head..<order.count {
                let sequence = order[index]
                guard !returned.contains(sequence), let pending = bySequence[sequence], pending.message.messageID == messageID,
                    pending.message.routingKey == routingKey
                else { continue }
                returned.insert(sequence)
                return pending
            }
            return nil
        }

        mutating func all() -> [Pending] {
            let pending = order[head...].compactMap { returned.contains($0) ? nil : bySequence[$0] }
            self = InFlight()
            return pending
        }
    }
}

/// Several pipelines, each on its own connection (the broker runs each
/// channel in a process of its own: two use two of its cores), taken in turn.
final class SubmitPipelines: Sendable {
    private let pipelines: [SubmitPipeline]
    private let next = Atomic<Int>(0)

    init(count: Int, url: BrokerURL, logger: Logger) {
        pipelines = (0..<max(1, count)).map { _ in SubmitPipeline(url: url, logger: logger) }
    }

    /// Publishes `message` on the next pipeline; see `SubmitPipeline.submit`.
    func submit(_ message: OutgoingMessage, done: @escaping SubmitPipeline.Done) {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue % pipelines.count
        pipelines[index].submit(message, done: done)
    }

    func stop() {
        for pipeline in pipelines { pipeline.stop() }
    }
}
