import Foundation
import IntentKit
import Synchronization

/// The I/O thread of a consuming process (ARCHITECTURE §5).
///
/// One dedicated thread owns the rabbitmq-c connection: it reads deliveries and
/// hands them to Swift tasks through `deliveries`, and it alone publishes and
/// acks, on the commands tasks `send` back. Between calls it sleeps in `poll`
/// on the socket and a wake-up pipe, so a command is acted on at once and
/// heartbeats are serviced however long a handler runs. When the connection
/// fails it reconnects with backoff, redeclares, and resumes; commands about
/// deliveries of an older connection are dropped, since the broker requeued them.
public final class ConsumerLoop: Sendable {
    /// What the loop consumes and how: the broker, the queue, prefetch, heartbeat, and what to declare on each connection.
    public struct Configuration: Sendable {
        /// The broker, or the nodes of a cluster, to connect to.
        public var url: BrokerURL
        /// The queue consumed into `deliveries`, with manual acks.
        public var queue: String
        /// How many unacked deliveries the broker may send at once: the most intents this loop has in hand.
        public var prefetch: UInt16
        /// The AMQP heartbeat, in seconds.
        public var heartbeat: Int
        /// Declares what the consumer needs; runs on every (re)connection.
        public var declare: @Sendable (AMQPConnection) throws -> Void
        /// Where the fault-injection suite may kill the process.
        public var faults: FaultInjection
        /// More queues consumed on the same channel, with consume arguments
        /// (a stream's `x-stream-offset`, say). Their deliveries go to
        /// `onExtraDelivery`, called on the I/O thread and acked at once, so a
        /// busy `deliveries` consumer never holds them up.
        public var extraQueues: [(queue: String, arguments: [String: HeaderValue])] = []
        /// More queues consumed into `deliveries` like `queue` (the high-priority work queue), each with `prefetch`.
        public var alsoConsumed: [String] = []
        /// Called on the I/O thread with each delivery of `extraQueues`; publishes and acks wait while it runs.
        public var onExtraDelivery: @Sendable (Delivery) -> Void = { _ in }
        /// When set, called on the I/O thread with each delivery of `queue` and `alsoConsumed` instead of handing
        /// it to `deliveries` (which then only finishes when consuming stops): a consumer that starts its own
        /// task per delivery saves the hop through the stream's. It must return at once; publishes and acks wait
        /// while it runs.
        public var onDelivery: (@Sendable (Delivery) -> Void)?
        /// Called on the I/O thread when what was sent for a `DeliveryTag.local` is settled: true once the
        /// broker confirmed its publish (or once it was acked, rejected or found unsendable), false when the
        /// publish was refused or its connection was lost before the confirm.
        public var onLocalSettled: @Sendable (_ number: UInt64, _ done: Bool) -> Void = { _, _ in }
        /// How long (seconds) an ack may wait for others to go with it. Acks are off the path to a
        /// user's outcome (the status event was confirmed first), and one `multiple` ack settles many
        /// messages of a quorum queue in one log entry, which at a moderate load is most of what the
        /// broker spends per delivery. A delivery whose ack is lost with the connection comes again,
        /// and the ledger keeps its effects single. Acks go at once when half the prefetch waits.
        public var ackDelay: Double = 0.02

        /// A configuration without extra queues; `declare` runs on every connection before consuming starts.
        public init(
            url: BrokerURL, queue: String, prefetch: UInt16, heartbeat: Int = 30, faults: FaultInjection = .none,
            declare: @escaping @Sendable (AMQPConnection) throws -> Void
        ) {
            self.url = url
            self.queue = queue
            self.prefetch = prefetch
            self.heartbeat = heartbeat
            self.faults = faults
            self.declare = declare
        }
    }

    /// What a task asks the I/O thread to do.
    public enum Command: Sendable {
        /// Publish with confirms; when `thenAck` is set, ack that delivery once
        /// every message is confirmed (or requeue it if the broker refuses one).
        case publish([OutgoingMessage], thenAck: DeliveryTag?)
        /// Ack a delivery (dropped when it belongs to an earlier connection).
        case ack(DeliveryTag)
        /// Reject a delivery: back to its queue with `requeue`, else dropped or dead-lettered as the queue says.
        case reject(DeliveryTag, requeue: Bool)
    }

    private struct Shared {
        var commands: [Command] = []
        var stopConsuming = false
        var shutdown = false
        var connected = false
        /// The generation of the connection up now (0 while there is none).
        var generation: UInt64 = 0
    }

    /// Deliveries of the configured queue, for tasks to handle; finishes once consuming stops or the loop shuts down.
    public let deliveries: AsyncStream<Delivery>
    private let continuation: AsyncStream<Delivery>.Continuation
    private let shared = Mutex(Shared())
    private let signal = WakeSignal()
    private let exited = Completion()
    /// The socket of the connection being served, or -1 between connections: for tests of how a round leaves it.
    let servedSocket = Atomic<Int32>(-1)
    /// How many rounds sent their commands corked: for tests that must know the corked path was taken.
    let corkedRounds = Atomic<Int>(0)
    private let configuration: Configuration
    private let logger: Logger

    /// A loop that does nothing until `start()`.
    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        (deliveries, continuation) = AsyncStream.makeStream(of: Delivery.self)
    }

    /// Starts the I/O thread.
    public func start() {
        // For the system, which keeps 15 bytes: "iq-io work" for intents.work, "iq-io high" for intents.work.high.
        Thread.named("iq-io \(configuration.queue.split(separator: ".").last ?? "")") { [self] in
            run()
        }.start()
    }

    /// Hands a command to the I/O thread; callable from any thread or task.
    public func send(_ command: Command) {
        shared.withLock { $0.commands.append(command) }
        signal.wake()
    }

    /// Whether the loop currently has a live connection.
    public var isConnected: Bool { shared.withLock { $0.connected } }

    /// Whether `tag` came on the connection up now (or is local): one of a lost connection is the broker's again.
    public func isLive(_ tag: DeliveryTag) -> Bool {
        tag.isLocal || shared.withLock { $0.connected && $0.generation == tag.generation }
    }

    /// Cancels the consumer: no more deliveries; `deliveries` finishes.
    public func stopConsuming() {
        shared.withLock { $0.stopConsuming = true }
        signal.wake()
    }

    /// Publishes what was sent, waits for the last confirms (at most `grace`
    /// seconds), closes the connection and ends the thread. Deliveries still
    /// unacked then are requeued by the broker.
    public func shutdown(grace: Double = 5) async {
        shared.withLock {
            $0.stopConsuming = true
            $0.shutdown = true
        }
        shutdownDeadline.withLock { $0 = Date().addingTimeInterval(grace) }
        signal.wake()
        await exited.wait()
    }

    private let shutdownDeadline = Mutex(Date.distantFuture)

    // MARK: - The I/O thread

    private func run() {
        ReconnectLoop.run(
            url: configuration.url, logger: logger, isStopping: { shared.withLock { $0.shutdown } }, pause: sleep(seconds:),
            connect: { generation in
                let connection = try AMQPConnection(url: configuration.url, heartbeat: configuration.heartbeat, generation: generation)
                try configuration.declare(connection)
                try connection.enableConfirms()
                try connection.setPrefetch(configuration.prefetch)
                return connection
            },
            serve: { connection in
                shared.withLock {
                    $0.connected = true
                    $0.generation = connection.generation
                }
                defer {
                    shared.withLock {
                        $0.connected = false
                        $0.generation = 0
                    }
                }
                try serve(connection)
            })
        continuation.finish()
        logger.info("I/O thread stopped", metadata: ["amqp.queue": configuration.queue])
        exited.complete()
    }

    private func sleep(seconds: Double) {
        let deadline = Date().addingTimeInterval(seconds)
        while !shared.withLock({ $0.shutdown }) {
            finishIfStopped()
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { return }
            signal.wait(socket: -1, seconds: min(remaining, 0.5))
            signal.drain()
        }
    }

    /// Between connections, or on one that consumes nothing: once consuming is to stop, `deliveries` finishes (no
    /// delivery can come meanwhile), so that a consumer waiting for its end goes on to shut the loop down.
    private func finishIfStopped() {
        if shared.withLock({ $0.stopConsuming }) { continuation.finish() }
    }

    /// One awaited confirm: the delivery to ack when all messages of its command are confirmed.
    private struct ConfirmGroup {
        var remaining: Int
        var tag: UInt64
        var intentID: String?
        var refused = false
        /// A message of the group could not be sent at all: the delivery is dead-lettered.
        var unsendable = false
        /// The number of a `DeliveryTag.local`: settled through `onLocalSettled` instead of acked.
        var local: UInt64?
    }

    private func serve(_ connection: AMQPConnection) throws {
        let generation = connection.generation
        servedSocket.store(connection.socketDescriptor, ordering: .relaxed)
        defer { servedSocket.store(-1, ordering: .relaxed) }
        var consumerTag: String?
        var extraTags: [String] = []
        var extraConsumers: [String] = []
        if !shared.withLock({ $0.stopConsuming }) {
            for extra in configuration.extraQueues {
                extraTags.append(try connection.consume(extra.queue, arguments: extra.arguments))
            }
            consumerTag = try connection.consume(configuration.queue)
            for queue in configuration.alsoConsumed { extraConsumers.append(try connection.consume(queue)) }
        }
        var consuming = consumerTag != nil
        if !consuming { finishIfStopped() }
        var outstanding = Set<UInt64>()
        var confirms = ConfirmWindow<Int>()
        var groups: [Int: ConfirmGroup] = [:]
        // Publishes of local tags still unconfirmed when the connection ends are lost with it.
        defer {
            for entry in groups.values { if let local = entry.local { configuration.onLocalSettled(local, false) } }
        }
        var nextGroup = 0
        var acks: [UInt64] = []
        // The uptime (ns) at which the acks waiting now must go.
        var acksDue = UInt64.max
        let ackDelay = UInt64(max(0, min(configuration.ackDelay, 1)) * 1e9)
        let ackBatch = max(1, Int(configuration.prefetch) / 2)
        let idleWait = Int32(min(1_000, max(100, configuration.heartbeat * 250)))
        // Whether the socket may have something to read: false only after a wait
        // that a task's command ended with nothing on the socket. Read anyway
        // every 100 ms, which keeps rabbitmq-c's heartbeats going.
        var mayRead = true
        var lastRead: UInt64 = 0
        let faults = configuration.faults

        func settle(_ group: Int, refused: Bool) throws {
            guard var entry = groups[group] else { return }
            entry.remaining -= 1
            entry.refused = entry.refused || refused
            if entry.remaining > 0 {
                groups[group] = entry
                return
            }
            groups[group] = nil
            if let local = entry.local {
                configuration.onLocalSettled(local, entry.unsendable || !entry.refused)
            } else if entry.unsendable {
                outstanding.remove(entry.tag)
                try connection.reject(entry.tag, requeue: false)
            } else if entry.refused {
                logger.warning(
                    "the broker refused a status event; the intent will be delivered again",
                    metadata: ["intent.id": entry.intentID ?? ""])
                outstanding.remove(entry.tag)
                try connection.reject(entry.tag, requeue: true)
            } else {
                faults.hit(.beforeAck, intentID: entry.intentID)
                acks.append(entry.tag)
            }
        }

        func confirm(upTo sequence: UInt64, multiple: Bool, refused: Bool) throws {
            for group in confirms.confirm(sequence, multiple: multiple) { try settle(group, refused: refused) }
        }

        func send(_ message: OutgoingMessage, group: Int?) throws {
            // Signed with the connection's user, which the broker verifies: the
            // recorder trusts status events only from the users it is told to.
            var signed = message
            if signed.userID == nil { signed.userID = connection.url.user }
            confirms.published(try connection.publish(signed), group: group)
        }

        /// Sends the waiting acks once they are due (or at once with `force`); returns the milliseconds until they are.
        func flushAcks(now: UInt64, force: Bool) throws -> Int32? {
            guard !acks.isEmpty else { return nil }
            if acksDue == .max { acksDue = now &+ ackDelay }
            if !force, acks.count < ackBatch, now < acksDue {
                return Int32(clamping: (acksDue - now + 999_999) / 1_000_000)
            }
            acks.sort()
            // One `multiple` ack covers the longest run from the bottom with no other unacked delivery below it.
            var covered = 0
            for tag in outstanding.sorted() {
                guard covered < acks.count, acks[covered] == tag else { break }
                covered += 1
            }
            if covered > 0 { try connection.ack(acks[covered - 1], multiple: covered > 1) }
            for tag in acks[covered...] { try connection.ack(tag) }
            for tag in acks { outstanding.remove(tag) }
            acks.removeAll(keepingCapacity: true)
            acksDue = .max
            return nil
        }

        while true {
            signal.drain()
            let now = DispatchTime.now().uptimeNanoseconds
            let (commands, stopConsuming, shutdown) = shared.withLock { state in
                defer { state.commands.removeAll(keepingCapacity: true) }
                return (state.commands, state.stopConsuming, state.shutdown)
            }

            // Should the connection fail partway, the rest of the batch is dropped with it: its local tags are settled
            // (a publish as lost, to be run again; an ack or a reject as done, since nothing was to be published).
            var handled = 0
            // The frames of several commands' publishes and rejects leave together, in as few segments as they fit,
            // rather than a segment (and a wake-up of the broker's reader) each; a round of one sends at once, as it
            // would anyway. Uncorked before the round reads or waits; acks go later, uncorked (`flushAcks`).
            let corked = commands.count > 1
            if corked {
                connection.setCorked(true)
                corkedRounds.add(1, ordering: .relaxed)
            }
            do {
                for command in commands {
                    handled += 1
                    switch command {
                    case .publish(let messages, let thenAck):
                        let tag = thenAck.flatMap { $0.generation == generation ? $0.value : nil }
                        // A local tag (no broker delivered it) has nothing to ack: its confirm settles it.
                        let local = thenAck.flatMap { $0.isLocal ? $0.value : nil }
                        if thenAck != nil, tag == nil, local == nil { continue }  // its delivery belongs to a dead connection
                        if messages.isEmpty {
                            if let tag { acks.append(tag) }
                            if let local { configuration.onLocalSettled(local, true) }
                            continue
                        }
                        var group: Int?
                        if tag != nil || local != nil {
                            group = nextGroup
                            groups[nextGroup] = ConfirmGroup(
                                remaining: messages.count, tag: tag ?? 0, intentID: messages.last?.messageID, local: local)
                            nextGroup += 1
                        }
                        var unsendable: String?
                        for message in messages {
                            if let problem = message.problem {
                                // Sent, it would break the connection for every other delivery on it.
                                logger.error(
                                    "a message cannot be sent and is dropped: \(problem)",
                                    metadata: ["intent.id": message.messageID ?? "", "amqp.exchange": message.exchange])
                                unsendable = problem
                                continue
                            }
                            try send(message, group: group)
                        }
                        if let group, unsendable != nil {
                            // Its delivery goes to the dead-letter queue rather than round and round.
                            groups[group]?.unsendable = true
                            groups[group]?.remaining -= messages.filter { $0.problem != nil }.count
                            if groups[group]?.remaining == 0, let entry = groups.removeValue(forKey: group) {
                                if let local = entry.local {
                                    configuration.onLocalSettled(local, true)
                                } else {
                                    outstanding.remove(entry.tag)
                                    try connection.reject(entry.tag, requeue: false)
                                }
                            }
                        }
                        if group != nil {
                            // Under fault injection what the round corked leaves first, so that a kill here comes after
                            // the status publish has left the process, as the point says (a kill drops what the
                            // kernel still holds back).
                            if corked, faults.isEnabled {
                                connection.setCorked(false)
                                connection.setCorked(true)
                            }
                            faults.hit(.afterStatusPublish, intentID: messages.last?.messageID)
                        }
                    case .ack(let tag):
                        if tag.isLocal { configuration.onLocalSettled(tag.value, true) }
                        if tag.generation == generation { acks.append(tag.value) }
                    case .reject(let tag, let requeue):
                        if tag.isLocal { configuration.onLocalSettled(tag.value, true) }
                        guard tag.generation == generation else { continue }
                        outstanding.remove(tag.value)
                        try connection.reject(tag.value, requeue: requeue)
                    }
                }
            } catch {
                if corked { connection.setCorked(false) }
                for command in commands[max(0, handled - 1)...] {
                    switch command {
                    case .publish(_, let tag?) where tag.isLocal: configuration.onLocalSettled(tag.value, false)
                    case .ack(let tag) where tag.isLocal, .reject(let tag, _) where tag.isLocal: configuration.onLocalSettled(tag.value, true)
                    default: break
                    }
                }
                throw error
            }
            if corked { connection.setCorked(false) }

            if stopConsuming, consuming {
                consuming = false
                if let consumerTag { try connection.cancel(consumerTag: consumerTag) }
                for tag in extraTags + extraConsumers { try connection.cancel(consumerTag: tag) }
                continuation.finish()
                logger.info("stopped consuming", metadata: ["amqp.queue": configuration.queue])
            }

            let readNow = mayRead || connection.hasBufferedData || now &- lastRead > 100_000_000
            if readNow { lastRead = now }
            var budget = readNow ? 512 : 0
            while budget > 0, let event = try connection.nextEvent(timeout: 0) {
                budget -= 1
                switch event {
                case .delivery(let delivery) where extraTags.contains(delivery.consumerTag):
                    configuration.onExtraDelivery(delivery)
                    outstanding.insert(delivery.tag.value)
                    acks.append(delivery.tag.value)
                case .delivery(let delivery):
                    if consuming {
                        outstanding.insert(delivery.tag.value)
                        if let onDelivery = configuration.onDelivery {
                            onDelivery(delivery)
                        } else {
                            continuation.yield(delivery)
                        }
                    } else {
                        try connection.reject(delivery.tag.value, requeue: true)
                    }
                case .confirmed(let sequence, let multiple):
                    try confirm(upTo: sequence, multiple: multiple, refused: false)
                case .rejected(let sequence, let multiple):
                    try confirm(upTo: sequence, multiple: multiple, refused: true)
                    // A channel that once failed to reach a quorum queue (its leader moved
                    // as a cluster node went down) can go on refusing every publish; a new
                    // connection starts with a fresh channel. Unacked deliveries return to
                    // the queue and come back, and OnceOnly keeps their effects single. The acks
                    // already due go first: their outcomes are confirmed, and they need not run again.
                    _ = try? flushAcks(now: now, force: true)
                    throw AMQPError(
                        .rejected, context: "publishing status events",
                        detail: "the broker refused a publish (basic.nack); reconnecting for a fresh channel")
                case .returned(let message):
                    // Nothing was bound for it (the ledger, or a retry queue, is gone): its intent must
                    // not be acked. A new connection redeclares the topology; every unacked delivery,
                    // this one's too, comes back, and the ledger keeps effects single.
                    logger.warning(
                        "a message was returned (\(message.replyText)); reconnecting to redeclare the queues",
                        metadata: [
                            "amqp.routing_key": message.routingKey, "amqp.exchange": message.exchange,
                            "intent.id": message.messageID ?? "",
                        ])
                    // The acks already due go first, as for a refused publish.
                    _ = try? flushAcks(now: now, force: true)
                    throw AMQPError(
                        .unroutable, context: "publishing to '\(message.exchange)'",
                        detail: "the broker returned a message with key '\(message.routingKey)': nothing is bound for it")
                }
                // All that rabbitmq-c had read is taken. Whatever has come on the socket since ends the wait below at
                // once, so asking the socket again here (at a light load a `recv` and a `poll` that find nothing,
                // after every frame) is left to that wait. The budget is not spent, so the round does not come
                // straight back.
                if !connection.hasBufferedData { break }
            }
            let acksWait = try flushAcks(now: now, force: shutdown || stopConsuming || ackDelay == 0)

            if shutdown {
                let confirmsDone = groups.isEmpty && commands.isEmpty
                if confirmsDone || Date() >= shutdownDeadline.withLock({ $0 }) { return }
            }
            // Only a read its budget cut short comes straight back. One that found the socket empty, or none, waits:
            // a frame or a task's command (its wake-up comes after this round's drain) ends the wait at once, so
            // going round again first would only ask the socket once more, a `recv` and a `poll` for nothing.
            if readNow, budget == 0 {
                mayRead = true
            } else {
                mayRead = signal.wait(
                    socket: connection.hasBufferedData ? -1 : connection.socketDescriptor,
                    timeoutMilliseconds: connection.hasBufferedData ? 0 : min(idleWait, acksWait ?? idleWait))
            }
        }
    }
}
