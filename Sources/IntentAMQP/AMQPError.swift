/// A broker or connection failure, with what IntentQueue was doing, the broker's
/// reply code and text when it sent one, or rabbitmq-c's status string.
public struct AMQPError: Error, Sendable, CustomStringConvertible {
    /// What sort of failure it was: a `.connection` or `.timeout` is worth another node or a reconnect, a `.configuration` is not.
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

    /// The sort of failure, for callers to decide what to do next.
    public var kind: Kind
    /// What IntentQueue was doing: `connecting to amqp://guest@127.0.0.1:5672/%2f`, `declaring queue 'intents.work'`.
    public var context: String
    /// Why it failed: the broker's reply text, rabbitmq-c's status string, or IntentQueue's own explanation.
    public var detail: String
    /// The AMQP reply code, for `.server`.
    public var replyCode: UInt16?

    /// A failure of `kind` while doing `context`, because of `detail`, with the broker's `replyCode` when it sent one.
    public init(_ kind: Kind, context: String, detail: String, replyCode: UInt16? = nil) {
        self.kind = kind
        self.context = context
        self.detail = detail
        self.replyCode = replyCode
    }

    /// `context: detail`, with the AMQP reply code when there is one: for logs and error messages.
    public var description: String {
        if let replyCode { return "\(context): \(detail) (AMQP \(replyCode))" }
        return "\(context): \(detail)"
    }
}
