/// A message to publish.
public struct OutgoingMessage: Sendable {
    public var exchange: String
    public var routingKey: String
    public var body: [UInt8]
    /// `message_id`: the intent id, so a returned message can be told apart.
    public var messageID: String?
    /// `type`: the intent type.
    public var type: String?
    /// `user_id`: RabbitMQ checks it against the connection's user.
    public var userID: String?
    public var contentType: String
    /// Persistent (delivery mode 2) unless told otherwise.
    public var persistent: Bool
    /// Return the message (basic.return) when no queue is bound for it.
    public var mandatory: Bool
    public var timestampSeconds: UInt64?
    /// Application headers: strings and integers only.
    public var headers: [String: HeaderValue]
    /// `reply_to`: where an answer goes (a request over direct reply-to).
    public var replyTo: String?
    /// `correlation_id`: ties an answer to its request.
    public var correlationID: String?
    /// `expiration`: the broker drops the message after this long in a queue.
    public var expirationMilliseconds: Int?

    public init(
        exchange: String, routingKey: String, body: [UInt8], messageID: String? = nil, type: String? = nil,
        userID: String? = nil, contentType: String = "application/json", persistent: Bool = true,
        mandatory: Bool = false, timestampSeconds: UInt64? = nil, headers: [String: HeaderValue] = [:],
        replyTo: String? = nil, correlationID: String? = nil, expirationMilliseconds: Int? = nil
    ) {
        self.exchange = exchange
        self.routingKey = routingKey
        self.body = body
        self.messageID = messageID
        self.type = type
        self.userID = userID
        self.contentType = contentType
        self.persistent = persistent
        self.mandatory = mandatory
        self.timestampSeconds = timestampSeconds
        self.headers = headers
        self.replyTo = replyTo
        self.correlationID = correlationID
        self.expirationMilliseconds = expirationMilliseconds
    }
}

extension OutgoingMessage {
    /// Why the broker could not take this message as it is — a name or a
    /// property over AMQP's 255-byte short strings — or nil. A publish that
    /// rabbitmq-c refuses half-written breaks the connection for everything
    /// else on it, so the check comes first.
    public var problem: String? {
        let shortStrings: [(String, String?)] = [
            ("exchange", exchange), ("routing key", routingKey), ("content type", contentType), ("message id", messageID),
            ("type", type), ("user id", userID), ("reply-to", replyTo), ("correlation id", correlationID),
        ]
        for (name, value) in shortStrings {
            if let value, value.utf8.count > 255 { return "its \(name) is \(value.utf8.count) bytes long, over AMQP's 255" }
        }
        if let key = headers.keys.first(where: { $0.utf8.count > 128 }) { return "a header name of \(key.utf8.count) bytes is over 128" }
        return nil
    }
}

/// A header value IntentQueue reads or writes. On read only strings and
/// integers at the top level are kept: tables, arrays and floats are skipped,
/// however deeply a sender nests them.
public indirect enum HeaderValue: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    /// A nested table (written only; see above).
    case table([String: HeaderValue])

    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    public var integerValue: Int64? {
        if case .integer(let number) = self { return number }
        return nil
    }
}

/// A message the broker delivered to a consumer, copied out of rabbitmq-c's buffers.
public struct Delivery: Sendable {
    /// The delivery tag, valid only on the connection `generation` that received it.
    public var tag: DeliveryTag
    public var exchange: String
    public var routingKey: String
    public var redelivered: Bool
    public var body: [UInt8]
    public var messageID: String?
    public var type: String?
    public var userID: String?
    public var replyTo: String?
    public var correlationID: String?
    /// `x-delivery-count` from a quorum queue: how many earlier deliveries failed.
    public var deliveryCount: Int?
    /// The message's string and integer headers.
    public var headers: [String: HeaderValue]
    /// The consumer it was delivered to (empty for basic.get).
    public var consumerTag: String = ""

    /// A delivery as the broker would make it: for test doubles (`InMemoryTransport`).
    public init(
        tag: DeliveryTag, exchange: String, routingKey: String, redelivered: Bool = false, body: [UInt8],
        messageID: String? = nil, type: String? = nil, userID: String? = nil, replyTo: String? = nil,
        correlationID: String? = nil, deliveryCount: Int? = nil, headers: [String: HeaderValue] = [:], consumerTag: String = ""
    ) {
        self.tag = tag
        self.exchange = exchange
        self.routingKey = routingKey
        self.redelivered = redelivered
        self.body = body
        self.messageID = messageID
        self.type = type
        self.userID = userID
        self.replyTo = replyTo
        self.correlationID = correlationID
        self.deliveryCount = deliveryCount
        self.headers = headers
        self.consumerTag = consumerTag
    }

    /// 1 for the first delivery of the message.
    public var attempt: Int {
        if let deliveryCount { return min(max(deliveryCount, 0), 1_000_000) + 1 }
        return redelivered ? 2 : 1
    }
}

/// A delivery tag together with the connection it belongs to. Acks for a tag of
/// an earlier connection are dropped: the broker has already requeued it.
public struct DeliveryTag: Sendable, Hashable {
    public var generation: UInt64
    public var value: UInt64

    public init(generation: UInt64, value: UInt64) {
        self.generation = generation
        self.value = value
    }
}

/// A message the broker sent back because nothing was bound for it.
public struct ReturnedMessage: Sendable {
    public var replyCode: UInt16
    public var replyText: String
    public var exchange: String
    public var routingKey: String
    public var messageID: String?
}
