import IntentKit

/// The dead-letter queue, for operators: puts one dead-lettered intent back
/// into circulation.
public enum DeadLetters {
    /// The header marking a requeued submission, so the recorder reopens its
    /// `deadLettered` failure instead of ignoring it as final.
    public static let requeuedHeader = "x-intent-requeued"
    /// The header naming a requeued message's original publisher (its `user_id`):
    /// workers believe it only from an operator's requeue.
    public static let publisherHeader = "x-intent-published-by"
    /// On a message requeued again (it died after an earlier requeue): who published each earlier requeue, oldest
    /// first, as a JSON array of names; `publisherHeader` is their word. Workers believe that header only when every
    /// one of them is an operator.
    public static let earlierRequeuersHeader = "x-intent-requeued-before-by"

    /// Who first published a requeued message, as those who read it may believe: the publisher its requeue names;
    /// when it was requeued before, that publisher only if every earlier requeue was an operator's (else the first
    /// of them that was not: it published what died, and a producer can set any header, while an operator's
    /// requeue only copies it).
    public static func originalPublisher(of headers: [String: HeaderValue], operators: Set<String>) -> String? {
        let named = headers[publisherHeader]?.stringValue
        guard headers[earlierRequeuersHeader] != nil else { return named }
        guard let requeuers = earlierRequeuers(in: headers), !requeuers.isEmpty else { return nil }
        return requeuers.first { !operators.contains($0) } ?? named
    }

    /// The earlier requeuers a message names; nil when the header is missing or is not a list of names.
    private static func earlierRequeuers(in headers: [String: HeaderValue]) -> [String]? {
        guard let text = headers[earlierRequeuersHeader]?.stringValue, let list = try? JSONValue.parse(Array(text.utf8)).arrayValue else {
            return nil
        }
        let names = list.compactMap(\.stringValue)
        return names.count == list.count ? names : nil
    }

    /// Who published `delivery`, as its headers may be believed: for an operator's requeue, the original publisher
    /// (`originalPublisher`); else its broker-verified user.
    public static func publisher(of delivery: Delivery, operators: Set<String>) -> String? {
        guard let user = delivery.userID, operators.contains(user), delivery.headers[requeuedHeader] != nil else { return delivery.userID }
        return originalPublisher(of: delivery.headers, operators: operators)
    }

    /// The headers a requeue of `message` carries about who published it: its own publisher, or, for a message
    /// that an earlier requeue published, what that one carried with its publisher added to the requeuers.
    static func publisherHeaders(of message: Delivery) -> [String: HeaderValue] {
        guard message.headers[requeuedHeader] != nil, let requeuer = message.userID else {
            return message.userID.map { [publisherHeader: .string($0)] } ?? [:]
        }
        var headers: [String: HeaderValue] = [:]
        if let named = message.headers[publisherHeader] { headers[publisherHeader] = named }
        // Its own requeuer last, whatever came before: a forged list cannot leave out who published this message.
        let earlier = earlierRequeuers(in: message.headers) ?? []
        headers[earlierRequeuersHeader] = .string(JSONValue.array((earlier + [requeuer]).map(JSONValue.string)).jsonString)
        return headers
    }

    /// The id a dead letter without a readable one is listed under:
    /// `dead-` and 16 hex digits of a hash (64-bit FNV-1a) of its body, so
    /// `intent-status dead` shows it and `requeue` finds it again.
    public static func syntheticID(for body: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return "dead-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The id a dead-lettered message is listed under.
    public static func listedID(of message: Delivery) -> String {
        if let envelope = try? IntentEnvelope.decode(message.body) { return envelope.id }
        if let id = message.messageID, IntentEnvelope.problem(withID: id) == nil { return id }
        return syntheticID(for: message.body)
    }

    /// What `requeue` did.
    public enum Outcome: Sendable, Equatable {
        /// The intent is back on `intents`, republished under this type.
        case requeued(type: String)
        /// No dead letter had that id among the `scanned` messages looked at.
        case notFound(scanned: Int)
    }

    /// Looks through the dead-letter queue for the intent `id`; republishes it
    /// (confirmed, mandatory) to `intents` with its own routing key and removes
    /// it from the dead-letter queue. Every other message is left where it was.
    /// `userID` names the operator it is requeued for when the connection's
    /// user is another (the HTTP gateway's, which has the `impersonator` tag).
    public static func requeue(
        id: String, url: BrokerURL, topology: Topology = Topology(), limit: Int = 100_000, userID: String? = nil
    ) throws(AMQPError) -> Outcome {
        let connection = try AMQPConnection(url: url, connectTimeout: 3, rpcTimeout: 5)
        defer { connection.close() }  // closing returns every message still held to the queue
        try connection.enableConfirms()
        var scanned = 0
        while scanned < limit, let message = try connection.get(topology.deadLetterQueue) {
            scanned += 1
            guard listedID(of: message) == id || syntheticID(for: message.body) == id else { continue }
            let envelope = try? IntentEnvelope.decode(message.body)
            let candidate = envelope?.type ?? message.type ?? message.routingKey
            let type = IntentEnvelope.problem(withType: candidate) == nil ? candidate : message.routingKey
            // Republished by the operator, the message would lose its publisher: it travels in a
            // header, with the owner a worker's retry named. Workers believe them from an operator only.
            // Who published it (believed only while each requeue before was an operator's).
            var headers = publisherHeaders(of: message)
            headers[requeuedHeader] = .integer(1)
            // What a retry said of its sender (an owner, trusted or anonymous) goes with it.
            for name in [Topology.ownerHeader, Topology.trustedSenderHeader, Topology.anonymousSenderHeader] {
                if let value = message.headers[name] { headers[name] = value }
            }
            // A high-priority intent goes back to the high-priority queue (its routing key says so).
            let routingKey = envelope.map { $0.type == type ? $0.routingKey : type } ?? type
            try connection.publishConfirmed(
                [
                    OutgoingMessage(
                        exchange: topology.intentsExchange, routingKey: routingKey, body: message.body, messageID: id, type: type,
                        userID: userID ?? connection.url.user, persistent: true, mandatory: true, headers: headers)
                ], timeout: 5, context: "requeueing \(id)"
            ) { _ in AMQPError(.unroutable, context: "requeueing \(id)", detail: "no worker serves intent type '\(type)' any more") }
            try connection.ack(message.tag.value)
            return .requeued(type: type)
        }
        return .notFound(scanned: scanned)
    }
}
