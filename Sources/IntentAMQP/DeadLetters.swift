import IntentKit

/// The dead-letter queue, for operators: puts one dead-lettered intent back
/// into circulation.
public enum DeadLetters {
    /// The header marking a requeued submission, so the recorder reopens its
    /// `deadLettered` failure instead of ignoring it as final.
    public static let requeuedHeader = "x-intent-requeued"

    public enum Outcome: Sendable, Equatable {
        case requeued(type: String)
        case notFound(scanned: Int)
    }

    /// Looks through the dead-letter queue for the intent `id`; republishes it
    /// (confirmed, mandatory) to `intents` with its own routing key and removes
    /// it from the dead-letter queue. Every other message is left where it was.
    public static func requeue(id: String, url: BrokerURL, topology: Topology = Topology(), limit: Int = 100_000) throws(AMQPError) -> Outcome {
        let connection = try AMQPConnection(url: url, connectTimeout: 3, rpcTimeout: 5)
        defer { connection.close() }  // closing returns every message still held to the queue
        try connection.enableConfirms()
        var scanned = 0
        while scanned < limit, let message = try connection.get(topology.deadLetterQueue) {
            scanned += 1
            let envelope = try? IntentEnvelope.decode(message.body)
            guard (envelope?.id ?? message.messageID) == id else { continue }
            let type = envelope?.type ?? message.type ?? message.routingKey
            let sequence = try connection.publish(OutgoingMessage(
                exchange: topology.intentsExchange, routingKey: type, body: message.body, messageID: id, type: type,
                persistent: true, mandatory: true, headers: [requeuedHeader: .integer(1)]))
            let (confirmed, returned) = try connection.waitForConfirm(sequence: sequence, timeout: 5)
            if returned != nil {
                throw AMQPError(.unroutable, context: "requeueing \(id)", detail: "no worker serves intent type '\(type)' any more")
            }
            guard confirmed else {
                throw AMQPError(.rejected, context: "requeueing \(id)", detail: "the broker refused the message")
            }
            try connection.ack(message.tag.value)
            return .requeued(type: type)
        }
        return .notFound(scanned: scanned)
    }
}
