import Foundation
import IntentKit

/// Submits intents: one connection, publisher confirms, `mandatory` publishes.
///
/// A submission counts only once the broker confirmed it; a type no worker
/// serves comes back as `basic.return` and is reported as `.unroutable`.
/// Like the connection it owns, a publisher belongs to one thread.
public final class IntentPublisher {
    private let connection: AMQPConnection
    private let topology: Topology
    private let confirmTimeout: Double

    /// Connects; the timeouts together keep a submission to an unreachable or
    /// frozen broker under ten seconds.
    public init(url: BrokerURL, topology: Topology = Topology(), connectTimeout: Double = 3, confirmTimeout: Double = 4) throws(AMQPError) {
        connection = try AMQPConnection(url: url, heartbeat: 30, connectTimeout: connectTimeout, rpcTimeout: connectTimeout)
        self.topology = topology
        self.confirmTimeout = confirmTimeout
        try topology.declareExchanges(on: connection)
        try connection.enableConfirms()
    }

    /// Publishes the envelope persistently and waits for the broker's confirm.
    public func submit(_ envelope: IntentEnvelope, userID: String? = nil) throws(AMQPError) {
        let message = OutgoingMessage(
            exchange: topology.intentsExchange, routingKey: envelope.type, body: envelope.encoded(),
            messageID: envelope.id, type: envelope.type, userID: userID, persistent: true, mandatory: true,
            timestampSeconds: UInt64(max(0, envelope.submittedAt)))
        let sequence = try connection.publish(message)
        let (confirmed, returned) = try connection.waitForConfirm(sequence: sequence, timeout: confirmTimeout)
        if returned != nil {
            throw AMQPError(
                .unroutable, context: "submitting \(envelope.type)",
                detail: "no worker serves intent type '\(envelope.type)' (nothing is bound for it on exchange '\(topology.intentsExchange)')")
        }
        guard confirmed else {
            throw AMQPError(.rejected, context: "submitting \(envelope.type)", detail: "the broker refused the message (basic.nack)")
        }
    }

    public func close() { connection.close() }
}
