import Foundation

/// Asks the status recorder a question over RabbitMQ's direct reply-to: the
/// client needs no queue of its own and no access to the database file.
/// Belongs to one thread, like the connection it owns.
public final class StatusRequester {
    private let connection: AMQPConnection
    private let topology: Topology
    private let timeout: Double

    /// Connects and starts consuming direct reply-to, ready to ask.
    /// - Parameters:
    ///   - url: the broker; its user is the one the recorder answers for.
    ///   - topology: where the recorder's request exchange and queue are.
    ///   - timeout: the longest a connect, or a question, may take.
    public init(url: BrokerURL, topology: Topology = Topology(), timeout: Double = 5) throws(AMQPError) {
        connection = try AMQPConnection(url: url, heartbeat: 30, connectTimeout: min(3, timeout), rpcTimeout: min(5, timeout))
        self.topology = topology
        self.timeout = timeout
        // Direct reply-to: consume the pseudo-queue (no acks) before the first request.
        try connection.consume(Topology.directReplyTo, noAck: true)
    }

    /// Sends one request and waits for its answer, at most `timeout` seconds
    /// (and never longer than the requester's own timeout). `userID` asks for
    /// another user than the connection's: the broker accepts it only from a
    /// user with the `impersonator` tag (the HTTP gateway's).
    public func ask(_ request: [UInt8], timeout limit: Double? = nil, userID: String? = nil) throws(AMQPError) -> [UInt8] {
        let timeout = max(0.01, min(self.timeout, limit ?? self.timeout))
        let correlation = UUID().uuidString
        // Signed with the connection's user, which the broker verifies: the recorder answers what that user may read.
        try connection.publish(
            OutgoingMessage(
                exchange: topology.statusRequestExchange, routingKey: topology.statusRequestQueue, body: request,
                userID: userID ?? connection.url.user,
                persistent: false, mandatory: true, replyTo: Topology.directReplyTo, correlationID: correlation,
                expirationMilliseconds: Int(timeout * 1000)))
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                throw AMQPError(.timeout, context: "asking the status recorder", detail: "no answer within \(String(format: "%.1f", timeout)) s")
            }
            switch try connection.nextEvent(timeout: remaining) {
            case .delivery(let delivery) where delivery.correlationID == correlation:
                return delivery.body
            case .returned:
                throw AMQPError(
                    .unroutable, context: "asking the status recorder",
                    detail:
                        "no recorder answers remote status requests (queue '\(topology.statusRequestQueue)' does not exist: is `intent-worker --recorder-only` or `--with-recorder` running?)"
                )
            default:
                continue
            }
        }
    }

    /// Closes the connection; the requester asks nothing more.
    public func close() { connection.close() }
}

/// Follows status events as they are published: a server-named queue that
/// lives as long as this client's connection, bound to the status exchange.
public final class StatusFeed {
    private let connection: AMQPConnection
    /// The server-named queue the feed reads from: exclusive, and deleted with the connection.
    public let queue: String

    /// Connects, declares the feed's queue and binds it.
    /// - Parameters:
    ///   - url: the broker; a producer may bind only to its own events.
    ///   - bindings: (exchange, routing key) pairs; for the status exchange the key is
    ///     `<owner>.<type>.<state>` with `*` and `#` wildcards.
    ///   - connectTimeout: how long connecting and declaring may take.
    public init(url: BrokerURL, bindings: [(exchange: String, key: String)], connectTimeout: Double = 3) throws(AMQPError) {
        connection = try AMQPConnection(url: url, heartbeat: 30, connectTimeout: connectTimeout, rpcTimeout: max(connectTimeout, 1))
        queue = try connection.declareQueue("", durable: false, exclusive: true, autoDelete: true).name
        for binding in bindings {
            try connection.bindQueue(queue, exchange: binding.exchange, routingKey: binding.key)
        }
        try connection.consume(queue, noAck: true, exclusive: true)
    }

    /// The next message, or nil when none came within `timeout` seconds.
    public func next(timeout: Double?) throws(AMQPError) -> Delivery? {
        let deadline = timeout.map { Date().addingTimeInterval($0) }
        while true {
            let remaining = deadline.map { max(0, $0.timeIntervalSinceNow) }
            guard let event = try connection.nextEvent(timeout: remaining) else { return nil }
            if case .delivery(let delivery) = event { return delivery }
            if let deadline, Date() >= deadline { return nil }
        }
    }

    /// Closes the connection, which deletes the feed's queue.
    public func close() { connection.close() }
}
