import Foundation
import IntentAMQP
import IntentClient
import IntentKit
import IntentStore
import Synchronization

/// The HTTP gateway: IntentQueue's API under `/v1` and its dashboard at `/`,
/// for clients that speak HTTP. It acts on the broker like the other tools —
/// submits confirmed and mandatory, reads statuses through the recorder,
/// follows `intents.status` — and never opens the status store. Each token
/// names a broker user: the gateway's own user has RabbitMQ's `impersonator`
/// tag and publishes with that user's `user_id`, so ownership works through
/// HTTP exactly as through `intent-submit`.
public final class Gateway: Sendable {
    /// What the gateway needs.
    public struct Configuration: Sendable {
        /// The broker, as the gateway's own user (which has the `impersonator` tag).
        public var brokerURL: BrokerURL
        /// The exchanges and queues.
        public var topology = Topology()
        /// The bearer tokens and whom they name.
        public var tokens: GatewayTokens
        /// The address to listen on.
        public var host = "127.0.0.1"
        /// The port (0: any free one).
        public var port: UInt16 = 8080
        /// Threads that talk to the broker.
        public var brokerThreads = 8
        /// Connections that publish submissions, each many at once.
        public var submitConnections = 2
        /// The one origin allowed to call the API from a browser page (nil: CORS off).
        public var corsOrigin: String?
        /// The HTTP server's limits.
        public var limits = HTTPServer.Limits()
        /// The longest `?wait=` in seconds.
        public var maximumWait = 300.0
        /// The long polls and event streams one token's user may hold open at once (more: 429). Each holds a
        /// connection of `limits.maximumConnections`, noticed gone only when its wait ends: without a bound, one
        /// token could hold them all.
        public var maximumHeldPerUser = 256
        /// Where the gateway logs (never a token).
        public var logger: Logger

        /// A configuration with the defaults.
        public init(brokerURL: BrokerURL, tokens: GatewayTokens, logger: Logger) {
            self.brokerURL = brokerURL
            self.tokens = tokens
            self.logger = logger
        }
    }

    private let configuration: Configuration
    private let pool: BrokerPool
    private let pipeline: SubmitPipelines
    private let follower: StatusFollower
    private let metrics = GatewayMetrics()
    private let server: Box<HTTPServer?> = Box(nil)
    private let recorderHealth = Mutex(RecorderHealth())

    /// What the gateway last heard of the recorder, and the health checks waiting for the probe under way.
    private struct RecorderHealth {
        /// When the last probe ended, and whether the recorder answered it.
        var last: (at: Date, up: Bool)?
        /// The requests waiting for the probe under way: at most one probe runs, however many ask.
        var waiting: [(answer: Answer, responder: Responder)] = []
        var probing = false
    }

    /// The largest `limit` a list may ask for.
    public static let maximumLimit = 1000

    /// Starts following the broker and serving HTTP.
    public init(_ configuration: Configuration) throws {
        self.configuration = configuration
        pool = BrokerPool(url: configuration.brokerURL, topology: configuration.topology, threads: configuration.brokerThreads)
        pipeline = SubmitPipelines(count: configuration.submitConnections, url: configuration.brokerURL, logger: configuration.logger)
        follower = StatusFollower(
            url: configuration.brokerURL, topology: configuration.topology, pool: pool, metrics: metrics, logger: configuration.logger,
            maximumHeldPerUser: configuration.maximumHeldPerUser)
        do {
            server.value = try HTTPServer(
                host: configuration.host, port: configuration.port, limits: configuration.limits, screen: { [self] in screen($0) },
                router: { [self] in route($0) })
        } catch {
            follower.stop()
            pool.stop()
            pipeline.stop()
            throw error
        }
    }

    /// The port the gateway listens on.
    public var port: UInt16 { server.value?.port ?? 0 }

    /// Whether the gateway follows status events on the broker now.
    public var isFollowing: Bool { follower.isConnected }

    /// Stops serving: waiting requests are answered 503, streams end.
    public func stop() {
        follower.stop()
        server.value?.stop()
        pool.stop()
        pipeline.stop()
    }

    // MARK: Routing (on the HTTP thread: nothing here blocks)

    private func route(_ request: HTTPRequest) -> HTTPReply {
        let started = Date()
        let segments = request.segments
        let method = request.method == "HEAD" ? "GET" : request.method
        let answer = Answer(route: Self.routeName(segments), started: started, metrics: metrics, cors: configuration.corsOrigin)
        if method == "OPTIONS", let origin = configuration.corsOrigin {
            return .now(
                answer.finish(
                    HTTPResponse(
                        status: 204, contentType: "text/plain",
                        headers: [
                            ("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Methods", "GET, POST, OPTIONS"),
                            ("Access-Control-Allow-Headers", "Authorization, Content-Type"), ("Access-Control-Max-Age", "600"),
                        ], body: [])))
        }
        switch segments.first {
        case "":
            guard segments.count == 1 else { break }
            return answer.now(allow: ["GET"], method) {
                HTTPResponse(
                    status: 200, contentType: "text/html; charset=utf-8", headers: Self.pageHeaders, body: Array(DashboardAssets.html.utf8))
            }
        case "dashboard.js":
            return answer.now(allow: ["GET"], method) {
                HTTPResponse(status: 200, contentType: "application/javascript; charset=utf-8", body: Array(DashboardAssets.javascript.utf8))
            }
        case "dashboard.css":
            return answer.now(allow: ["GET"], method) {
                HTTPResponse(status: 200, contentType: "text/css; charset=utf-8", body: Array(DashboardAssets.css.utf8))
            }
        case "healthz" where segments.count == 1:
            guard method == "GET" else { return .now(answer.finish(Self.notAllowed(["GET"]))) }
            return health(answer)
        case "metrics" where segments.count == 1:
            return answer.now(allow: ["GET"], method) {
                let counts = follower.counts
                return HTTPResponse(
                    status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                    body: Array(
                        metrics.render(waits: counts.waits, streams: counts.streams, connections: server.value?.openRequests ?? 0).utf8))
            }
        case "v1":
            return api(request, method: method, segments: Array(segments.dropFirst()), answer: answer)
        default:
            break
        }
        return .now(answer.finish(HTTPServer.error(404, "notFound", "no such path: \(Self.printable(request.path))")))
    }

    /// A request that comes with a body, looked at before the body is read, so that no body is read for a client
    /// without a valid token: an API request is refused at once (404, 405, 401) when its route, method or token would
    /// refuse it anyway; any other (the page, its assets, the health check, the metrics, a CORS preflight) reads no
    /// body, and is answered from its head whenever its route answers at once.
    private func screen(_ request: HTTPRequest) -> HTTPResponse? {
        guard !request.invalidText else { return nil }
        let segments = request.segments
        guard segments.first == "v1", request.method != "OPTIONS" else {
            guard case .now(let response) = route(request) else { return nil }
            return response
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        guard case .refused(let refusal) = access(request, method: method, segments: Array(segments.dropFirst())) else { return nil }
        return Answer(route: Self.routeName(segments), started: Date(), metrics: metrics, cors: configuration.corsOrigin).finish(refusal)
    }

    /// Whether an API request may go on: with whose identity, or the refusal it gets.
    private enum Access {
        case allowed(GatewayIdentity)
        case refused(HTTPResponse)
    }

    private func access(_ request: HTTPRequest, method: String, segments: [String]) -> Access {
        // Which routes exist (for 404 and 405) is told before a token is asked for.
        let allowed: [String]
        switch (segments.first, segments.count) {
        case ("intents", 1), ("dead", 1), ("stats", 1), ("events", 1): allowed = ["GET"]
        case ("intents", 2): allowed = ["GET", "POST"]
        case ("intents", 3) where segments[2] == "events": allowed = ["GET"]
        case ("intents", 3) where ["answer", "confirm", "deny", "cancel"].contains(segments[2]): allowed = ["POST"]
        case ("dead", 3) where segments[2] == "requeue": allowed = ["POST"]
        default:
            return .refused(HTTPServer.error(404, "notFound", "no such path: \(Self.printable(request.path))"))
        }
        guard allowed.contains(method) else { return .refused(Self.notAllowed(allowed)) }
        guard let identity = configuration.tokens.identity(authorization: request.headers["authorization"]) else {
            metrics.unauthorized()
            let words = request.headers["authorization"] == nil ? "a bearer token is required" : "the bearer token is not valid"
            return .refused(HTTPServer.error(401, "unauthorized", words, headers: [("WWW-Authenticate", "Bearer realm=\"intentqueue\"")]))
        }
        return .allowed(identity)
    }

    private func api(_ request: HTTPRequest, method: String, segments: [String], answer: Answer) -> HTTPReply {
        let identity: GatewayIdentity
        switch access(request, method: method, segments: segments) {
        case .refused(let refusal): return .now(answer.finish(refusal))
        case .allowed(let allowed): identity = allowed
        }
        let handler = Handlers(
            gateway: self, request: request, identity: identity, answer: answer, pool: pool, pipeline: pipeline, follower: follower,
            configuration: configuration, metrics: metrics)
        switch (segments[0], segments.count, method) {
        case ("intents", 1, _): return handler.list()
        case ("stats", 1, _): return handler.stats()
        case ("dead", 1, _): return handler.dead()
        case ("events", 1, _): return handler.liveEvents()
        case ("intents", 2, "GET"): return handler.show(id: segments[1])
        case ("intents", 2, _): return handler.submit(type: segments[1])
        case ("intents", 3, "GET"): return handler.events(id: segments[1])
        case ("intents", 3, _) where segments[2] == "cancel": return handler.cancel(id: segments[1])
        case ("intents", 3, _): return handler.turn(segments[2], id: segments[1])
        default: return handler.requeue(id: segments[1])
        }
    }

    private func health(_ answer: Answer) -> HTTPReply {
        let following = follower.isConnected
        let respond: @Sendable (Bool) -> HTTPResponse = { recorder in
            let ok = following && recorder
            let body: JSONValue = [
                "status": .string(ok ? "ok" : "degraded"), "broker": .string(following ? "up" : "down"),
                "recorder": .string(recorder ? "up" : "down"),
            ]
            return HTTPResponse(status: ok ? 200 : 503, headers: ok ? [] : [("Retry-After", "1")], body: body.serialized() + [0x0A])
        }
        // The recorder is asked at most once a second, however often /healthz (which needs no token) is called, and
        // by one probe at a time: the checks that come while it runs wait for its answer, rather than each queue a
        // probe of its own for the broker pool (which, with the recorder down, takes 2 s each).
        if let recent = recorderHealth.withLock({ $0.last }), Date().timeIntervalSince(recent.at) < 1 {
            return .now(answer.finish(respond(recent.up)))
        }
        let user = configuration.brokerURL.user
        return .later { [self] responder in
            let first = recorderHealth.withLock { health in
                health.waiting.append((answer, responder))
                defer { health.probing = true }
                return !health.probing
            }
            guard first else { return }
            pool.run { [self] session in
                metrics.probedRecorder()
                let up = (try? session.ask(.show(id: "gateway-health-probe"), as: user, timeout: 2)) != nil
                let waiting = recorderHealth.withLock { health in
                    health.last = (Date(), up)
                    health.probing = false
                    defer { health.waiting = [] }
                    return health.waiting
                }
                for (answer, responder) in waiting { answer.send(respond(up), responder) }
            }
        }
    }

    /// The dashboard's page runs only its own script and style, fetches only from the gateway, is never framed, and
    /// sends no address of itself elsewhere: a value that slipped into the page as markup could neither run nor read
    /// the token the page holds in its session storage.
    static let pageHeaders = [
        (
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        ),
        ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
    ]

    static func notAllowed(_ methods: [String]) -> HTTPResponse {
        HTTPServer.error(
            405, "methodNotAllowed", "allowed here: \(methods.joined(separator: ", "))", headers: [("Allow", methods.joined(separator: ", "))])
    }

    /// The route's name in metrics: the path with its ids and types left out, and only the routes there are (a path
    /// anyone may send is never a label: unbounded, and free to hold a quote or a line of its own).
    static func routeName(_ segments: [String]) -> String {
        switch (segments.first, segments.count) {
        case ("v1", 2) where ["intents", "dead", "stats", "events"].contains(segments[1]): return "/v1/\(segments[1])"
        case ("v1", 3) where segments[1] == "intents": return "/v1/intents/{}"
        case ("v1", 4) where segments[1] == "intents" && ["events", "answer", "confirm", "deny", "cancel"].contains(segments[3]),
            ("v1", 4) where segments[1] == "dead" && segments[3] == "requeue":
            return "/v1/\(segments[1])/{}/\(segments[3])"
        case ("", 1): return "/"
        case (let first?, 1) where ["healthz", "metrics", "dashboard.js", "dashboard.css"].contains(first): return "/\(first)"
        default: return "other"
        }
    }

    /// A path as it may be quoted back: control characters escaped, at most 200 characters.
    static func printable(_ text: String) -> String {
        String(text.escapingControlCharacters.prefix(200))
    }
}

/// A value shared by reference (set once, before the server calls the gateway).
final class Box<Value: Sendable>: @unchecked Sendable {
    // @unchecked: written once in `Gateway.init`, read after.
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// How a request's answer is finished: CORS headers, metrics.
struct Answer: Sendable {
    var route: String
    var started: Date
    var metrics: GatewayMetrics
    var cors: String?

    func finish(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        // No browser reads a JSON error or an event as a script or a page.
        response.headers.append(("X-Content-Type-Options", "nosniff"))
        if let cors {
            response.headers.append(("Access-Control-Allow-Origin", cors))
            response.headers.append(("Vary", "Origin"))
        }
        metrics.answered(route: route, status: response.status, seconds: Date().timeIntervalSince(started))
        return response
    }

    func send(_ response: HTTPResponse, _ responder: Responder) {
        responder.respond(finish(response))
    }

    func stream(_ stream: EventStream, _ responder: Responder) {
        metrics.answered(route: route, status: 200, seconds: Date().timeIntervalSince(started))
        responder.stream(
            stream, headers: [("X-Content-Type-Options", "nosniff")] + (cors.map { [("Access-Control-Allow-Origin", $0), ("Vary", "Origin")] } ?? []))
    }

    func now(allow methods: [String], _ method: String, _ make: () -> HTTPResponse) -> HTTPReply {
        guard methods.contains(method) else { return .now(finish(Gateway.notAllowed(methods))) }
        return .now(finish(make()))
    }
}
