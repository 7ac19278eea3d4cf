import Synchronization

/// What a consuming service needs of its broker connection: deliveries in,
/// publishes and acks out. `ConsumerLoop` is the AMQP one; `InMemoryTransport`
/// stands in for it in unit tests of a worker (the project's and users' own).
public protocol DeliveryTransport: Sendable {
    /// Deliveries of the consumed queue, until consuming stops.
    var deliveries: AsyncStream<Delivery> { get }
    /// Starts the transport: from then on deliveries arrive and commands are acted on.
    func start()
    /// Hands a publish, an ack or a reject over; callable from any task.
    func send(_ command: ConsumerLoop.Command)
    /// No more deliveries: `deliveries` finishes.
    func stopConsuming()
    /// Sends what was handed over (waiting at most `grace` seconds for its confirms) and closes.
    func shutdown(grace: Double) async
    /// Whether the transport has a live broker connection right now.
    var isConnected: Bool { get }
    /// Whether a delivery's tag is still the broker's to settle: it came on the connection that is up now (or it is
    /// local). A delivery of a connection since lost is the broker's to give again.
    func isLive(_ tag: DeliveryTag) -> Bool
}

extension DeliveryTransport {
    /// By default every delivery is live (a transport without connections to lose).
    public func isLive(_ tag: DeliveryTag) -> Bool { true }
}

extension ConsumerLoop: DeliveryTransport {}

/// A transport without a broker: the test hands it deliveries and reads back
/// what was published, acked and rejected. Every publish is confirmed at once,
/// so a publish with `thenAck` acks its delivery as the broker's confirm would.
public final class InMemoryTransport: DeliveryTransport {
    private struct State {
        var nextTag: UInt64 = 0
        var published: [OutgoingMessage] = []
        var acked: [UInt64] = []
        var rejected: [(tag: UInt64, requeue: Bool)] = []
        var started = false
    }

    /// What `deliver(body:…)` hands in, as the worker under test reads it; finishes at `stopConsuming()` or `shutdown`.
    public let deliveries: AsyncStream<Delivery>
    private let continuation: AsyncStream<Delivery>.Continuation
    private let state = Mutex(State())
    /// Whether consuming has stopped; held while a delivery is handed to `onDelivery`, so that none is handed over
    /// after `stopConsuming()`, and apart from `state`, so that `onDelivery` may send, or read what was sent.
    private let stopped = Mutex(false)
    private let onExtraDelivery: @Sendable (Delivery) -> Void
    private let onLocalSettled: @Sendable (UInt64, Bool) -> Void
    private let onDelivery: (@Sendable (Delivery) -> Void)?
    private let loopback: Set<String>

    /// `configuration` is the one the service would give its `ConsumerLoop`:
    /// deliveries of its extra queues go to its `onExtraDelivery`, and those of
    /// the consumed queue to its `onDelivery` when it has one. What is
    /// published to a `loopback` exchange comes back that way too, as the
    /// cancellation stream (bound to `intents.cancel`) brings it back to a worker.
    public init(configuration: ConsumerLoop.Configuration? = nil, loopback: Set<String> = []) {
        (deliveries, continuation) = AsyncStream.makeStream(of: Delivery.self)
        if let configuration {
            onExtraDelivery = configuration.onExtraDelivery
            onLocalSettled = configuration.onLocalSettled
            onDelivery = configuration.onDelivery
        } else {
            onExtraDelivery = { _ in }
            onLocalSettled = { _, _ in }
            onDelivery = nil
        }
        self.loopback = loopback
    }

    /// Marks the transport started, so `isConnected` turns true.
    public func start() { state.withLock { $0.started = true } }

    /// True once `start()` was called, as a connected loop would say.
    public var isConnected: Bool { state.withLock { $0.started } }

    /// False once `stopConsuming()` (or `shutdown`) was called: deliveries from then on are dropped.
    public var isConsuming: Bool { !stopped.withLock { $0 } }

    /// Records the command: a publish (acking its `thenAck` at once, as if confirmed, or settling a local one),
    /// an ack or a reject (of a local tag: settled).
    /// A publish to a `loopback` exchange also comes back as an extra delivery.
    public func send(_ command: ConsumerLoop.Command) {
        let outgoing: [OutgoingMessage]
        switch command {
        case .publish(let messages, _): outgoing = messages
        case .ack, .reject: outgoing = []
        }
        for message in outgoing where loopback.contains(message.exchange) {
            deliverExtra(body: message.body, headers: message.headers)
        }
        state.withLock { state in
            switch command {
            case .publish(let messages, let thenAck):
                state.published += messages
                if let tag = thenAck, !tag.isLocal { state.acked.append(tag.value) }
            case .ack(let tag):
                if !tag.isLocal { state.acked.append(tag.value) }
            case .reject(let tag, let requeue):
                if !tag.isLocal { state.rejected.append((tag.value, requeue)) }
            }
        }
        switch command {
        case .publish(_, let tag?), .ack(let tag), .reject(let tag, _):
            if tag.isLocal { onLocalSettled(tag.value, true) }
        default:
            break
        }
    }

    /// Finishes `deliveries`, as a canceled consumer would: what is delivered later is dropped.
    public func stopConsuming() {
        stopped.withLock { $0 = true }
        continuation.finish()
    }

    /// Finishes `deliveries` at once: there are no confirms to wait for.
    public func shutdown(grace: Double) async { stopConsuming() }

    /// Delivers a message of the consumed queue, as the broker would; returns its tag.
    @discardableResult
    public func deliver(
        body: [UInt8], exchange: String = "intents", routingKey: String = "", messageID: String? = nil, type: String? = nil,
        userID: String? = nil, headers: [String: HeaderValue] = [:], deliveryCount: Int? = nil
    ) -> UInt64 {
        let tag = state.withLock { state -> UInt64 in
            state.nextTag += 1
            return state.nextTag
        }
        let delivery = Delivery(
            tag: DeliveryTag(generation: 1, value: tag), exchange: exchange, routingKey: routingKey, redelivered: deliveryCount != nil,
            body: body, messageID: messageID, type: type, userID: userID, replyTo: nil, correlationID: nil,
            deliveryCount: deliveryCount, headers: headers)
        if let onDelivery {
            stopped.withLock { stopped in
                if !stopped { onDelivery(delivery) }
            }
        } else {
            continuation.yield(delivery)
        }
        return tag
    }

    /// Delivers a message of an extra queue (the cancellation stream), as the I/O thread would.
    public func deliverExtra(body: [UInt8], headers: [String: HeaderValue] = [:]) {
        onExtraDelivery(
            Delivery(
                tag: DeliveryTag(generation: 1, value: 0), exchange: "", routingKey: "", redelivered: false, body: body,
                messageID: nil, type: nil, userID: nil, replyTo: nil, correlationID: nil, deliveryCount: nil, headers: headers))
    }

    /// Everything published so far, in order.
    public var published: [OutgoingMessage] { state.withLock { $0.published } }

    /// The tags acked so far, in order.
    public var acked: [UInt64] { state.withLock { $0.acked } }

    /// The tags rejected so far, with whether they were requeued.
    public var rejected: [(tag: UInt64, requeue: Bool)] { state.withLock { $0.rejected } }

    /// Waits (polling every millisecond, up to `timeout` seconds) until `condition` holds; false if it never did.
    /// The default is generous: a test on a busy machine waits for the condition, not for a guess at how long it takes.
    public func wait(timeout: Double = 120, until condition: (InMemoryTransport) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(timeout * 1000)))
        while ContinuousClock.now < deadline {
            if condition(self) { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return condition(self)
    }
}
