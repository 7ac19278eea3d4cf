/// A broker or connection failure, with what IntentQueue was doing, the broker's
/// reply code and text when it sent one, or rabbitmq-c's status string.
public struct AMQPError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The broker could not be reached or the socket failed.
        case connection
        /// The broker closed the channel or connection with a reply code.
        case server
        /// rabbitmq-c reported a failure.
        case library
        /// The URL or a setting is not usable.
        case configuration
        /// A published message came back: no queue is bound for its routing key.
        case unroutable
        /// The broker refused a published message (basic.nack).
        case rejected
        /// Nothing came back in time.
        case timeout
    }

    public var kind: Kind
    public var context: String
    public var detail: String
    /// The AMQP reply code, for `.server`.
    public var replyCode: UInt16?

    public init(_ kind: Kind, context: String, detail: String, replyCode: UInt16? = nil) {
        self.kind = kind
        self.context = context
        self.detail = detail
        self.replyCode = replyCode
    }

    public var description: String {
        if let replyCode { return "\(context): \(detail) (AMQP \(replyCode))" }
        return "\(context): \(detail)"
    }
}
