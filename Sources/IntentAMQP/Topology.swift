/// The broker objects IntentQueue uses, declared the same way by every process
/// so that declarations are idempotent (a queue redeclared with other arguments
/// would be refused by the broker).
///
/// ```
/// intents (topic, key = type) ─┬─▶ intents.work   (quorum, delivery limit, dead-letters to intents.dead)
///                              └─▶ intents.ledger (bound per served type: sees every accepted submission)
/// intents.status (topic, key = "<type>.<state>") ──▶ intents.ledger (key "#")
/// intents.dead (fanout) ──▶ intents.dead
/// ```
/// Workers bind the work and ledger queues only for the types they serve, so a
/// submission of any other type is unroutable and comes back to its producer.
public struct Topology: Sendable {
    public var intentsExchange = "intents"
    public var statusExchange = "intents.status"
    public var deadLetterExchange = "intents.dead"
    public var deadLetterQueue = "intents.dead"
    public var workQueue = "intents.work"
    public var ledgerQueue = "intents.ledger"
    /// Deliveries of one message before the broker dead-letters it.
    public var deliveryLimit: Int64 = 5

    public init() {}

    /// Exchanges only: what a producer needs so that a publish of an unserved
    /// type is returned rather than refused for a missing exchange.
    public func declareExchanges(on connection: AMQPConnection) throws(AMQPError) {
        try connection.declareExchange(intentsExchange, type: "topic")
        try connection.declareExchange(statusExchange, type: "topic")
        try connection.declareExchange(deadLetterExchange, type: "fanout")
    }

    /// The status ledger: every status event, and (once a worker bound it) every submission.
    public func declareLedger(on connection: AMQPConnection) throws(AMQPError) {
        try declareExchanges(on: connection)
        try connection.declareQueue(ledgerQueue, arguments: [.string("x-queue-type", "quorum")])
        try connection.bindQueue(ledgerQueue, exchange: statusExchange, routingKey: "#")
    }

    /// The work queue with its dead letter, bound for each served type.
    public func declareWork(on connection: AMQPConnection, types: [String]) throws(AMQPError) {
        try declareLedger(on: connection)
        try connection.declareQueue(deadLetterQueue, arguments: [.string("x-queue-type", "quorum")])
        try connection.bindQueue(deadLetterQueue, exchange: deadLetterExchange, routingKey: "")
        try connection.declareQueue(workQueue, arguments: [
            .string("x-queue-type", "quorum"),
            .integer("x-delivery-limit", deliveryLimit),
            .string("x-dead-letter-exchange", deadLetterExchange),
        ])
        for type in types {
            try connection.bindQueue(workQueue, exchange: intentsExchange, routingKey: type)
            try connection.bindQueue(ledgerQueue, exchange: intentsExchange, routingKey: type)
        }
    }
}
