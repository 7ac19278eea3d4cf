import IntentKit

/// The broker objects IntentQueue uses, declared the same way by every process
/// so that declarations are idempotent (a queue redeclared with other arguments
/// would be refused by the broker).
///
/// ```
/// intents (topic, key = type) ─┬─▶ intents.work   (quorum, delivery limit, dead-letters to intents.dead)
///                              └─▶ intents.ledger (bound per served type: sees every accepted submission)
/// intents (key = "<type>.high") ─┬─▶ intents.work.high (the same; workers take from it first)
///                                └─▶ intents.ledger
/// intents.status (topic, key = "<type>.<state>") ──▶ intents.ledger (key "#")
/// intents.dead (fanout) ──▶ intents.dead, and ──▶ intents.ledger (so a dead letter is recorded as a failure)
/// intents.retry (headers, x-retry-bucket) ──▶ intents.retry.<n>s (TTL n s, dead-letters back to intents)
/// intents.cancel (fanout) ──▶ intents.cancellations (stream: hints every worker reads)
/// intents.status.requests (direct) ──▶ intents.status.requests (the recorder's; answers via amq.rabbitmq.reply-to)
/// ```
/// Workers bind the work and ledger queues only for the types they serve, so a
/// submission of any other type is unroutable and comes back to its producer.
public struct Topology: Sendable {
    /// The topic exchange intents (and answers, cancels and denials) are published to, with the intent type as key.
    public var intentsExchange = "intents"
    /// The topic exchange of status events, which the ledger queue and live watchers are bound to.
    public var statusExchange = "intents.status"
    /// The fanout exchange the work queue dead-letters to once a message reaches `deliveryLimit`.
    public var deadLetterExchange = "intents.dead"
    /// The queue that keeps dead letters for operators (`intent-status dead`, `requeue`).
    public var deadLetterQueue = "intents.dead"
    /// The quorum queue workers consume intents from.
    public var workQueue = "intents.work"
    /// The quorum queue of high-priority intents (routing key `<type>.high`), which workers take from first.
    public var highPriorityQueue = "intents.work.high"
    /// The quorum queue the status recorder consumes: every accepted submission and every status event.
    public var ledgerQueue = "intents.ledger"
    /// The headers exchange retries go through to their delay queues; also the prefix of those queues' names.
    public var retryExchange = "intents.retry"
    /// Cancellation hints: a fanout to a stream every worker reads from its
    /// start, so that a worker skips an intent whose cancel was requested, even
    /// one sent while no worker ran. The request itself travels through
    /// `intents` (an envelope with `"request":"cancel"`) and a worker decides it.
    public var cancelExchange = "intents.cancel"
    /// The stream bound to `cancelExchange` that workers read cancellation hints from (kept seven days).
    public var cancelStream = "intents.cancellations"
    /// Remote status: the recorder consumes this queue (non-durable, deleted
    /// when the recorder goes) and answers each request on its `reply_to`.
    public var statusRequestQueue = "intents.status.requests"
    /// The direct exchange requests are published to (key: the request
    /// queue's name), so that a client needs write on it alone, not on the
    /// default exchange, which reaches every queue by name.
    public var statusRequestExchange = "intents.status.requests"
    /// RabbitMQ's direct reply-to pseudo-queue.
    public static let directReplyTo = "amq.rabbitmq.reply-to"
    /// Deliveries of one message before the broker dead-letters it.
    public var deliveryLimit: Int64 = 5
    /// The delays, in seconds, of the retry queues: a retry waits in the longest
    /// one not above the delay its policy asks for.
    public var retryDelays: [Int] = [1, 2, 4, 8, 16, 32, 64, 128, 256]

    /// The header that routes a retry to its delay queue.
    public static let retryBucketHeader = "x-retry-bucket"
    /// The header counting how many times an intent was retried.
    public static let retriesHeader = "x-intent-retries"
    /// The header with which a worker's retry or an operator's requeue names the
    /// intent's owner; workers believe it only from trusted users and operators.
    public static let ownerHeader = "x-intent-owner"
    /// On a worker's retry: the sender it names was itself trusted (the recorder, a scheduler, another worker), as
    /// the message's own user was when it first came. Without it the sender named is what it was: a submitter.
    /// Believed, like the owner, only from trusted users.
    public static let trustedSenderHeader = "x-intent-sender-trusted"
    /// On a message a trusted user republishes (a worker's retry, the recorder's release, a scheduler's run): its
    /// sender was anonymous (a message without a `user_id`), so it acts as no one, not as the user republishing it.
    /// Believed, like the owner, only from trusted users.
    public static let anonymousSenderHeader = "x-intent-sender-anonymous"

    /// What a message a trusted user republishes says of its sender, in `headers`: the owner it acts for, whether
    /// that sender was trusted, or that it was anonymous (else it would act as the user republishing it).
    public static func name(owner: String?, trusted: Bool, in headers: inout [String: HeaderValue]) {
        if let owner { headers[ownerHeader] = .string(owner) } else { headers[anonymousSenderHeader] = .integer(1) }
        if trusted { headers[trustedSenderHeader] = .integer(1) }
    }
    /// The header counting how many times an intent waited for storage (a full
    /// disk, say); those waits are not bounded by the retry policy.
    public static let storageRetriesHeader = "x-intent-storage-waits"
    /// On a scheduled intent the recorder releases to the workers when it is
    /// due (the due time, in seconds since 1970); believed only from a trusted user.
    public static let releasedHeader = "x-intent-released"
    /// On a status event the recorder publishes for a state it recorded itself (a dead letter's failure), so that
    /// watchers hear of it: the recorder, reading it back from the ledger queue, has it already and skips it.
    public static let announcedHeader = "x-intent-announced"

    /// IntentQueue's standard names and settings; tests and benchmarks change the names for a topology of their own.
    public init() {}

    /// Checks, without declaring anything, that the exchanges a producer
    /// publishes to exist: producers and operators have no `configure`
    /// permission on shared objects (a missing exchange would otherwise close
    /// the channel at the first publish, with a less helpful reason).
    public func checkExchanges(on connection: AMQPConnection) throws(AMQPError) {
        for name in [intentsExchange, cancelExchange] {
            do {
                try connection.declareExchange(name, passive: true)
            } catch  where error.replyCode == 404 {
                throw AMQPError(
                    .server, context: "looking for exchange '\(name)'",
                    detail:
                        "it does not exist: no worker has declared IntentQueue's topology on this broker yet (start intent-worker, or load deploy/definitions.json)",
                    replyCode: 404)
            }
        }
    }

    /// The exchanges, declared: what the workers and the recorder, which own
    /// the topology, do before anything else.
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
        try connection.bindQueue(ledgerQueue, exchange: deadLetterExchange, routingKey: "")
    }

    /// The recorder's queue of remote status requests and the exchange they come through.
    public func declareStatusRequests(on connection: AMQPConnection) throws(AMQPError) {
        try connection.declareExchange(statusRequestExchange, type: "direct")
        try connection.declareQueue(statusRequestQueue, durable: false, autoDelete: true)
        try connection.bindQueue(statusRequestQueue, exchange: statusRequestExchange, routingKey: statusRequestQueue)
    }

    /// The stream of cancellations workers read (kept seven days).
    public func declareCancellations(on connection: AMQPConnection) throws(AMQPError) {
        try connection.declareExchange(cancelExchange, type: "fanout")
        try connection.declareQueue(cancelStream, arguments: [.string("x-queue-type", "stream"), .string("x-max-age", "7D")])
        try connection.bindQueue(cancelStream, exchange: cancelExchange, routingKey: "")
    }

    /// The message of a status event on `intents.status` (key `<type>.<state>`,
    /// `message_id` the intent id): what workers, producers (a denial) and the
    /// recorder (its announcements, not persistent) publish.
    /// Published `mandatory`: an event nothing is bound for comes back, and its
    /// intent is not acked. `body`, when given, is `event.encoded()` already written.
    public func statusMessage(for event: StatusEvent, persistent: Bool = true, encoded body: [UInt8]? = nil) -> OutgoingMessage {
        OutgoingMessage(
            exchange: statusExchange, routingKey: event.routingKey, body: body ?? event.encoded(),
            messageID: event.id, type: event.type, persistent: persistent, mandatory: true)
    }

    /// The header of the marker a worker writes into the cancellation stream to
    /// know when it has read everything before it.
    public static let syncHeader = "x-intent-sync"

    /// Deletes every queue and exchange of this topology that exists, messages
    /// and all: for benchmarks and tests that made a topology of their own.
    /// Returns how many objects were deleted.
    @discardableResult
    public func deleteAll(url: BrokerURL) -> Int {
        let queues =
            [workQueue, highPriorityQueue, ledgerQueue, deadLetterQueue, cancelStream, statusRequestQueue]
            + Set(retryDelays).map { retryQueue(forDelay: Double($0)).queue }
        let exchanges = [intentsExchange, statusExchange, deadLetterExchange, retryExchange, cancelExchange, statusRequestExchange]
        var connection: AMQPConnection?
        var deleted = 0
        for (name, isQueue) in queues.map({ ($0, true) }) + exchanges.map({ ($0, false) }) {
            do {
                // A refused delete closes the channel: the next name gets a fresh connection.
                let live = try connection ?? AMQPConnection(url: url, connectTimeout: 3, rpcTimeout: 5)
                connection = live
                if isQueue { try live.deleteQueue(name) } else { try live.deleteExchange(name) }
                deleted += 1
            } catch {
                connection?.abandon()
                connection = nil
            }
        }
        connection?.close()
        return deleted
    }

    /// The retry queue for a wanted delay: its name, its bucket label and its delay.
    public func retryQueue(forDelay seconds: Double) -> (queue: String, bucket: String, seconds: Int) {
        let delays = retryDelays.isEmpty ? [1] : retryDelays.sorted()
        let chosen = delays.last { Double($0) <= seconds } ?? delays[0]
        return ("\(retryExchange).\(chosen)s", "\(chosen)s", chosen)
    }

    /// The delay queues of retries: no consumer; each message waits out the
    /// queue's TTL and is dead-lettered back to `intents` with its own routing key.
    /// Quorum queues, like the others, so a retry survives the loss of a cluster
    /// node and a worker can redeclare them while one node is down.
    public func declareRetries(on connection: AMQPConnection) throws(AMQPError) {
        try connection.declareExchange(retryExchange, type: "headers")
        for delay in Set(retryDelays).sorted() {
            let (queue, bucket, seconds) = retryQueue(forDelay: Double(delay))
            let arguments: [AMQPConnection.Argument] = [
                .string("x-queue-type", "quorum"),
                .integer("x-message-ttl", Int64(seconds) * 1000),
                .string("x-dead-letter-exchange", intentsExchange),
            ]
            func declare() throws(AMQPError) { try connection.declareQueue(queue, arguments: arguments) }
            do {
                try declare()
            } catch  where error.replyCode == 406 {
                // An earlier IntentQueue declared the retry queues as classic queues.
                // An empty one is replaced. One still holding retries (older workers may
                // still be filling it during a rolling upgrade) is kept and used as it
                // is: a later start replaces it once it is empty.
                try connection.reopenChannel()
                do {
                    try connection.deleteQueue(queue, ifEmpty: true)
                    try declare()
                } catch  where error.replyCode == 406 {
                    try connection.reopenChannel()
                }
            }
            try connection.bindQueue(queue, exchange: retryExchange, routingKey: "", arguments: Self.retryBinding(bucket))
            // Earlier IntentQueues bound with "x-match: all", under which a headers exchange ignores every `x-`
            // argument: that binding matched any message, and each retry went to every delay queue. It goes.
            try connection.unbindQueue(
                queue, exchange: retryExchange, routingKey: "", arguments: ["x-match": .string("all"), Self.retryBucketHeader: .string(bucket)])
        }
    }

    /// The arguments binding a delay queue to `intents.retry` for its bucket. The bucket header starts with `x-`,
    /// which a headers exchange matches only under `all-with-x` (RabbitMQ 3.10 and later).
    public static func retryBinding(_ bucket: String) -> [String: HeaderValue] {
        ["x-match": .string("all-with-x"), retryBucketHeader: .string(bucket)]
    }

    /// The work queue with its dead letter, bound for each served type.
    public func declareWork(on connection: AMQPConnection, types: [String]) throws(AMQPError) {
        try declareLedger(on: connection)
        try declareRetries(on: connection)
        try declareCancellations(on: connection)
        try connection.declareQueue(deadLetterQueue, arguments: [.string("x-queue-type", "quorum")])
        try connection.bindQueue(deadLetterQueue, exchange: deadLetterExchange, routingKey: "")
        for queue in [workQueue, highPriorityQueue] {
            try connection.declareQueue(
                queue,
                arguments: [
                    .string("x-queue-type", "quorum"),
                    .integer("x-delivery-limit", deliveryLimit),
                    .string("x-dead-letter-exchange", deadLetterExchange),
                ])
        }
        for type in types {
            try connection.bindQueue(workQueue, exchange: intentsExchange, routingKey: type)
            try connection.bindQueue(ledgerQueue, exchange: intentsExchange, routingKey: type)
            try connection.bindQueue(highPriorityQueue, exchange: intentsExchange, routingKey: type + IntentPriority.highSuffix)
            try connection.bindQueue(ledgerQueue, exchange: intentsExchange, routingKey: type + IntentPriority.highSuffix)
        }
    }
}
