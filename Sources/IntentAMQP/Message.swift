/// A message to publish.
public struct OutgoingMessage: Sendable {
    /// The exchange to publish to; the empty name is the default exchange, which routes by queue name.
    public var exchange: String
    /// The routing key: the intent type on `intents`, the event's key on the status exchange.
    public var routingKey: String
    /// The message body: UTF-8 JSON for IntentQueue's own messages.
    public var body: [UInt8]
    /// `message_id`: the intent id, so a returned message can be told apart.
    public var messageID: String?
    /// `type`: the intent type.
    public var type: String?
    /// `user_id`: RabbitMQ checks it against the connection's user.
    public var userID: String?
    /// `content_type`: `application/json` unless told otherwise.
    public var contentType: String
    /// Persistent (delivery mode 2) unless told otherwise.
    public var persistent: Bool
    /// Return the message (basic.return) when no queue is bound for it.
    public var mandatory: Bool
    /// `timestamp`, in seconds since 1970 (a submission carries its `submittedAt`); nil sends none.
    public var timestampSeconds: UInt64?
    /// Application headers: strings and integers only.
    public var headers: [String: HeaderValue]
    /// `reply_to`: where an answer goes (a request over direct reply-to).
    public var replyTo: String?
    /// `correlation_id`: ties an answer to its request.
    public var correlationID: String?
    /// `expiration`: the broker drops the message after this long in a queue.
    public var expirationMilliseconds: Int?

    /// A message with its properties; by default persistent JSON, not mandatory, without headers.
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
    /// A string: written as a long string, read from a long string or a byte array.
    case string(String)
    /// An integer: written as 64 bits, read from an integer of any width.
    case integer(Int64)
    /// A nested table (written only; see above).
    case table([String: HeaderValue])

    /// The text, when this is a string; nil otherwise.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The number, when this is an integer; nil otherwise.
    public var integerValue: Int64? {
        if case .integer(let number) = self { return number }
        return nil
    }
}

/// A message the broker delivered to a consumer, copied out of rabbitmq-c's buffers.
public struct Delivery: Sendable {
    /// The delivery tag, valid only on the connection `generation` that received it.
    public var tag: DeliveryTag

    /// The rest of what the broker sent, held by reference: a delivery passes from the I/O thread to a lane, a runner
    /// and a job, and each copy is then one retain instead of one for every string it holds. A setter makes a new box
    /// (nothing in IntentQueue changes a delivery once made).
    private final class Contents: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private struct Fields: Sendable {
        var exchange: String
        var routingKey: String
        var redelivered: Bool
        var body: [UInt8]
        var messageID: String?
        var type: String?
        var userID: String?
        var replyTo: String?
        var correlationID: String?
        var deliveryCount: Int?
        var headers: [String: HeaderValue]
        var consumerTag: String
    }

    private var contents: Contents

    private mutating func change(_ edit: (inout Fields) -> Void) {
        var fields = contents.fields
        edit(&fields)
        contents = Contents(fields)
    }

    /// The exchange the message was published to (empty for the default exchange).
    public var exchange: String {
        get { contents.fields.exchange }
        set { change { $0.exchange = newValue } }
    }
    /// The routing key it was published with: for a submission, the intent type.
    public var routingKey: String {
        get { contents.fields.routingKey }
        set { change { $0.routingKey = newValue } }
    }
    /// Set by the broker when the message was delivered before and not acked (a worker died, or it was requeued).
    public var redelivered: Bool {
        get { contents.fields.redelivered }
        set { change { $0.redelivered = newValue } }
    }
    /// The message body, as its publisher sent it.
    public var body: [UInt8] {
        get { contents.fields.body }
        set { change { $0.body = newValue } }
    }
    /// `message_id`, when the publisher set one: for IntentQueue's messages, the intent id.
    public var messageID: String? {
        get { contents.fields.messageID }
        set { change { $0.messageID = newValue } }
    }
    /// `type`, when the publisher set one: the intent type.
    public var type: String? {
        get { contents.fields.type }
        set { change { $0.type = newValue } }
    }
    /// `user_id`, when set: RabbitMQ checked it against the publisher's connection, so it says who sent the message.
    public var userID: String? {
        get { contents.fields.userID }
        set { change { $0.userID = newValue } }
    }
    /// `reply_to`: where the sender wants its answer (a status request over direct reply-to).
    public var replyTo: String? {
        get { contents.fields.replyTo }
        set { change { $0.replyTo = newValue } }
    }
    /// `correlation_id`: sent back with the answer, so the requester can match it to its request.
    public var correlationID: String? {
        get { contents.fields.correlationID }
        set { change { $0.correlationID = newValue } }
    }
    /// `x-delivery-count` from a quorum queue: how many earlier deliveries failed.
    public var deliveryCount: Int? {
        get { contents.fields.deliveryCount }
        set { change { $0.deliveryCount = newValue } }
    }
    /// The message's string and integer headers.
    public var headers: [String: HeaderValue] {
        get { contents.fields.headers }
        set { change { $0.headers = newValue } }
    }
    /// The consumer it was delivered to (empty for basic.get).
    public var consumerTag: String {
        get { contents.fields.consumerTag }
        set { change { $0.consumerTag = newValue } }
    }

    /// A delivery as the broker would make it: for test doubles (`InMemoryTransport`).
    public init(
        tag: DeliveryTag, exchange: String, routingKey: String, redelivered: Bool = false, body: [UInt8],
        messageID: String? = nil, type: String? = nil, userID: String? = nil, replyTo: String? = nil,
        correlationID: String? = nil, deliveryCount: Int? = nil, headers: [String: HeaderValue] = [:], consumerTag: String = ""
    ) {
        self.tag = tag
        contents = Contents(
            Fields(
                exchange: exchange, routingKey: routingKey, redelivered: redelivered, body: body, messageID: messageID,
                type: type, userID: userID, replyTo: replyTo, correlationID: correlationID, deliveryCount: deliveryCount,
                headers: headers, consumerTag: consumerTag))
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
    /// The connection that received the delivery (`AMQPConnection.generation`).
    public var generation: UInt64
    /// The broker's delivery tag on that connection's channel: what an ack or a reject names.
    public var value: UInt64

    /// Whether it is a `local` tag: only `local(_:)` makes one, so no delivery from a broker (or from any
    /// transport, whatever generation it gives) is taken for one.
    public private(set) var isLocal = false

    /// The tag `value` of a delivery received on connection `generation`.
    public init(generation: UInt64, value: UInt64) {
        self.generation = generation
        self.value = value
    }

    /// The tag of a message no broker delivered (a worker's run of an intent it kept), numbered by
    /// whoever made it. Nothing is acked for it: an ack or a reject of it, or the broker's confirm of a
    /// publish naming it, settles it, and a publish lost with its connection unsettles it
    /// (`ConsumerLoop.Configuration.onLocalSettled`).
    public static func local(_ number: UInt64) -> DeliveryTag {
        var tag = DeliveryTag(generation: 0, value: number)
        tag.isLocal = true
        return tag
    }
}

/// A message the broker sent back because nothing was bound for it.
public struct ReturnedMessage: Sendable {
    /// The broker's reason code: 312 (no route) for a message nothing was bound for.
    public var replyCode: UInt16
    /// The broker's reason in words (`NO_ROUTE`).
    public var replyText: String
    /// The exchange the message was published to.
    public var exchange: String
    /// The routing key it was published with: for a submission, the intent type no worker serves.
    public var routingKey: String
    /// The returned message's `message_id` (the intent id), when it had one.
    public var messageID: String?
}
