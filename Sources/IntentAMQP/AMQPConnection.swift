import CRabbitMQ
import Foundation
import Synchronization

/// One rabbitmq-c connection with one channel.
///
/// rabbitmq-c is not thread-safe and services heartbeats only inside its own
/// calls, so a connection belongs to the single thread that opened it; it is
/// deliberately not `Sendable`. Every call that returns a reply goes through
/// `check(_:context:)`.
public final class AMQPConnection {
    /// The node this connection reached (one of the URL's endpoints).
    public private(set) var url: BrokerURL
    private var state: amqp_connection_state_t?
    private let channel: amqp_channel_t = 1
    private var nextPublishSequence: UInt64 = 1
    private var confirmsEnabled = false
    /// How long one publish may block before the socket is shut down.
    public var sendTimeout: Double = 30

    /// What a call to `nextEvent` found.
    public enum Event {
        /// A message the broker delivered to one of this channel's consumers.
        case delivery(Delivery)
        /// Publisher confirm: every sequence number up to and including this one
        /// when `multiple`, else just this one.
        case confirmed(sequence: UInt64, multiple: Bool)
        /// Publisher nack: the broker could not take these publishes (counted as for `confirmed`).
        case rejected(sequence: UInt64, multiple: Bool)
        /// A `mandatory` message the broker sent back because nothing was bound for it.
        case returned(ReturnedMessage)
    }

    /// Loads rabbitmq-c, which the first connection otherwise does (once per process): for a long-running
    /// service to stop at its start when the library is missing, which no reconnect would mend.
    public static func loadLibrary() throws(AMQPError) {
        guard iq_rabbitmq_load() == 0 else { return }
        let reason = iq_rabbitmq_error().map { String(cString: $0) } ?? "could not load rabbitmq-c"
        throw AMQPError(.library, context: "starting", detail: reason)
    }

    /// Opens a TCP (or TLS) connection, logs in and opens channel 1.
    /// - Parameters:
    ///   - url: the broker, its user and virtual host; `amqps` for TLS.
    ///   - heartbeat: seconds; the broker and this side each expect traffic at that interval.
    ///   - connectTimeout: how long the TCP connect, and then the login handshake, may each take; the nodes of a
    ///     cluster URL share twice that in all, so that a tool's time to give up does not grow with the nodes.
    ///   - rpcTimeout: how long a synchronous command (declare, bind, consume…) may
    ///     wait for the broker's answer; a broker that stops answering then fails
    ///     the call instead of hanging it.
    ///   - generation: stamped on every delivery tag of this connection.
    public init(
        url: BrokerURL, heartbeat: Int = 30, connectTimeout: Double = 5, rpcTimeout: Double = 10,
        generation: UInt64 = 0
    ) throws(AMQPError) {
        let endpoints = url.endpoints
        self.url = endpoints[0]
        self.generation = generation
        // Several URLs are one cluster: start from the node that answered last,
        // and go on to the next one when a node cannot be reached.
        let first = Self.preferredEndpoint.load(ordering: .relaxed) % endpoints.count
        var failure: AMQPError?
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, min(connectTimeout, 86_400)) * 2_000))
        for offset in 0..<endpoints.count {
            // What the nodes tried so far left: a node is tried only with time enough to answer.
            let left = ContinuousClock.now.duration(to: deadline)
            let remaining = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
            guard offset == 0 || remaining >= 0.05 else { break }
            let index = (first + offset) % endpoints.count
            self.url = endpoints[index]
            // rabbitmq-c is loaded here, by the first connection (CRabbitMQ.h says why).
            guard let state = iq_amqp_new_connection() else {
                let reason = iq_rabbitmq_error().map { String(cString: $0) } ?? "out of memory"
                throw AMQPError(.library, context: "connecting to \(self.url)", detail: reason)
            }
            self.state = state
            do {
                let timeout = offset == 0 ? connectTimeout : min(connectTimeout, remaining)
                try open(state: state, heartbeat: heartbeat, connectTimeout: timeout, rpcTimeout: rpcTimeout)
                Self.preferredEndpoint.store(index, ordering: .relaxed)
                return
            } catch {
                close()
                // A bad setting is bad on every node; only an unreachable node is skipped.
                guard error.kind == .connection || error.kind == .timeout else { throw error }
                failure = error
            }
        }
        throw failure!
    }

    /// The index, in a URL's endpoints, of the node that last accepted a connection.
    private static let preferredEndpoint = Atomic<Int>(0)

    /// Which connection this is, as its owner counts them; stamped on its delivery tags so acks for an older one are dropped.
    public let generation: UInt64

    private func open(state: amqp_connection_state_t, heartbeat: Int, connectTimeout: Double, rpcTimeout: Double) throws(AMQPError) {
        let context = "connecting to \(url)"
        let socket: OpaquePointer?
        if url.tls {
            socket = iq_amqp_ssl_socket_new(state)
            guard let socket else { throw AMQPError(.library, context: context, detail: "could not create a TLS socket") }
            iq_amqp_ssl_socket_set_verify_peer(socket, 1)
            iq_amqp_ssl_socket_set_verify_hostname(socket, 1)
            if let authority = url.certificateAuthority {
                let status = iq_amqp_ssl_socket_set_cacert(socket, authority)
                guard status == AMQP_STATUS_OK.rawValue else {
                    throw AMQPError(
                        .configuration, context: context, detail: "cannot load the CA certificate \(authority): \(Self.statusString(status))")
                }
            }
        } else {
            socket = iq_amqp_tcp_socket_new(state)
        }
        guard let socket else {
            throw AMQPError(.library, context: context, detail: "could not create a socket")
        }
        var handshake = timeval(seconds: connectTimeout)
        iq_amqp_set_handshake_timeout(state, &handshake)
        var rpc = timeval(seconds: rpcTimeout)
        iq_amqp_set_rpc_timeout(state, &rpc)
        var timeout = timeval(seconds: connectTimeout)
        let status = iq_amqp_socket_open_noblock(socket, url.host, Int32(url.port), &timeout)
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError(.connection, context: context, detail: Self.statusString(status))
        }
        try check(
            iq_amqp_login_plain(state, url.virtualHost, 0, 131_072, Int32(heartbeat), url.user, url.password),
            context: "logging in to \(url)")
        iq_amqp_channel_open(state, channel)
        try check(iq_amqp_get_rpc_reply(state), context: "opening a channel on \(url)")
    }

    deinit { close() }

    /// Closes the channel and connection politely when possible, and frees the
    /// connection. Safe to call more than once.
    public func close() {
        guard let state else { return }
        self.state = nil
        if iq_amqp_get_socket(state) != nil, iq_amqp_get_sockfd(state) >= 0 {
            _ = iq_amqp_channel_close(state, channel, Int32(AMQP_REPLY_SUCCESS))
            _ = iq_amqp_connection_close(state, Int32(AMQP_REPLY_SUCCESS))
        }
        iq_amqp_destroy_connection(state)
    }

    /// Drops the connection without the closing handshake (after a failure).
    public func abandon() {
        guard let state else { return }
        self.state = nil
        iq_amqp_destroy_connection(state)
    }

    /// False once `close()` or `abandon()` has run.
    public var isOpen: Bool { state != nil }

    private func live(_ context: @autoclosure () -> String) throws(AMQPError) -> amqp_connection_state_t {
        guard let state else { throw AMQPError(.connection, context: context(), detail: "the connection is closed") }
        return state
    }

    // MARK: - The gate

    /// The one gate for rabbitmq-c replies: maps the four reply kinds to an
    /// `AMQPError` carrying the context and the server's or library's reason.
    func check(_ reply: amqp_rpc_reply_t, context: @autoclosure () -> String) throws(AMQPError) {
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            return
        case AMQP_RESPONSE_NONE:
            throw AMQPError(.library, context: context(), detail: "missing RPC reply type")
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            let kind: AMQPError.Kind = reply.library_error == AMQP_STATUS_TIMEOUT.rawValue ? .timeout : .connection
            throw AMQPError(kind, context: context(), detail: Self.statusString(reply.library_error))
        case AMQP_RESPONSE_SERVER_EXCEPTION:
            throw serverError(method: reply.reply.id, decoded: reply.reply.decoded, context: context())
        default:
            throw AMQPError(.library, context: context(), detail: "unknown reply type \(reply.reply_type.rawValue)")
        }
    }

    private func checkStatus(_ status: Int32, context: @autoclosure () -> String) throws(AMQPError) {
        guard status == AMQP_STATUS_OK.rawValue else {
            throw AMQPError(.connection, context: context(), detail: Self.statusString(status))
        }
    }

    private func serverError(method: amqp_method_number_t, decoded: UnsafeMutableRawPointer?, context: String) -> AMQPError {
        switch method {
        case AMQP_CONNECTION_CLOSE_METHOD:
            let close = decoded!.assumingMemoryBound(to: amqp_connection_close_t.self).pointee
            if let state { _ = iq_amqp_send_method(state, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, nil) }
            return AMQPError(
                .server, context: context, detail: "the broker closed the connection: \(close.reply_text.string)", replyCode: close.reply_code)
        case AMQP_CHANNEL_CLOSE_METHOD:
            let close = decoded!.assumingMemoryBound(to: amqp_channel_close_t.self).pointee
            if let state { _ = iq_amqp_send_method(state, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, nil) }
            return AMQPError(
                .server, context: context, detail: "the broker closed the channel: \(close.reply_text.string)", replyCode: close.reply_code)
        default:
            return AMQPError(.server, context: context, detail: String(format: "unexpected server method 0x%08X", method))
        }
    }

    static func statusString(_ status: Int32) -> String {
        String(cString: iq_amqp_error_string2(status))
    }

    // MARK: - Topology

    /// A queue argument (`x-queue-type`, `x-delivery-limit`, …).
    public enum Argument: Sendable, Hashable {
        /// A string argument: its name and value (`x-queue-type`, `quorum`).
        case string(String, String)
        /// An integer argument: its name and value (`x-delivery-limit`, 5).
        case integer(String, Int64)
    }

    /// Declares an exchange; with `passive`, only checks that it exists (which
    /// needs no `configure` permission: what producers and operators do).
    public func declareExchange(_ name: String, type: String = "topic", durable: Bool = true, passive: Bool = false) throws(AMQPError) {
        let state = try live("declaring exchange \(name)")
        withBytes(name) { exchange in
            withBytes(type) { kind in
                _ = iq_amqp_exchange_declare(state, channel, exchange, kind, passive ? 1 : 0, durable ? 1 : 0, 0, 0, iq_amqp_empty_table())
            }
        }
        try check(iq_amqp_get_rpc_reply(state), context: passive ? "looking for exchange '\(name)'" : "declaring exchange '\(name)'")
    }

    /// What `queue.declare` answered: the queue's name (the broker's choice
    /// for an empty name), its ready messages and its consumers.
    public struct QueueInfo: Sendable, Hashable {
        /// The queue's name: the one asked for, or the broker's choice for an empty one.
        public var name: String
        /// How many messages were ready in the queue (unacked ones not counted).
        public var messages: Int
        /// How many consumers the queue had.
        public var consumers: Int
    }

    /// Declares a queue and returns what the broker answered; an empty name lets the broker choose one.
    /// Redeclaring with the same settings is harmless; with others, the broker refuses (406) and closes the channel.
    @discardableResult
    public func declareQueue(
        _ name: String, durable: Bool = true, exclusive: Bool = false, autoDelete: Bool = false,
        arguments: [Argument] = []
    ) throws(AMQPError) -> QueueInfo {
        try queueDeclare(name, passive: false, durable: durable, exclusive: exclusive, autoDelete: autoDelete, arguments: arguments)
    }

    /// Asks about an existing queue without declaring it. A queue that does not
    /// exist makes the broker close the channel (an error of kind `.server`, 404).
    public func inspectQueue(_ name: String) throws(AMQPError) -> QueueInfo {
        try queueDeclare(name, passive: true, durable: false, exclusive: false, autoDelete: false, arguments: [])
    }

    private func queueDeclare(
        _ name: String, passive: Bool, durable: Bool, exclusive: Bool, autoDelete: Bool,
        arguments: [Argument]
    ) throws(AMQPError) -> QueueInfo {
        let state = try live("declaring queue \(name)")
        let entries: [(String, HeaderValue)] = arguments.map { argument in
            switch argument {
            case .string(let key, let value): (key, .string(value))
            case .integer(let key, let value): (key, .integer(value))
            }
        }
        let ok = withTable(entries) { table in
            withBytes(name) { queue in
                iq_amqp_queue_declare(state, channel, queue, passive ? 1 : 0, durable ? 1 : 0, exclusive ? 1 : 0, autoDelete ? 1 : 0, table)
            }
        }
        try check(iq_amqp_get_rpc_reply(state), context: passive ? "looking up queue '\(name)'" : "declaring queue '\(name)'")
        guard let ok else { return QueueInfo(name: name, messages: 0, consumers: 0) }
        return QueueInfo(name: ok.pointee.queue.string, messages: Int(ok.pointee.message_count), consumers: Int(ok.pointee.consumer_count))
    }

    /// A headers table for rabbitmq-c, valid only inside `body`.
    private func withTable<R>(_ entries: [(String, HeaderValue)], _ body: (amqp_table_t) -> R) -> R {
        guard !entries.isEmpty else { return body(iq_amqp_empty_table()) }
        var allocations: [UnsafeMutableRawPointer] = []
        defer { for allocation in allocations { free(allocation) } }
        func copy(_ text: String) -> UnsafeMutablePointer<CChar> {
            let pointer = strdup(text)!
            allocations.append(UnsafeMutableRawPointer(pointer))
            return pointer
        }
        func build(_ entries: [(String, HeaderValue)]) -> amqp_table_t {
            let raw = malloc(max(1, entries.count) * MemoryLayout<amqp_table_entry_t>.stride)!
            allocations.append(raw)
            let buffer = raw.bindMemory(to: amqp_table_entry_t.self, capacity: entries.count)
            for (index, (key, value)) in entries.enumerated() {
                var entry = amqp_table_entry_t()
                entry.key = iq_amqp_cstring_bytes(copy(key))
                switch value {
                case .string(let text):
                    entry.value.kind = UInt8(AMQP_FIELD_KIND_UTF8.rawValue)
                    entry.value.value.bytes = iq_amqp_cstring_bytes(copy(text))
                case .integer(let number):
                    entry.value.kind = UInt8(AMQP_FIELD_KIND_I64.rawValue)
                    entry.value.value.i64 = number
                case .table(let nested):
                    entry.value.kind = UInt8(AMQP_FIELD_KIND_TABLE.rawValue)
                    entry.value.value.table = build(nested.sorted { $0.key < $1.key })
                }
                buffer[index] = entry
            }
            return amqp_table_t(num_entries: Int32(entries.count), entries: buffer)
        }
        return body(build(entries))
    }

    /// Binds a queue to an exchange: messages published there with a matching key (or, on a headers exchange, matching `arguments`) reach it.
    public func bindQueue(_ queue: String, exchange: String, routingKey: String, arguments: [String: HeaderValue] = [:]) throws(AMQPError) {
        try binding(queue, exchange: exchange, routingKey: routingKey, arguments: arguments, remove: false)
    }

    /// Removes the binding `bindQueue` made with the same arguments; a binding that is not there is no error.
    public func unbindQueue(_ queue: String, exchange: String, routingKey: String, arguments: [String: HeaderValue] = [:]) throws(AMQPError) {
        try binding(queue, exchange: exchange, routingKey: routingKey, arguments: arguments, remove: true)
    }

    private func binding(_ queue: String, exchange: String, routingKey: String, arguments: [String: HeaderValue], remove: Bool) throws(AMQPError) {
        let state = try live("\(remove ? "unbinding" : "binding") queue \(queue)")
        withTable(arguments.sorted { $0.key < $1.key }) { table in
            withBytes(queue) { queueBytes in
                withBytes(exchange) { exchangeBytes in
                    withBytes(routingKey) { keyBytes in
                        if remove {
                            _ = iq_amqp_queue_unbind(state, channel, queueBytes, exchangeBytes, keyBytes, table)
                        } else {
                            _ = iq_amqp_queue_bind(state, channel, queueBytes, exchangeBytes, keyBytes, table)
                        }
                    }
                }
            }
        }
        try check(
            iq_amqp_get_rpc_reply(state),
            context: "\(remove ? "unbinding" : "binding") queue '\(queue)' \(remove ? "from" : "to") '\(exchange)' with key '\(routingKey)'")
    }

    /// Deletes a queue and its messages; with `ifEmpty`, the broker refuses
    /// (406, closing the channel) when the queue holds any.
    public func deleteQueue(_ name: String, ifEmpty: Bool = false) throws(AMQPError) {
        let state = try live("deleting queue \(name)")
        withBytes(name) { queue in _ = iq_amqp_queue_delete(state, channel, queue, 0, ifEmpty ? 1 : 0) }
        try check(iq_amqp_get_rpc_reply(state), context: "deleting queue '\(name)'")
    }

    /// Opens the channel again after the broker closed it for an error (a
    /// refused declaration, say), keeping the connection. Publisher confirms
    /// are off on the new channel.
    public func reopenChannel() throws(AMQPError) {
        let state = try live("reopening the channel")
        iq_amqp_channel_open(state, channel)
        try check(iq_amqp_get_rpc_reply(state), context: "reopening a channel on \(url)")
        confirmsEnabled = false
        nextPublishSequence = 1
    }

    /// Deletes an exchange and its bindings.
    public func deleteExchange(_ name: String) throws(AMQPError) {
        let state = try live("deleting exchange \(name)")
        withBytes(name) { exchange in _ = iq_amqp_exchange_delete(state, channel, exchange, 0) }
        try check(iq_amqp_get_rpc_reply(state), context: "deleting exchange '\(name)'")
    }

    /// Puts the channel in confirm mode: every publish is then acked or nacked by the broker.
    public func enableConfirms() throws(AMQPError) {
        let state = try live("enabling publisher confirms")
        _ = iq_amqp_confirm_select(state, channel)
        try check(iq_amqp_get_rpc_reply(state), context: "enabling publisher confirms")
        confirmsEnabled = true
        nextPublishSequence = 1
    }

    /// How many unacked deliveries the broker may send this channel.
    public func setPrefetch(_ count: UInt16) throws(AMQPError) {
        let state = try live("setting prefetch")
        _ = iq_amqp_basic_qos(state, channel, 0, count, 0)
        try check(iq_amqp_get_rpc_reply(state), context: "setting prefetch to \(count)")
    }

    /// Starts consuming `queue`, with manual acks unless `noAck` (the broker then
    /// counts a message as done once sent); returns the consumer tag.
    @discardableResult
    public func consume(
        _ queue: String, noAck: Bool = false, exclusive: Bool = false,
        arguments: [String: HeaderValue] = [:]
    ) throws(AMQPError) -> String {
        let state = try live("consuming \(queue)")
        let ok = withTable(arguments.sorted { $0.key < $1.key }) { table in
            withBytes(queue) { queueBytes in
                iq_amqp_basic_consume(state, channel, queueBytes, iq_amqp_empty_bytes(), 0, noAck ? 1 : 0, exclusive ? 1 : 0, table)
            }
        }
        try check(iq_amqp_get_rpc_reply(state), context: "consuming queue '\(queue)'")
        return ok?.pointee.consumer_tag.string ?? ""
    }

    /// Stops a consumer: the broker sends nothing more to it.
    public func cancel(consumerTag: String) throws(AMQPError) {
        let state = try live("canceling consumer")
        withBytes(consumerTag) { tag in
            _ = iq_amqp_basic_cancel(state, channel, tag)
        }
        try check(iq_amqp_get_rpc_reply(state), context: "canceling consumer \(consumerTag)")
    }

    // MARK: - Publish, ack

    /// Publishes a message and returns its confirm sequence number (when confirms are on).
    @discardableResult
    public func publish(_ message: OutgoingMessage) throws(AMQPError) -> UInt64 {
        if let problem = message.problem {
            throw AMQPError(.configuration, context: "publishing to '\(message.exchange)'", detail: "the message cannot be sent: \(problem)")
        }
        let state = try live("publishing to \(message.exchange)")
        var arena = ByteArena()
        let exchange = arena.add(message.exchange)
        let routingKey = arena.add(message.routingKey)
        let contentType = arena.add(message.contentType)
        let messageID = message.messageID.map { arena.add($0) }
        let type = message.type.map { arena.add($0) }
        let userID = message.userID.map { arena.add($0) }
        let replyTo = message.replyTo.map { arena.add($0) }
        let correlationID = message.correlationID.map { arena.add($0) }
        let expiration = message.expirationMilliseconds.map { arena.add(String($0)) }
        let status: Int32 = arena.withBytes { bytes in
            var properties = amqp_basic_properties_t()
            properties._flags = amqp_flags_t(AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG)
            properties.content_type = bytes(contentType)
            properties.delivery_mode = message.persistent ? 2 : 1
            // An optional string property: its flag, and its bytes, when present.
            func set(_ flag: Int32, _ field: WritableKeyPath<amqp_basic_properties_t, amqp_bytes_t>, _ value: ByteArena.Slice?) {
                guard let value else { return }
                properties._flags |= amqp_flags_t(flag)
                properties[keyPath: field] = bytes(value)
            }
            set(AMQP_BASIC_MESSAGE_ID_FLAG, \.message_id, messageID)
            set(AMQP_BASIC_TYPE_FLAG, \.type, type)
            set(AMQP_BASIC_USER_ID_FLAG, \.user_id, userID)
            set(AMQP_BASIC_REPLY_TO_FLAG, \.reply_to, replyTo)
            set(AMQP_BASIC_CORRELATION_ID_FLAG, \.correlation_id, correlationID)
            set(AMQP_BASIC_EXPIRATION_FLAG, \.expiration, expiration)
            if let timestamp = message.timestampSeconds {
                properties._flags |= amqp_flags_t(AMQP_BASIC_TIMESTAMP_FLAG)
                properties.timestamp = timestamp
            }
            return withTable(message.headers.sorted { $0.key < $1.key }) { table in
                if table.num_entries > 0 {
                    properties._flags |= amqp_flags_t(AMQP_BASIC_HEADERS_FLAG)
                    properties.headers = table
                }
                let watch = SendWatchdog.arm(socket: iq_amqp_get_sockfd(state), seconds: sendTimeout)
                defer { SendWatchdog.disarm(watch) }
                return message.body.withUnsafeBytes { body in
                    iq_amqp_basic_publish(
                        state, channel, bytes(exchange), bytes(routingKey), message.mandatory ? 1 : 0, 0, &properties,
                        amqp_bytes_t(len: body.count, bytes: UnsafeMutableRawPointer(mutating: body.baseAddress)))
                }
            }
        }
        try checkStatus(status, context: "publishing to '\(message.exchange)' with key '\(message.routingKey)'")
        let sequence = nextPublishSequence
        if confirmsEnabled { nextPublishSequence += 1 }
        return sequence
    }

    /// Runs `body` with the socket corked (`TCP_CORK`): the frames of a batch
    /// of publishes leave together in full segments, not a segment (and a
    /// wake-up of the broker) per message. Uncorked, and so sent, when `body`
    /// returns or throws.
    public func corked<T>(_ body: () throws(AMQPError) -> T) throws(AMQPError) -> T {
        setCorked(true)
        defer { setCorked(false) }
        return try body()
    }

    /// Corks the socket (`TCP_CORK`), or uncorks it and so sends what waited. A corked socket sends only full
    /// segments, and what is left once the kernel's limit passes (200 ms on Linux): each cork needs its uncork, on
    /// every path, before anything waits for the broker's answer.
    public func setCorked(_ corked: Bool) {
        let socket = socketDescriptor
        guard socket >= 0 else { return }
        var value: Int32 = corked ? 1 : 0
        _ = setsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Acks a delivery of this connection by its tag; with `multiple`, every unacked delivery up to it as well.
    public func ack(_ tag: UInt64, multiple: Bool = false) throws(AMQPError) {
        let state = try live("acking")
        try checkStatus(iq_amqp_basic_ack(state, channel, tag, multiple ? 1 : 0), context: "acking delivery \(tag)")
    }

    /// Rejects a delivery: back to its queue with `requeue`, else dropped or dead-lettered as the queue says.
    public func reject(_ tag: UInt64, requeue: Bool) throws(AMQPError) {
        let state = try live("rejecting")
        try checkStatus(iq_amqp_basic_reject(state, channel, tag, requeue ? 1 : 0), context: "rejecting delivery \(tag)")
    }

    // MARK: - Reading

    /// The socket, for `poll(2)` beside a wake-up pipe.
    public var socketDescriptor: Int32 {
        state.map { iq_amqp_get_sockfd($0) } ?? -1
    }

    /// Whether rabbitmq-c already holds unread data, so `poll` on the socket
    /// would wrongly report nothing to read.
    public var hasBufferedData: Bool {
        guard let state else { return false }
        return iq_amqp_data_in_buffer(state) != 0 || iq_amqp_frames_enqueued(state) != 0
    }

    /// Whether the socket has something to read now, by one `poll` that does not wait (an error or a hang-up counts:
    /// the read that follows reports it). What rabbitmq-c has already read is `hasBufferedData`. Cheaper than
    /// `nextEvent(timeout: 0)` finding nothing, which costs a `recv` and a `poll`.
    public var socketIsReadable: Bool {
        let socket = socketDescriptor
        guard socket >= 0 else { return false }
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) != 0
    }

    /// Waits up to `timeout` seconds (nil: forever) for the next delivery,
    /// confirm or returned message. Returns nil once `timeout` has passed (up to 1.5 ms after it), or
    /// sooner when a frame came that is no event. Heartbeats are sent and checked inside this call.
    public func nextEvent(timeout: Double?) throws(AMQPError) -> Event? {
        let state = try live("reading from the broker")
        iq_amqp_maybe_release_buffers(state)
        var envelope = amqp_envelope_t()
        var reply: amqp_rpc_reply_t
        if let timeout {
            // rabbitmq-c polls in whole milliseconds, rounded down, and returns at the first poll that finds
            // nothing: asked to wait 0.7 ms it would not wait at all, and a caller waiting for a moment to come
            // would spin through its last millisecond in `poll(0)`. So each wait is rounded up, plus half a
            // millisecond for the time between its clock and its poll, and one that still ends early (the thread
            // held up on its way into `poll`, a heartbeat read meanwhile) is waited out.
            let deadline = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, min(timeout, 86_400)) * 1e9)
            var left = timeout
            while true {
                var tv = timeval(seconds: left > 0 ? (left * 1_000).rounded(.up) / 1_000 + 0.000_5 : 0)
                reply = iq_amqp_consume_message(state, &envelope, &tv, 0)
                guard left > 0, reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION,
                    reply.library_error == AMQP_STATUS_TIMEOUT.rawValue
                else { break }
                let now = DispatchTime.now().uptimeNanoseconds
                guard now < deadline else { break }
                left = Double(deadline - now) / 1e9
            }
        } else {
            reply = iq_amqp_consume_message(state, &envelope, nil, 0)
        }
        switch reply.reply_type {
        case AMQP_RESPONSE_NORMAL:
            defer { iq_amqp_destroy_envelope(&envelope) }
            return .delivery(delivery(from: envelope))
        case AMQP_RESPONSE_LIBRARY_EXCEPTION where reply.library_error == AMQP_STATUS_TIMEOUT.rawValue:
            return nil
        case AMQP_RESPONSE_LIBRARY_EXCEPTION where reply.library_error == AMQP_STATUS_UNEXPECTED_STATE.rawValue:
            return try readMethodFrame(state)
        default:
            try check(reply, context: "reading from \(url)")
            return nil
        }
    }

    /// A frame other than a delivery is waiting: a confirm, a returned message,
    /// or the broker closing something.
    private func readMethodFrame(_ state: amqp_connection_state_t) throws(AMQPError) -> Event? {
        var frame = amqp_frame_t()
        try checkStatus(iq_amqp_simple_wait_frame(state, &frame), context: "reading a frame from \(url)")
        guard frame.frame_type == AMQP_FRAME_METHOD else { return nil }
        let method = frame.payload.method
        switch method.id {
        case AMQP_BASIC_ACK_METHOD:
            let ack = method.decoded.assumingMemoryBound(to: amqp_basic_ack_t.self).pointee
            return .confirmed(sequence: ack.delivery_tag, multiple: ack.multiple != 0)
        case AMQP_BASIC_NACK_METHOD:
            let nack = method.decoded.assumingMemoryBound(to: amqp_basic_nack_t.self).pointee
            return .rejected(sequence: nack.delivery_tag, multiple: nack.multiple != 0)
        case AMQP_BASIC_RETURN_METHOD:
            let basicReturn = method.decoded.assumingMemoryBound(to: amqp_basic_return_t.self).pointee
            var returned = ReturnedMessage(
                replyCode: basicReturn.reply_code, replyText: basicReturn.reply_text.string,
                exchange: basicReturn.exchange.string, routingKey: basicReturn.routing_key.string, messageID: nil)
            var message = amqp_message_t()
            let reply = iq_amqp_read_message(state, frame.channel, &message, 0)
            try check(reply, context: "reading a returned message")
            defer { iq_amqp_destroy_message(&message) }
            if message.properties._flags & amqp_flags_t(AMQP_BASIC_MESSAGE_ID_FLAG) != 0 {
                returned.messageID = message.properties.message_id.string
            }
            return .returned(returned)
        case AMQP_CHANNEL_CLOSE_METHOD, AMQP_CONNECTION_CLOSE_METHOD:
            throw serverError(method: method.id, decoded: method.decoded, context: "reading from \(url)")
        case AMQP_BASIC_CANCEL_METHOD:
            throw AMQPError(.server, context: "consuming from \(url)", detail: "the broker canceled the consumer (was the queue deleted?)")
        default:
            return nil
        }
    }

    private func delivery(from envelope: amqp_envelope_t) -> Delivery {
        delivery(
            tag: envelope.delivery_tag, exchange: envelope.exchange, routingKey: envelope.routing_key,
            redelivered: envelope.redelivered != 0, message: envelope.message, consumerTag: envelope.consumer_tag.string)
    }

    /// Takes one message from `queue` without a consumer (basic.get), unacked;
    /// nil when the queue is empty.
    public func get(_ queue: String) throws(AMQPError) -> Delivery? {
        let state = try live("getting from \(queue)")
        let reply = withBytes(queue) { queueBytes in iq_amqp_basic_get(state, channel, queueBytes, 0) }
        try check(reply, context: "getting a message from '\(queue)'")
        guard reply.reply.id == AMQP_BASIC_GET_OK_METHOD else { return nil }
        let ok = reply.reply.decoded.assumingMemoryBound(to: amqp_basic_get_ok_t.self).pointee
        var message = amqp_message_t()
        try check(iq_amqp_read_message(state, channel, &message, 0), context: "reading a message from '\(queue)'")
        defer { iq_amqp_destroy_message(&message) }
        return delivery(tag: ok.delivery_tag, exchange: ok.exchange, routingKey: ok.routing_key, redelivered: ok.redelivered != 0, message: message)
    }

    private func delivery(
        tag: UInt64, exchange: amqp_bytes_t, routingKey: amqp_bytes_t, redelivered: Bool, message: amqp_message_t, consumerTag: String = ""
    ) -> Delivery {
        let properties = message.properties
        func has(_ flag: Int32) -> Bool { properties._flags & amqp_flags_t(flag) != 0 }
        var headers: [String: HeaderValue] = [:]
        if has(AMQP_BASIC_HEADERS_FLAG), let entries = properties.headers.entries {
            // Only the top level is read: nested tables and arrays are skipped, not walked.
            for index in 0..<min(Int(properties.headers.num_entries), 256) {
                var entry = entries[index]
                var number: Int64 = 0
                var bytes = amqp_bytes_t()
                if iq_amqp_entry_integer(&entry.value, &number) != 0 {
                    headers[entry.key.string] = .integer(number)
                } else if iq_amqp_entry_bytes(&entry.value, &bytes) != 0 {
                    headers[entry.key.string] = .string(bytes.string)
                }
            }
        }
        // A header anyone could set: clamped before anything adds to it.
        let deliveryCount = headers["x-delivery-count"]?.integerValue.map { Int(min(max($0, 0), 1_000_000)) }
        return Delivery(
            tag: DeliveryTag(generation: generation, value: tag),
            exchange: exchange.string,
            routingKey: routingKey.string,
            redelivered: redelivered,
            body: message.body.array,
            messageID: has(AMQP_BASIC_MESSAGE_ID_FLAG) ? properties.message_id.string : nil,
            type: has(AMQP_BASIC_TYPE_FLAG) ? properties.type.string : nil,
            userID: has(AMQP_BASIC_USER_ID_FLAG) ? properties.user_id.string : nil,
            replyTo: has(AMQP_BASIC_REPLY_TO_FLAG) ? properties.reply_to.string : nil,
            correlationID: has(AMQP_BASIC_CORRELATION_ID_FLAG) ? properties.correlation_id.string : nil,
            deliveryCount: deliveryCount,
            headers: headers,
            consumerTag: consumerTag)
    }
}

extension timeval {
    init(seconds: Double) {
        let clamped = max(0, seconds)
        let whole = clamped.rounded(.down)
        self.init(tv_sec: Int(whole), tv_usec: Int((clamped - whole) * 1_000_000))
    }
}

extension amqp_bytes_t {
    /// A Swift copy of the bytes, decoded as UTF-8 (invalid bytes are replaced).
    var string: String {
        guard len > 0, let bytes else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: bytes, count: len), as: UTF8.self)
    }

    /// A Swift copy of the bytes; the C buffer may be freed afterwards.
    var array: [UInt8] {
        guard len > 0, let bytes else { return [] }
        return Array(UnsafeRawBufferPointer(start: bytes, count: len))
    }
}

/// Calls `body` with an `amqp_bytes_t` that points into `text` for the duration of the call.
func withBytes<R>(_ text: String, _ body: (amqp_bytes_t) throws -> R) rethrows -> R {
    var text = text
    return try text.withUTF8 { buffer in
        try body(amqp_bytes_t(len: buffer.count, bytes: UnsafeMutableRawPointer(mutating: buffer.baseAddress)))
    }
}

/// Several strings copied into one buffer so a publish needs one closure, not one per string.
struct ByteArena {
    private var storage: [UInt8] = []

    struct Slice {
        let offset: Int
        let count: Int
    }

    mutating func add(_ text: String) -> Slice {
        let slice = Slice(offset: storage.count, count: text.utf8.count)
        storage.append(contentsOf: text.utf8)
        return slice
    }

    mutating func withBytes<R>(_ body: ((Slice) -> amqp_bytes_t) throws -> R) rethrows -> R {
        if storage.isEmpty { storage.append(0) }
        return try storage.withUnsafeMutableBytes { base in
            try body { slice in
                amqp_bytes_t(len: slice.count, bytes: base.baseAddress!.advanced(by: slice.offset))
            }
        }
    }
}
