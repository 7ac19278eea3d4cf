import CMicroHTTPD
import Foundation
import IntentAMQP
import IntentKit
import Synchronization

/// One HTTP request, as the gateway's routes see it: read whole before a route runs.
public struct HTTPRequest: Sendable {
    /// `GET`, `POST`, …
    public var method: String
    /// The path as it came (still percent-encoded), without the query.
    public var path: String
    /// The path's segments after the leading `/`, each percent-decoded on its own
    /// (so an encoded `/` stays inside its segment).
    public var segments: [String]
    /// The decoded query arguments (the first of each name).
    public var query: [String: String]
    /// The headers routes read (`readHeaders`), by lower-cased name.
    public var headers: [String: String]
    /// The headers the server passes on to routes; the others are not read.
    public static let readHeaders = ["authorization", "content-type", "origin"]
    /// The body (empty when there is none).
    public var body: [UInt8]
    /// The path, a query argument or a header was not valid UTF-8.
    public var invalidText: Bool

    /// A request; the server makes them, tests may too.
    public init(
        method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:], body: [UInt8] = [],
        invalidText: Bool = false
    ) {
        self.method = method
        self.path = path
        var invalid = invalidText
        segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { segment in
            guard segment.utf8.contains(UInt8(ascii: "%")) else { return String(segment) }
            guard let decoded = String(segment).removingPercentEncoding else {
                invalid = true
                return ""
            }
            return decoded
        }
        self.invalidText = invalid
        self.query = query
        self.headers = headers
        self.body = body
    }
}

/// A whole response.
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Headers besides `Content-Length` (which the server writes).
    public var headers: [(String, String)]
    /// The body.
    public var body: [UInt8]

    /// A response of `status` with `body` of `contentType`.
    public init(status: Int, contentType: String = "application/json", headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status
        self.headers = [("Content-Type", contentType)] + headers
        self.body = body
    }
}

/// A response the server sends as it is written: Server-Sent Events. Pushes
/// come from any thread; the connection sleeps (suspended, no thread held)
/// while there is nothing to send. Once the client has gone, pushes are dropped.
public final class EventStream: @unchecked Sendable {
    // @unchecked: the connection pointer is only used under the lock, through libmicrohttpd's thread-safe resume.
    private struct State {
        var buffer: [UInt8] = []
        var sent = 0
        var ended = false
        var gone = false
        var sleep = Sleep()
        var connection: CPointer?
        var settler: Settler?
        /// Pushes kept back until `release` (nil: none kept back).
        var held: [UInt8]?
        var endAfterHeld = false
    }

    private let state = Mutex(State())

    /// A stream, with what it starts with.
    public init(first: [UInt8] = []) {
        state.withLock { $0.buffer = first }
    }

    /// A stream that keeps back what is pushed until `release(first:end:)`:
    /// subscribed before its first message is known, it misses nothing.
    public init(held: Bool) {
        state.withLock { $0.held = held ? [] : nil }
    }

    /// Starts a held stream with `first`, then what was kept back (with
    /// `end`, only `first`, and the stream ends after it).
    public func release(first: [UInt8], end: Bool) {
        state.withLock { state in
            let held = state.held ?? []
            state.buffer = first + (end ? [] : held)
            state.ended = end || state.endAfterHeld
            state.held = nil
        }
    }

    /// Whether the client is still there (and the stream not ended).
    public var isOpen: Bool { state.withLock { !$0.gone && !$0.ended } }

    /// The most bytes a stream keeps for a client that does not read them: past it the stream ends.
    public static let maximumBuffered = 1 << 20

    var isAsleep: Bool { state.withLock { $0.sleep.isAsleep } }

    /// Queues `bytes`; false when the stream has ended or its client is gone.
    @discardableResult
    public func push(_ bytes: [UInt8], end: Bool = false) -> Bool {
        state.withLock { state in
            guard !state.gone, !state.ended, !state.endAfterHeld else { return false }
            if state.held != nil {
                state.held! += bytes
                if end { state.endAfterHeld = true }
                if state.held!.count > Self.maximumBuffered { state.endAfterHeld = true }
                return true
            }
            state.buffer += bytes
            // A client that reads nothing is not given the gateway's memory: its stream ends.
            if end || state.buffer.count - state.sent > Self.maximumBuffered { state.ended = true }
            Self.resume(&state)
            return true
        }
    }

    /// Ends the stream once what is queued is sent.
    public func end() {
        state.withLock { state in
            guard !state.gone, !state.ended else { return }
            state.ended = true
            Self.resume(&state)
        }
    }

    /// Wakes the sleeping connection, or, while the round of callbacks that put it to sleep is not over,
    /// has `settle` wake it then (libmicrohttpd may not yet count it as asleep: a resume now could be lost).
    private static func resume(_ state: inout State) {
        guard let connection = state.connection, state.sleep.wake() else { return }
        MHD_resume_connection(connection.raw)
        state.settler?.wakeServer()
    }

    func attach(_ connection: OpaquePointer, settler: Settler) {
        let pointer = CPointer(connection)
        state.withLock {
            $0.connection = pointer
            $0.settler = settler
        }
    }

    func clientGone() {
        state.withLock { $0.gone = true }
    }

    /// The server's content reader, on its thread: copies what is queued, or
    /// suspends the connection until a push (under the lock, so a push cannot
    /// resume it before it is suspended).
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        state.withLock { state in
            let available = state.buffer.count - state.sent
            if available > 0 {
                let count = min(available, max)
                state.buffer.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(buffer).copyMemory(from: bytes.baseAddress! + state.sent, byteCount: count)
                }
                state.sent += count
                if state.sent == state.buffer.count {
                    state.buffer.removeAll(keepingCapacity: true)
                    state.sent = 0
                }
                return count
            }
            if state.ended || state.gone { return -1 }  // MHD_CONTENT_READER_END_OF_STREAM
            guard let connection = state.connection else { return -1 }
            state.sleep.fallAsleep()
            MHD_suspend_connection(connection.raw)
            state.settler?.add(self)
            return 0
        }
    }

    /// Resumes a sleeping connection, so that the server can stop.
    func wake() {
        state.withLock { state in
            state.ended = true
            Self.resume(&state)
        }
    }
}

extension EventStream: Settling {
    func settle() {
        state.withLock { state in
            guard state.sleep.settle(), let connection = state.connection else { return }
            MHD_resume_connection(connection.raw)
            state.settler?.wakeServer()
        }
    }
}

/// A connection's sleep in libmicrohttpd, kept under its owner's lock: put to sleep in a round of the
/// server's callbacks, it may be woken only once that round is over (`settle`); a wake before then is kept.
struct Sleep {
    private(set) var isAsleep = false
    private var settling = false
    private var wakeWanted = false

    /// Put to sleep in the current round of callbacks.
    mutating func fallAsleep() {
        isAsleep = true
        settling = true
    }

    /// A wake: true when the connection is to be resumed now (asleep, and its round over). One that comes before
    /// the connection is put to sleep (the server stopping, between its look at `stopping` and the suspend) is
    /// kept too: the round's `settle` resumes it, or the connection would sleep on, answered, with nothing left to
    /// wake it, and the server be stopped with it asleep.
    mutating func wake() -> Bool {
        guard isAsleep else {
            wakeWanted = true
            return false
        }
        if settling {
            wakeWanted = true
            return false
        }
        isAsleep = false
        return true
    }

    /// Its round is over: true when a wake came meanwhile and the connection is to be resumed now.
    mutating func settle() -> Bool {
        settling = false
        guard wakeWanted else { return false }
        wakeWanted = false
        return wake()
    }
}

/// A connection put to sleep during a round of the server's callbacks: once the round is over, it is
/// asleep for libmicrohttpd too, and a wake that came meanwhile is given then.
protocol Settling: Sendable {
    func settle()
}

/// The connections put to sleep in the current round of callbacks, settled once it is over; and the
/// signal that wakes the server's thread when one is resumed.
final class Settler: Sendable {
    private let suspended = Mutex<[any Settling]>([])
    let wake = WakeSignal()

    /// Has the server's thread run a round soon: a connection was resumed.
    func wakeServer() { wake.wake() }

    func add(_ connection: any Settling) {
        suspended.withLock { $0.append(connection) }
    }

    /// Called on the server's thread between rounds.
    func settleAll() {
        let settling = suspended.withLock { list -> [any Settling] in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
        for connection in settling { connection.settle() }
    }
}

/// What a route answers a request with.
public enum HTTPReply: Sendable {
    /// This response, now.
    case now(HTTPResponse)
    /// Later: `start` runs once the connection sleeps, and the answer comes through its `Responder`.
    case later(@Sendable (Responder) -> Void)
}

/// Answers one request that was put off: once, from any thread.
public final class Responder: Sendable {
    private let exchange: Exchange

    init(exchange: Exchange) { self.exchange = exchange }

    /// Sends `response`; false when the request was answered already.
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool { exchange.complete(.response(response)) }

    /// Starts an event stream with these headers; false when the request was answered already.
    @discardableResult
    public func stream(_ stream: EventStream, headers: [(String, String)] = []) -> Bool {
        exchange.complete(.stream(stream, headers))
    }
}

/// One request's life in the server: its body as it arrives, then its answer.
final class Exchange: @unchecked Sendable {
    // @unchecked: `connection` is only resumed (thread-safe in libmicrohttpd); the rest is under the lock.
    enum Answer: Sendable {
        case response(HTTPResponse)
        case stream(EventStream, [(String, String)])
    }

    private struct State {
        var body: [UInt8] = []
        var tooLarge = false
        var started = false
        var answered = false
        /// Asleep in the server, waiting for `complete` (suspended and resumed only under the lock).
        var sleep = Sleep()
        var answer: Answer?
        var stream: EventStream?
    }

    let connection: OpaquePointer
    private let settler: Settler
    private let state = Mutex(State())

    init(connection: OpaquePointer, settler: Settler) {
        self.connection = connection
        self.settler = settler
    }

    /// Adds a piece of the body; false once it is over `limit`.
    func append(_ bytes: UnsafeRawBufferPointer, limit: Int) {
        state.withLock { state in
            guard !state.tooLarge else { return }
            if state.body.count + bytes.count > limit {
                state.tooLarge = true
                state.body = []
            } else {
                state.body.append(contentsOf: bytes)
            }
        }
    }

    /// (body, too large) the first time the whole request is in; nil afterwards.
    func start() -> (body: [UInt8], tooLarge: Bool)? {
        state.withLock { state in
            guard !state.started else { return nil }
            state.started = true
            return (state.body, state.tooLarge)
        }
    }

    /// The answer a worker left while the connection slept.
    func takeAnswer() -> Answer? {
        state.withLock { state in
            defer { state.answer = nil }
            if case .stream(let stream, _) = state.answer { state.stream = stream }
            return state.answer
        }
    }

    /// Puts the connection to sleep until `complete`; under the lock, so a
    /// resume can never come before its suspend, and until the server's round
    /// of callbacks is over (`settle`) a `complete` only leaves its answer.
    func suspend() {
        state.withLock { state in
            state.sleep.fallAsleep()
            MHD_suspend_connection(connection)
        }
    }

    /// Leaves the answer and wakes the connection; false when it was answered already.
    func complete(_ answer: Answer) -> Bool {
        state.withLock { state in
            guard !state.answered else { return false }
            state.answered = true
            state.answer = answer
            resume(&state)
            return true
        }
    }

    private func resume(_ state: inout State) {
        guard state.sleep.wake() else { return }
        MHD_resume_connection(connection)
        settler.wakeServer()
    }

    /// Whether the connection sleeps, in the server or in its stream.
    var isAsleep: Bool {
        let (suspended, stream) = state.withLock { ($0.sleep.isAsleep, $0.stream) }
        return suspended || (stream?.isAsleep ?? false)
    }

    /// Marks a direct answer as given (no resume needed).
    func answeredNow(stream: EventStream?) {
        state.withLock {
            $0.answered = true
            $0.stream = stream
        }
    }

    var isAnswered: Bool { state.withLock { $0.answered } }

    /// Ends the stream (or the one waiting to start), so its connection wakes and closes.
    func wakeStream() {
        let (stream, pending) = state.withLock { state -> (EventStream?, EventStream?) in
            if case .stream(let pending, _) = state.answer { return (state.stream, pending) }
            return (state.stream, nil)
        }
        stream?.wake()
        pending?.wake()
    }

    /// The connection is closed: its stream, or the one left to start that the server never took (the client went
    /// away while the connection slept), is told its client is gone.
    func finished() {
        let (stream, pending) = state.withLock { state -> (EventStream?, EventStream?) in
            if case .stream(let pending, _) = state.answer { return (state.stream, pending) }
            return (state.stream, nil)
        }
        stream?.clientGone()
        if let pending, pending !== stream { pending.clientGone() }
    }
}

extension Exchange: Settling {
    func settle() {
        state.withLock { state in
            guard state.sleep.settle() else { return }
            MHD_resume_connection(connection)
            settler.wakeServer()
        }
    }
}

/// An HTTP/1.1 server over GNU libmicrohttpd: one epoll thread of its own accepts,
/// reads and writes every connection; a route that must wait (for the broker,
/// an event) lets its connection sleep and answers from another thread, so
/// 1,000 waiting clients hold no thread. Bodies are capped; headers are
/// capped by the connection's memory; idle connections are closed.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked: the daemon pointer is under a lock; libmicrohttpd's calls into it are thread-safe.
    /// Limits on what clients may take.
    public struct Limits: Sendable {
        /// The largest request body accepted (larger: 413).
        public var maximumBody = 64 * 1024
        /// Seconds a connection may stay idle before it is closed.
        public var idleTimeout = 30
        /// Connections open at once, in all.
        public var maximumConnections = 16_384
        /// Connections open at once from one address (0: no limit but the total).
        public var maximumConnectionsPerAddress = 0
        /// The memory one connection's request line and headers may use (more: 431).
        public var connectionMemory = 32 * 1024

        /// The defaults.
        public init() {}
    }

    /// Routes requests; runs on the server's thread, so it must not block.
    public typealias Router = @Sendable (HTTPRequest) -> HTTPReply

    /// Looks at a request that comes with a body before any of it is read (the request's `body` is then empty): a
    /// response it returns is sent at once, the body is never read, and the connection closes after it; nil lets the
    /// request go on to the router. For refusals that need no body (an unknown route, a missing token), so that a
    /// client nobody knows cannot have the server hold a body for it. On the server's thread: it must not block.
    public typealias Screen = @Sendable (HTTPRequest) -> HTTPResponse?

    private let router: Router
    private let screen: Screen?
    private let limits: Limits
    private let box: HTTPServerBox
    private let daemon = Mutex<CPointer?>(nil)
    private let open = Mutex<[ObjectIdentifier: Exchange]>([:])
    private let stopping = Atomic<Bool>(false)
    /// The connections put to sleep in the current round of callbacks.
    private let settler = Settler()
    /// Set once every connection is awake: the server's thread then ends.
    private let ending = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)

    /// The port it listens on (the one chosen when it was asked for port 0).
    public var port: UInt16 { daemon.withLock { $0.map { iq_mhd_port($0.raw) } ?? 0 } }

    /// Starts listening on `host`:`port` (port 0: any free one, see `port`).
    public init(host: String, port: UInt16, limits: Limits = Limits(), screen: Screen? = nil, router: @escaping Router) throws {
        self.router = router
        self.screen = screen
        self.limits = limits
        box = HTTPServerBox()
        box.server = self
        // The box lives as long as the daemon: released by `stop`.
        let context = Unmanaged<HTTPServerBox>.passRetained(box).toOpaque()
        var started: OpaquePointer?
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            started = withUnsafePointer(to: &v4) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Self.start($0, port, context, limits) }
            }
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            started = withUnsafePointer(to: &v6) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Self.start($0, port, context, limits) }
            }
        } else {
            Unmanaged<HTTPServerBox>.fromOpaque(context).release()
            throw HTTPServerError(description: "'\(host)' is not an IPv4 or IPv6 address")
        }
        guard let started else {
            Unmanaged<HTTPServerBox>.fromOpaque(context).release()
            throw HTTPServerError(description: "cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        let pointer = CPointer(started)
        daemon.withLock { $0 = pointer }
        Thread.named("gw-http") { [self] in serve(pointer) }.start()
    }

    /// The server's thread: rounds of libmicrohttpd's callbacks, each when its sockets have work, a
    /// connection was resumed from another thread, or its timeouts are due (200 ms at most), and each
    /// followed by settling the connections it put to sleep.
    private func serve(_ running: CPointer) {
        let events = iq_mhd_epoll_fd(running.raw)
        while !ending.load(ordering: .acquiring) {
            settler.wake.wait(socket: events, timeoutMilliseconds: Int32(iq_mhd_wait_ms(running.raw, 200)))
            settler.wake.drain()
            _ = MHD_run(running.raw)
            settler.settleAll()
        }
        ended.signal()
    }

    private static func start(_ address: UnsafePointer<sockaddr>, _ port: UInt16, _ context: UnsafeMutableRawPointer, _ limits: Limits)
        -> OpaquePointer?
    {
        iq_mhd_start(
            address, port, accessHandler, context, completedHandler, context, UInt32(limits.idleTimeout), UInt32(limits.maximumConnections),
            UInt32(limits.maximumConnectionsPerAddress), limits.connectionMemory)
    }

    /// Stops: every sleeping connection is woken first (its client gets what
    /// it was sent so far), then the server thread ends.
    public func stop() {
        guard let running = daemon.withLock({ $0 }) else { return }
        stopping.store(true, ordering: .releasing)
        // No new connections; the listening socket is ours to close.
        let listener = MHD_quiesce_daemon(running.raw)
        // libmicrohttpd must not be stopped with a connection asleep: wake every one, until none is.
        let deadline = Date().addingTimeInterval(5)
        repeat {
            for exchange in open.withLock({ Array($0.values) }) {
                if exchange.isAnswered {
                    exchange.wakeStream()
                } else {
                    _ = exchange.complete(.response(HTTPServer.error(503, "unavailable", "the gateway is stopping")))
                }
            }
            Thread.sleep(forTimeInterval: 0.01)
        } while open.withLock({ $0.values.contains { $0.isAsleep } }) && Date() < deadline
        // The server's thread ends its round before the daemon is stopped from this one.
        ending.store(true, ordering: .releasing)
        settler.wakeServer()
        ended.wait()
        daemon.withLock { $0 = nil }
        MHD_stop_daemon(running.raw)
        if listener >= 0 { close(listener) }
        box.server = nil
        Unmanaged.passUnretained(box).release()
    }

    /// Connections open now (requests being read, waiting or streaming).
    public var openRequests: Int { open.withLock { $0.count } }

    // MARK: The server thread

    fileprivate func handle(
        _ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>, upload: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>, context: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let pointer = context.pointee else {
            // The first call: the headers are in, the body not yet.
            if let screen, Self.announcesBody(connection), let refusal = screen(Self.request(connection, url: url, method: method, body: [])) {
                // libmicrohttpd sends a response queued now without reading the body, and then closes the connection;
                // should a version read the body all the same, the marker has it thrown away as it comes.
                context.pointee = Self.refusedMarker
                return queue(.response(refusal), on: connection)
            }
            let exchange = Exchange(connection: connection, settler: settler)
            context.pointee = Unmanaged.passRetained(exchange).toOpaque()
            open.withLock { $0[ObjectIdentifier(exchange)] = exchange }
            return MHD_Result.YES
        }
        if pointer == Self.refusedMarker {
            uploadSize.pointee = 0
            return MHD_Result.YES
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(pointer).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            if let upload { exchange.append(UnsafeRawBufferPointer(start: upload, count: uploadSize.pointee), limit: limits.maximumBody) }
            uploadSize.pointee = 0
            return MHD_Result.YES
        }
        if let answer = exchange.takeAnswer() { return queue(answer, on: connection) }
        guard let (body, tooLarge) = exchange.start() else { return MHD_Result.YES }  // woken with nothing to send: not expected
        var request = Self.request(connection, url: url, method: method, body: body)
        if tooLarge {
            exchange.answeredNow(stream: nil)
            return queue(.response(Self.error(413, "tooLarge", "the request body is over \(limits.maximumBody) bytes")), on: connection)
        }
        if request.invalidText {
            request.path = ""
            exchange.answeredNow(stream: nil)
            return queue(.response(Self.error(400, "invalid", "the path, a query argument or a header is not valid UTF-8")), on: connection)
        }
        switch router(request) {
        case .now(let response):
            exchange.answeredNow(stream: nil)
            return queue(.response(response), on: connection)
        case .later(let start):
            if stopping.load(ordering: .acquiring) {
                exchange.answeredNow(stream: nil)
                return queue(.response(Self.error(503, "unavailable", "the gateway is stopping")), on: connection)
            }
            // Asleep before the work can answer: a resume never comes before its suspend.
            exchange.suspend()
            settler.add(exchange)
            start(Responder(exchange: exchange))
            return MHD_Result.YES
        }
    }

    fileprivate func finished(_ context: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let pointer = context?.pointee else { return }
        context?.pointee = nil
        if pointer == Self.refusedMarker { return }
        let exchange = Unmanaged<Exchange>.fromOpaque(pointer).takeRetainedValue()
        exchange.finished()
        _ = open.withLock { $0.removeValue(forKey: ObjectIdentifier(exchange)) }
    }

    private func queue(_ answer: Exchange.Answer, on connection: OpaquePointer) -> MHD_Result {
        switch answer {
        case .response(let response):
            let made = response.body.withUnsafeBytes { bytes in
                MHD_create_response_from_buffer(
                    bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), MHD_ResponseMemoryMode.RESPMEM_MUST_COPY)
            }
            guard let made else { return MHD_Result.NO }
            for (name, value) in response.headers { MHD_add_response_header(made, name, value) }
            let result = MHD_queue_response(connection, UInt32(response.status), made)
            MHD_destroy_response(made)
            return result
        case .stream(let stream, let headers):
            stream.attach(connection, settler: settler)
            if stopping.load(ordering: .acquiring) { stream.wake() }
            let context = Unmanaged.passRetained(stream).toOpaque()
            guard let made = MHD_create_response_from_callback(UInt64.max, 4096, streamReader, context, streamReleaser) else {
                Unmanaged<EventStream>.fromOpaque(context).release()
                return MHD_Result.NO
            }
            MHD_add_response_header(made, "Content-Type", "text/event-stream; charset=utf-8")
            MHD_add_response_header(made, "Cache-Control", "no-cache")
            MHD_add_response_header(made, "X-Accel-Buffering", "no")
            for (name, value) in headers { MHD_add_response_header(made, name, value) }
            let result = MHD_queue_response(connection, 200, made)
            MHD_destroy_response(made)
            return result
        }
    }

    private static func request(_ connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>, body: [UInt8])
        -> HTTPRequest
    {
        final class Collected {
            var values: [String: String] = [:]
            var invalid = false
            /// Query arguments come still encoded (see the shim's unescape callback).
            func decoded(_ text: String) -> String? {
                guard text.utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else { return text }
                return text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
        }
        let collect: MHD_KeyValueIterator = { context, _, key, value in
            let collected = Unmanaged<Collected>.fromOpaque(context!).takeUnretainedValue()
            guard let key, let raw = String(validatingCString: key), let name = collected.decoded(raw) else {
                collected.invalid = true
                return MHD_Result.YES
            }
            let text: String
            if let value {
                guard let valid = String(validatingCString: value).flatMap(collected.decoded) else {
                    collected.invalid = true
                    return MHD_Result.YES
                }
                text = valid
            } else {
                text = ""
            }
            if collected.values[name] == nil { collected.values[name] = text }
            return MHD_Result.YES
        }
        let query = Collected()
        MHD_get_connection_values(connection, MHD_ValueKind.GET_ARGUMENT_KIND, collect, Unmanaged.passUnretained(query).toOpaque())
        // Only the headers a route reads, looked up by name (case-insensitively, by libmicrohttpd).
        var headers: [String: String] = [:]
        var invalidHeader = false
        for name in HTTPRequest.readHeaders {
            guard let value = MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, name) else { continue }
            guard let text = String(validatingCString: value) else {
                invalidHeader = true
                continue
            }
            headers[name] = text
        }
        let path = String(validatingCString: url)
        return HTTPRequest(
            method: String(cString: method), path: path ?? "", query: query.values, headers: headers, body: body,
            invalidText: path == nil || invalidHeader || query.invalid)
    }

    /// The context of a connection whose request the screen refused from its head: no exchange, and whatever of the
    /// body comes is thrown away. An address nothing else has.
    // nonisolated(unsafe): written once, compared only, never dereferenced.
    nonisolated(unsafe) private static let refusedMarker = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    /// Whether the request says a body follows: a `Content-Length` over 0, or a `Transfer-Encoding` (chunked).
    private static func announcesBody(_ connection: OpaquePointer) -> Bool {
        if MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, "transfer-encoding") != nil { return true }
        guard let length = MHD_lookup_connection_value(connection, MHD_ValueKind.HEADER_KIND, "content-length") else { return false }
        return String(cString: length).utf8.contains { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }
    }

    /// A JSON error body: `{"error": words, "code": code}`.
    public static func error(_ status: Int, _ code: String, _ words: String, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: headers, body: JSONValue.object(["code": .string(code), "error": .string(words)]).serialized() + [0x0A])
    }

}

/// A pointer libmicrohttpd hands out, passed between threads: every call made
/// through it from another thread than the server's is one the library makes
/// thread-safe (resuming a connection).
struct CPointer: @unchecked Sendable {
    let raw: OpaquePointer
    init(_ raw: OpaquePointer) { self.raw = raw }
}

/// Why the server could not start.
public struct HTTPServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
}

/// Holds the server for the C callbacks (set once the server exists).
private final class HTTPServerBox: @unchecked Sendable {
    // @unchecked: written once, in the server's init, before the daemon starts.
    var server: HTTPServer?
}

private let accessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, upload, uploadSize, connectionContext in
    guard let context, let connection, let url, let method, let uploadSize, let connectionContext,
        let server = Unmanaged<HTTPServerBox>.fromOpaque(context).takeUnretainedValue().server
    else { return MHD_Result.NO }
    return server.handle(connection, url: url, method: method, upload: upload, uploadSize: uploadSize, context: connectionContext)
}

private let completedHandler: MHD_RequestCompletedCallback = { context, _, connectionContext, _ in
    guard let context, let server = Unmanaged<HTTPServerBox>.fromOpaque(context).takeUnretainedValue().server else { return }
    server.finished(connectionContext)
}

private let streamReader: MHD_ContentReaderCallback = { context, _, buffer, max in
    guard let context, let buffer else { return -1 }
    return Unmanaged<EventStream>.fromOpaque(context).takeUnretainedValue().read(into: buffer, max: max)
}

private let streamReleaser: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    Unmanaged<EventStream>.fromOpaque(context).release()
}
