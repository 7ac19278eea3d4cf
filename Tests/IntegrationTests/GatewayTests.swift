import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// intent-gateway against the real broker, recorder and worker, through a
/// real HTTP client: every endpoint's success and its errors.
@Suite(.timeLimit(.minutes(10)))
struct GatewayTests {
    @Test func submittingReadingAndWaitingGoThroughTheTokensOwner() async throws {
        let world = try await GatewaySandbox("gw-submit")
        defer { Task { await world.tearDown() } }
        try await world.start()

        let submitted = try await world.request(
            "POST", "/v1/intents/SendMessage", token: world.aliceToken,
            json: #"{"id":"gw-hello","parameters":{"recipients":["Alice"],"content":"Running late"}}"#)
        #expect(submitted.status == 202, "\(submitted)")
        #expect(submitted.header("Location") == "/v1/intents/gw-hello")
        #expect(submitted.json["id"] as? String == "gw-hello" && submitted.state == "queued")

        // A 202 means the broker holds it; a wait asked before the recorder has read it finds it unknown (404).
        try await world.waitUntilRecorded("gw-hello")
        let waited = try await world.request("GET", "/v1/intents/gw-hello?wait=30", token: world.aliceToken)
        #expect(waited.status == 200 && waited.state == "success", "\(waited)")
        #expect(waited.json["owner"] as? String == world.secure.alice, "the gateway published as the token's user")
        // The recorder's store says the same: the answer was read from it.
        let stored = try await world.secure.status(as: world.secure.operatorUser, ["gw-hello", "--remote", "--json"])
        #expect(stored.stdout.contains(#""state":"success""#), "\(stored)")
        #expect(try world.secure.sandbox.messageCount(intentID: "gw-hello") == 1)

        // Another producer cannot see it; an operator can.
        let hidden = try await world.request("GET", "/v1/intents/gw-hello", token: world.bobToken)
        #expect(hidden.status == 404 && hidden.code == "unknownIntent", "\(hidden)")
        let seen = try await world.request("GET", "/v1/intents/gw-hello", token: world.operatorToken)
        #expect(seen.status == 200 && seen.state == "success", "\(seen)")

        // Submitting with ?wait answers with the outcome.
        let direct = try await world.request(
            "POST", "/v1/intents/OrderSoup?wait=30", token: world.aliceToken, json: #"{"id":"gw-soup","parameters":{"soup":"tomato","quantity":2}}"#)
        #expect(direct.status == 200 && direct.state == "success", "\(direct)")
        let soldOut = try await world.request(
            "POST", "/v1/intents/OrderSoup?wait=30", token: world.aliceToken,
            json: #"{"id":"gw-minestrone","parameters":{"soup":"Minestrone","quantity":1}}"#)
        #expect(soldOut.status == 200 && soldOut.state == "failure", "\(soldOut)")

        // Lists, the tally and their filters are the reader's own.
        let list = try await world.request("GET", "/v1/intents?state=success&limit=10", token: world.aliceToken)
        let ids = (list.json["intents"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(list.status == 200 && Set(ids) == ["gw-hello", "gw-soup"], "\(list)")
        let bobs = try await world.request("GET", "/v1/intents", token: world.bobToken)
        #expect((bobs.json["intents"] as? [Any])?.isEmpty == true, "\(bobs)")
        let stats = try await world.request("GET", "/v1/stats", token: world.aliceToken)
        #expect(stats.json["total"] as? Int == 3, "\(stats)")
        #expect((stats.json["byState"] as? [String: Int]) == ["success": 2, "failure": 1], "\(stats)")
        #expect(((stats.json["byType"] as? [String: [String: Int]])?["OrderSoup"]) == ["success": 1, "failure": 1], "\(stats)")
        let bobStats = try await world.request("GET", "/v1/stats", token: world.bobToken)
        #expect(bobStats.json["total"] as? Int == 0, "\(bobStats)")

        // A second submitter of the same id is refused by the worker, and told so.
        let taken = try await world.request(
            "POST", "/v1/intents/SendMessage?wait=30", token: world.bobToken,
            json: #"{"id":"gw-hello","parameters":{"recipients":["Bob"],"content":"mine now"}}"#)
        #expect(taken.status == 403 && taken.code == "forbidden", "\(taken)")
        #expect(try world.secure.sandbox.messageCount(intentID: "gw-hello") == 1)
        // Its own id under another type: the refusal, not the first intent's success, once its time ran out.
        let otherType = try await world.request(
            "POST", "/v1/intents/OrderSoup?wait=20", token: world.aliceToken, json: #"{"id":"gw-hello","parameters":{"soup":"tomato","quantity":1}}"#)
        #expect(otherType.status == 403 && otherType.code == "forbidden", "\(otherType)")
        #expect("\(otherType)".contains("taken by a SendMessage intent"), "\(otherType)")
    }

    @Test func badRequestsAreRefusedWithTheirReason() async throws {
        let world = try await GatewaySandbox("gw-errors")
        defer { Task { await world.tearDown() } }
        try await world.start()
        let token = world.aliceToken

        let withoutCORS = try await world.request("GET", "/v1/intents", token: token, headers: ["Origin": "https://elsewhere.example"])
        #expect(
            withoutCORS.status == 200 && withoutCORS.header("Access-Control-Allow-Origin") == nil, "CORS is off by default: \(withoutCORS.headers)")
        let missing = try await world.request("GET", "/v1/intents", token: nil)
        #expect(missing.status == 401 && missing.code == "unauthorized" && missing.header("WWW-Authenticate") != nil, "\(missing)")
        let wrong = try await world.request("GET", "/v1/intents", token: token + "x")
        #expect(wrong.status == 401, "\(wrong)")
        #expect(wrong.header("X-Content-Type-Options") == "nosniff", "\(wrong.headers)")
        #expect(!wrong.text.contains(token), "a token is never echoed")

        let cases: [(String, String, String?, Int, String)] = [
            ("POST", "/v1/intents/SendMessage", "{not json", 400, "invalid"),
            ("POST", "/v1/intents/SendMessage", "[1,2]", 400, "invalid"),
            ("POST", "/v1/intents/SendMessage", #"{"parameters":[]}"#, 400, "invalid"),
            ("POST", "/v1/intents/SendMessage", #"{"parameter":{}}"#, 400, "invalid"),
            ("POST", "/v1/intents/SendMessage", #"{"id":"has space","parameters":{}}"#, 400, "invalid"),
            ("POST", "/v1/intents/SendMessage", #"{"id":""}"#, 400, "invalid"),
            ("POST", "/v1/intents/SendMessage", #"{"parameters":{},"expiresAt":"soon"}"#, 400, "invalid"),
            ("POST", "/v1/intents/NoSuchType", "{}", 404, "noWorker"),
            // A wait that is over at once still waits for the broker: a returned message is never "accepted".
            ("POST", "/v1/intents/NoSuchType?wait=0", "{}", 404, "noWorker"),
            ("POST", "/v1/intents/Bad%20Type", "{}", 404, "noWorker"),
            ("GET", "/v1/intents/never-submitted", nil, 404, "unknownIntent"),
            ("GET", "/v1/intents/x?wait=-1", nil, 400, "invalid"),
            ("GET", "/v1/intents/x?wait=100000", nil, 400, "invalid"),
            ("GET", "/v1/intents?limit=0", nil, 400, "invalid"),
            ("GET", "/v1/intents?limit=99999999999999999999", nil, 400, "invalid"),
            ("GET", "/v1/intents?state=done", nil, 400, "invalid"),
            ("DELETE", "/v1/intents/x", nil, 405, "methodNotAllowed"),
            ("GET", "/v1/nothing", nil, 404, "notFound"),
            ("GET", "/v1/intents/..%2F..%2Fetc%2Fpasswd", nil, 404, "unknownIntent"),
            ("GET", "/v1/intents/..%2F..%2Fetc%2Fpasswd/../..", nil, 404, "notFound"),
            ("GET", "/v1/intents/%FF%FE", nil, 400, "invalid"),
            ("POST", "/v1/intents/never-submitted/answer", #"{"parameters":{"a":1}}"#, 404, "unknownIntent"),
            ("POST", "/v1/intents/never-submitted/confirm", nil, 404, "unknownIntent"),
            ("POST", "/v1/intents/never-submitted/cancel", nil, 404, "unknownIntent"),
            ("GET", "/v1/dead", nil, 403, "forbidden"),
            ("POST", "/v1/dead/x/requeue", nil, 403, "forbidden"),
        ]
        for (method, path, body, status, code) in cases {
            let answer = try await world.request(method, path, token: token, json: body)
            #expect(answer.status == status && answer.code == code, "\(method) \(path): \(answer)")
        }
        // A time to start by that has passed: the worker ends it expired, without running it.
        let stale = try await world.request(
            "POST", "/v1/intents/SendMessage?wait=30", token: token,
            json: #"{"id":"gw-stale","expiresAt":1,"parameters":{"recipients":["Alice Smith"],"content":"too late"}}"#)
        #expect(stale.status == 200 && stale.state == "failure", "\(stale)")
        #expect((stale.json["response"] as? [String: Any])?["code"] as? String == FailureCode.expired, "\(stale)")
        var form = URLRequest(url: URL(string: world.base + "/v1/intents/SendMessage")!)
        form.httpMethod = "POST"
        form.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        form.setValue("text/plain", forHTTPHeaderField: "Content-Type")
        form.httpBody = Data("recipients=Alice".utf8)
        let (formBody, formResponse) = try await URLSession.shared.data(for: form)
        #expect((formResponse as? HTTPURLResponse)?.statusCode == 415, "\(String(decoding: formBody, as: UTF8.self))")
        var big = URLRequest(url: URL(string: world.base + "/v1/intents/SendMessage")!)
        big.httpMethod = "POST"
        big.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        big.httpBody = Data(repeating: 0x20, count: 200_000)
        let (_, response) = try await URLSession.shared.data(for: big)
        #expect((response as? HTTPURLResponse)?.statusCode == 413)

        // Paths no route has are counted under one name: a path sent is never a label of its own (an unbounded
        // table, or a quote and a line break that forge a sample).
        for index in 0..<20 {
            #expect(try await world.request("GET", "/v1/made-up-\(index)", token: nil).status == 404)
        }
        let forging = try await world.request("GET", "/v1/a%22%7D%201%0Aintent_gateway_broker_up%201%0A%23", token: nil)
        #expect(forging.status == 404, "\(forging)")
        #expect(try await world.request("GET", "/v1/intents/x/made-up", token: nil).status == 404)

        // The gateway asks the recorder every 2 s; on a busy machine its first answer may come after the gateway is up.
        try await eventually(timeout: 60, "the gateway to report the broker and the recorder up") {
            let health = try await world.request("GET", "/healthz", token: nil)
            return health.status == 200 && health.json["broker"] as? String == "up" && health.json["recorder"] as? String == "up"
        }
        let metrics = try await world.request("GET", "/metrics", token: nil)
        #expect(metrics.status == 200 && metrics.text.contains("intent_gateway_requests_total{code=\"400\""), "\(metrics)")
        #expect(metrics.text.contains("intent_gateway_unauthorized_total 2"), "\(metrics.text.prefix(2000))")
        #expect(!metrics.text.contains("made-up") && !metrics.text.contains("route=\"/v1/a"), "\(metrics.text.prefix(4000))")
        #expect(metrics.text.contains("intent_gateway_requests_total{code=\"404\",route=\"other\"}"), "\(metrics.text.prefix(4000))")
        let samples = metrics.text.split(separator: "\n").filter { $0.hasPrefix("intent_gateway_broker_up") }
        #expect(samples.count == 1, "one sample of the gauge, none forged: \(samples)")
        let page = try await world.request("GET", "/", token: nil)
        #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/html") == true)
        // The dashboard's page runs only its own script, and is never framed.
        #expect(page.header("Content-Security-Policy")?.contains("default-src 'self'") == true, "\(page.headers)")
        #expect(page.header("Content-Security-Policy")?.contains("frame-ancestors 'none'") == true && page.header("X-Frame-Options") == "DENY")
    }

    /// A request with a body is looked at before its body is read: without a valid token, or to a route that does not
    /// exist, it is refused at once and its body never read, so that a client nobody knows cannot have the gateway hold
    /// bodies for it. Here the body is never sent: the refusal comes all the same, and the connection closes after it.
    @Test func aBodyIsNotReadForAClientWithoutAValidToken() async throws {
        let world = try await GatewaySandbox("gw-screen")
        defer { Task { await world.tearDown() } }
        try await world.start()
        let cases: [(method: String, path: String, authorization: String?, status: Int)] = [
            ("POST", "/v1/intents/SendMessage", nil, 401),
            ("POST", "/v1/intents/SendMessage", "Bearer \(world.aliceToken)x", 401),
            ("POST", "/v1/intents/x/answer", "Bearer nobody", 401),
            ("POST", "/v1/nothing", "Bearer \(world.aliceToken)", 404),
            ("POST", "/v1/intents", "Bearer \(world.aliceToken)", 405),
            ("DELETE", "/v1/intents/x", nil, 405),
            ("PATCH", "/v1/intents/x", "Bearer \(world.aliceToken)", 405),
            ("POST", "/healthz", nil, 405),
            ("POST", "/metrics", nil, 405),
            ("PUT", "/", nil, 405),
            ("POST", "/elsewhere", nil, 404),
        ]
        for (method, path, authorization, status) in cases {
            let head =
                "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n"
                + (authorization.map { "Authorization: \($0)\r\n" } ?? "") + "\r\n"
            let reply = try RawHTTP.exchange(port: world.port, sending: Array(head.utf8), readTimeout: 20)
            #expect(reply.text.hasPrefix("HTTP/1.1 \(status) "), "\(method) \(path): \(reply.text)")
            #expect(reply.closed, "\(method) \(path): the connection closes after the refusal")
        }
        // With a valid token the same request waits for its body, and is answered once it has come.
        let body = #"{"id":"gw-screened","parameters":{"recipients":["Alice Smith"],"content":"after the headers"}}"#
        let head =
            "POST /v1/intents/SendMessage HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + "Authorization: Bearer \(world.aliceToken)\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        let accepted = try RawHTTP.exchange(port: world.port, sending: Array((head + body).utf8), readTimeout: 30)
        #expect(accepted.text.hasPrefix("HTTP/1.1 202 "), "\(accepted.text)")
        let metrics = try await world.request("GET", "/metrics", token: nil)
        #expect(metrics.text.contains("intent_gateway_unauthorized_total 3"), "each refusal counted once: \(metrics.text.prefix(2000))")
    }

    /// /healthz needs no token. While the recorder does not answer, each question to it holds a broker thread for
    /// 2 s: the checks that come meanwhile share the one question under way, rather than each queue one of their
    /// own ahead of every other request.
    @Test func healthChecksWhileTheRecorderIsSilentShareOneProbe() async throws {
        let world = try await GatewaySandbox("gw-health")
        defer { Task { await world.tearDown() } }
        try await world.start()
        try await eventually(timeout: 60, "the gateway to report the recorder up") {
            try await world.request("GET", "/healthz", token: nil).status == 200
        }
        func probes() async throws -> Int? {
            let metrics = try await world.request("GET", "/metrics", token: nil)
            let line = metrics.text.split(separator: "\n").first { $0.hasPrefix("intent_gateway_recorder_probes_total ") }
            return line.flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? -1) }
        }
        let recorder = try #require(world.secure.recorderProcess)
        kill(recorder.pid, SIGSTOP)
        defer { kill(recorder.pid, SIGCONT) }
        let before = try #require(try await probes())
        // The last answer is kept a second: checks until one says degraded, the first past it having asked the
        // silent recorder (its probe counted as it starts, and held 2 s by the silence).
        let trigger = Task {
            try await eventually(timeout: 60, "a health check to say degraded") {
                try await world.request("GET", "/healthz", token: nil).status == 503
            }
        }
        try await eventually(timeout: 60, "a probe of the silent recorder to start") { (try await probes() ?? before) > before }
        // While it is under way, thirty checks at once.
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<30 { group.addTask { try await world.request("GET", "/healthz", token: nil).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.allSatisfy { $0 == 503 }, "degraded while the recorder is silent: \(statuses)")
        try await trigger.value
        let asked = try #require(try await probes()) - before
        #expect((1...2).contains(asked), "30 checks at once asked the recorder \(asked) times")
        kill(recorder.pid, SIGCONT)
        try await eventually(timeout: 60, "the gateway to report the recorder up again") {
            try await world.request("GET", "/healthz", token: nil).status == 200
        }
    }

    @Test func browsersOfOtherOriginsAreAllowedOnlyWhenConfigured() async throws {
        let world = try await GatewaySandbox("gw-cors")
        defer { Task { await world.tearDown() } }
        try await world.secure.startServices()
        try await world.startGateway(["--cors-origin", "https://app.example"])
        let read = try await world.request("GET", "/v1/intents", token: world.aliceToken, headers: ["Origin": "https://app.example"])
        #expect(read.status == 200 && read.header("Access-Control-Allow-Origin") == "https://app.example", "\(read) \(read.headers)")
        let preflight = try await world.request(
            "OPTIONS", "/v1/intents/SendMessage", token: nil,
            headers: ["Origin": "https://app.example", "Access-Control-Request-Method": "POST"])
        #expect(preflight.status == 204, "\(preflight)")
        #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Authorization") == true, "\(preflight.headers)")
        #expect(preflight.header("Access-Control-Allow-Methods")?.contains("POST") == true, "\(preflight.headers)")
        // A token is still needed: CORS lets a page ask, not act for nobody.
        let anonymous = try await world.request("GET", "/v1/intents", token: nil, headers: ["Origin": "https://app.example"])
        #expect(anonymous.status == 401, "\(anonymous)")
    }

    @Test func questionsAreAnsweredConfirmedAndDeniedOverHTTP() async throws {
        let world = try await GatewaySandbox("gw-conversation")
        defer { Task { await world.tearDown() } }
        try await world.start()
        let token = world.aliceToken

        let jeff = try await world.request(
            "POST", "/v1/intents/SendMessage?wait=30", token: token, json: #"{"id":"gw-jeff","parameters":{"recipients":["Jeff"],"content":"3pm?"}}"#)
        #expect(jeff.status == 200 && jeff.state == "needsInput", "\(jeff)")
        let notAParameter = try await world.request("POST", "/v1/intents/gw-jeff/answer", token: token, json: #"{"parameters":{"colour":"red"}}"#)
        #expect(notAParameter.status == 400, "\(notAParameter)")
        let notAConfirmation = try await world.request("POST", "/v1/intents/gw-jeff/confirm", token: token)
        #expect(notAConfirmation.status == 409 && notAConfirmation.code == "notWaiting", "\(notAConfirmation)")
        let bobs = try await world.request(
            "POST", "/v1/intents/gw-jeff/answer", token: world.bobToken, json: #"{"parameters":{"recipients":["Jeff Chen"]}}"#)
        #expect(bobs.status == 404, "another producer's answer: \(bobs)")
        let answered = try await world.request(
            "POST", "/v1/intents/gw-jeff/answer?wait=30", token: token, json: #"{"parameters":{"recipients":["Jeff Baker"]}}"#)
        #expect(answered.status == 200 && answered.state == "success", "\(answered)")
        #expect((answered.json["response"] as? [String: Any])?["message"] as? String == "Message sent to Jeff Baker", "\(answered)")
        let again = try await world.request("POST", "/v1/intents/gw-jeff/answer", token: token, json: #"{"parameters":{"recipients":["Jeff Chen"]}}"#)
        #expect(again.status == 409, "an ended intent takes no answer: \(again)")

        let order = try await world.request(
            "POST", "/v1/intents/OrderSoup?wait=30", token: token, json: #"{"id":"gw-12","parameters":{"soup":"tomato","quantity":12}}"#)
        #expect(order.status == 200 && order.state == "needsInput", "\(order)")
        let confirmed = try await world.request("POST", "/v1/intents/gw-12/confirm?wait=30", token: token)
        #expect(confirmed.status == 200 && confirmed.state == "success", "\(confirmed)")

        let other = try await world.request(
            "POST", "/v1/intents/OrderSoup?wait=30", token: token, json: #"{"id":"gw-13","parameters":{"soup":"tomato","quantity":13}}"#)
        #expect(other.state == "needsInput", "\(other)")
        let accepted = try await world.request("POST", "/v1/intents/gw-13/deny", token: token)
        #expect(accepted.status == 202 && accepted.state == "queued", "\(accepted)")
        // Until the recorder has the denial's turn, the question it answers is what a wait finds.
        try await eventually(timeout: 30, "the recorder to store the denial's turn") {
            ((try? world.secure.sandbox.statusStore().status(id: "gw-13"))??.turn ?? 0) >= 1
        }
        let denied = try await world.request("GET", "/v1/intents/gw-13?wait=30", token: token)
        #expect(denied.state == "failure" && (denied.json["response"] as? [String: Any])?["code"] as? String == "denied", "\(denied)")

        // The operator may answer anyone's.
        let forBob = try await world.request(
            "POST", "/v1/intents/SendMessage?wait=30", token: world.bobToken,
            json: #"{"id":"gw-bob-jeff","parameters":{"recipients":["Jeff"],"content":"hi"}}"#)
        #expect(forBob.state == "needsInput", "\(forBob)")
        let byOperator = try await world.request(
            "POST", "/v1/intents/gw-bob-jeff/answer?wait=30", token: world.operatorToken, json: #"{"parameters":{"recipients":["Jeff Chen"]}}"#)
        #expect(byOperator.state == "success" && byOperator.json["owner"] as? String == world.secure.bob, "\(byOperator)")
    }

    @Test func cancelingEndsWithTheDecisionTheStoreHolds() async throws {
        let world = try await GatewaySandbox("gw-cancel")
        defer { Task { await world.tearDown() } }
        try await world.secure.startServices()
        try await world.startGateway()
        world.secure.stopWorker()
        try await eventually(timeout: 30, "the worker to stop") { !world.secure.workerIsRunning }

        // Queued with no worker: the cancel is requested; a worker decides it.
        let queued = try await world.request(
            "POST", "/v1/intents/SendMessage", token: world.aliceToken, json: #"{"id":"gw-c1","parameters":{"recipients":["Alice"],"content":"x"}}"#)
        #expect(queued.status == 202, "\(queued)")
        try await world.waitUntilRecorded("gw-c1")
        let requested = try await world.request("POST", "/v1/intents/gw-c1/cancel?wait=0", token: world.aliceToken)
        #expect(requested.status == 202, "\(requested)")
        try await world.secure.startWorker()
        let decided = try await world.request("GET", "/v1/intents/gw-c1?wait=30", token: world.aliceToken)
        #expect(decided.state == "canceled", "\(decided)")
        #expect(try world.secure.sandbox.messageCount(intentID: "gw-c1") == 0, "a canceled message was sent")

        // Ended already: the outcome stands.
        let done = try await world.request(
            "POST", "/v1/intents/SendMessage?wait=30", token: world.aliceToken,
            json: #"{"id":"gw-c2","parameters":{"recipients":["Alice"],"content":"y"}}"#)
        #expect(done.state == "success", "\(done)")
        let late = try await world.request("POST", "/v1/intents/gw-c2/cancel", token: world.aliceToken)
        #expect(late.status == 200 && late.state == "success", "\(late)")
        let notYours = try await world.request("POST", "/v1/intents/gw-c2/cancel", token: world.bobToken)
        #expect(notYours.status == 404, "\(notYours)")

        // Raced against a running handler: whatever is answered is what the store holds.
        let slow = try await world.request(
            "POST", "/v1/intents/BookAppointment", token: world.aliceToken,
            json: #"{"id":"gw-c3","parameters":{"hairdresser":"Alice","time":"3pm","callSeconds":1}}"#)
        #expect(slow.status == 202, "\(slow)")
        try await world.waitUntilRecorded("gw-c3")
        let raced = try await world.request("POST", "/v1/intents/gw-c3/cancel?wait=30", token: world.aliceToken)
        #expect(raced.status == 200 && ["canceled", "success"].contains(raced.state ?? ""), "\(raced)")
        let store = try await world.request("GET", "/v1/intents/gw-c3", token: world.aliceToken)
        #expect(store.state == raced.state, "the cancel answered \(raced.state ?? "?") but the store holds \(store)")
    }

    @Test func deadLettersAreListedAndRequeuedByOperatorsOnly() async throws {
        let world = try await GatewaySandbox("gw-dead")
        defer { Task { await world.tearDown() } }
        // A token the file calls an operator's, for a broker user neither the recorder nor the workers know as one.
        let falseOperator = "false-operator-token-\(world.secure.bob)"
        let tokens = try String(contentsOfFile: world.tokensPath, encoding: .utf8) + "\(falseOperator) \(world.secure.bob) operator\n"
        try tokens.write(toFile: world.tokensPath, atomically: false, encoding: .utf8)
        try await world.start()
        let envelope = IntentEnvelope(
            id: "gw-dead-1", type: "SendMessage", parameters: ["recipients": ["Alice"], "content": "from the dead"],
            submittedAt: Date().timeIntervalSince1970)
        try await publishRaw(
            url: world.secure.url(world.secure.workerUser), routingKey: "SendMessage", body: envelope.encoded(), messageID: "gw-dead-1",
            exchange: "intents.dead")
        try await eventually(timeout: 30, "the dead letter to be listed") {
            let dead = try? await world.request("GET", "/v1/dead", token: world.operatorToken)
            return (dead?.json["intents"] as? [[String: Any]])?.contains(where: { $0["id"] as? String == "gw-dead-1" }) == true
        }
        let forbidden = try await world.request("POST", "/v1/dead/gw-dead-1/requeue", token: world.aliceToken)
        #expect(forbidden.status == 403, "\(forbidden)")
        // Refused before the letter is taken out of the dead-letter queue (the workers would have refused it, and it
        // would have been lost): the operator requeues it below.
        let notAnOperator = try await world.request("POST", "/v1/dead/gw-dead-1/requeue", token: falseOperator)
        #expect(notAnOperator.status == 403 && notAnOperator.code == "forbidden", "\(notAnOperator)")
        let unknown = try await world.request("POST", "/v1/dead/no-such-letter/requeue", token: world.operatorToken)
        #expect(unknown.status == 404, "\(unknown)")
        let requeued = try await world.request("POST", "/v1/dead/gw-dead-1/requeue", token: world.operatorToken)
        #expect(requeued.status == 200 && requeued.json["requeued"] as? Bool == true, "\(requeued)")
        // Until the recorder has the requeued message, the dead letter's failure is what a wait finds.
        try await eventually(timeout: 30, "the recorder to reopen the requeued letter") {
            (try? world.secure.sandbox.statusStore().status(id: "gw-dead-1"))??.response?.code != FailureCode.deadLettered
        }
        let ran = try await world.request("GET", "/v1/intents/gw-dead-1?wait=30", token: world.operatorToken)
        #expect(ran.state == "success", "\(ran)")
        #expect(try world.secure.sandbox.messageCount(intentID: "gw-dead-1") == 1)
    }

    /// The recorder refuses a list larger than a reply may be: the question is too large, the broker is not away,
    /// and asking again every second would not help (it was a 503 with `Retry-After: 1`).
    @Test func aListLargerThanAReplyIsRefusedAsAskedForNotAsUnavailable() async throws {
        let world = try await GatewaySandbox("gw-large")
        defer { Task { await world.tearDown() } }
        do {  // written before the recorder opens the store, and closed before it does
            let store = try StatusStore(path: world.secure.sandbox.statusStorePath)
            let big = String(repeating: "x", count: 1 << 20)
            for index in 0..<10 {
                let envelope = IntentEnvelope(id: "gw-big-\(index)", type: "SendMessage", parameters: ["content": .string(big)], submittedAt: 1)
                try store.record([.queued(envelope, by: .init(user: world.secure.alice))], now: Double(index + 1))
            }
        }
        try await world.start()
        let large = try await world.request("GET", "/v1/intents?limit=10", token: world.aliceToken)
        #expect(large.status == 400 && large.code == "invalid" && large.header("Retry-After") == nil, "\(large)")
        #expect(large.text.contains("ask for fewer"), "\(large)")
        let fewer = try await world.request("GET", "/v1/intents?limit=2", token: world.aliceToken)
        #expect(fewer.status == 200 && (fewer.json["intents"] as? [Any])?.count == 2, "\(fewer)")
    }

    /// A long poll or an event stream holds a connection until its wait ends (a client that left is noticed only
    /// then): one token could hold every connection the gateway has, and every other client was refused. Each
    /// token's user holds at most `--max-waits-per-user` at once; past it, 429 at once, and nothing is submitted.
    @Test func aUsersLongPollsAndStreamsAreBoundedAndOthersAreServed() async throws {
        let world = try await GatewaySandbox("gw-held")
        defer { Task { await world.tearDown() } }
        try await world.secure.startServices()
        try await world.startGateway(["--max-waits-per-user", "2"])
        let due = Date().timeIntervalSince1970 + 3_600
        for (id, token) in [("gw-alice-later", world.aliceToken), ("gw-bob-later", world.bobToken)] {
            let later = try await world.request(
                "POST", "/v1/intents/SendMessage", token: token,
                json: #"{"id":"\#(id)","parameters":{"recipients":["Alice"],"content":"later"},"dueAt":\#(due)}"#)
            #expect(later.status == 202, "\(later)")
            try await world.waitUntilRecorded(id)
        }
        let held = (0..<2).map { _ in
            Task { try await world.request("GET", "/v1/intents/gw-alice-later?wait=8", token: world.aliceToken) }
        }
        try await eventually(timeout: 30, "alice's two long polls to be held") {
            let metrics = try await world.request("GET", "/metrics", token: nil)
            return metrics.text.contains("intent_gateway_open_waits 2")
        }
        let third = try await world.request("GET", "/v1/intents/gw-alice-later?wait=1", token: world.aliceToken)
        #expect(third.status == 429 && third.code == "tooManyWaits" && third.header("Retry-After") != nil, "\(third)")
        let stream = try await world.request("GET", "/v1/events", token: world.aliceToken)
        #expect(stream.status == 429, "a stream counts with the polls: \(stream)")
        let submitted = try await world.request(
            "POST", "/v1/intents/SendMessage?wait=5", token: world.aliceToken,
            json: #"{"id":"gw-not-sent","parameters":{"recipients":["Alice"],"content":"no"}}"#)
        #expect(submitted.status == 429, "\(submitted)")
        // Another user is served.
        let bobs = try await world.request("GET", "/v1/intents/gw-bob-later?wait=1", token: world.bobToken)
        #expect(bobs.status == 200 && bobs.state == "scheduled", "\(bobs)")
        for poll in held {
            let answered = try await poll.value
            #expect(answered.status == 200 && answered.state == "scheduled", "\(answered)")
        }
        // Ended, they are given back; so is a stream that ends before it begins (an unknown intent's: 404).
        for _ in 0..<3 {
            let unknown = try await world.request("GET", "/v1/intents/gw-nothing/events", token: world.aliceToken)
            #expect(unknown.status == 404, "\(unknown)")
        }
        let again = try await world.request("GET", "/v1/intents/gw-alice-later?wait=1", token: world.aliceToken)
        #expect(again.status == 200, "\(again)")
        let notSent = try await world.request("GET", "/v1/intents/gw-not-sent", token: world.aliceToken)
        #expect(notSent.status == 404, "the refused submission was not published: \(notSent)")
    }

    @Test func eventStreamsCarryTheReadersOwnEventsAndEndAfterTheTerminalOne() async throws {
        let world = try await GatewaySandbox("gw-events")
        defer { Task { await world.tearDown() } }
        try await world.start()

        let jeff = try await world.request(
            "POST", "/v1/intents/SendMessage?wait=30", token: world.aliceToken,
            json: #"{"id":"gw-s1","parameters":{"recipients":["Jeff"],"content":"?"}}"#)
        #expect(jeff.state == "needsInput", "\(jeff)")
        async let followed = world.stream("/v1/intents/gw-s1/events", token: world.aliceToken, timeout: 60)
        async let live = world.stream("/v1/events?type=SendMessage", token: world.bobToken, timeout: 20)
        // Open, and the followed one started: a stream is counted as answered once its snapshot is read (the stream is
        // open, and subscribed, a moment before that; an answer in between is in the snapshot, not after it).
        try await eventually(timeout: 30, "both streams to be open, the followed one past its snapshot") {
            let metrics = String(decoding: try Data(contentsOf: URL(string: world.base + "/metrics")!), as: UTF8.self)
            return metrics.contains("intent_gateway_open_streams 2")
                && metrics.contains(#"intent_gateway_requests_total{code="200",route="/v1/intents/{}/events"} 1"#)
        }
        let answered = try await world.request(
            "POST", "/v1/intents/gw-s1/answer?wait=30", token: world.aliceToken, json: #"{"parameters":{"recipients":["Jeff Chen"]}}"#)
        #expect(answered.state == "success", "\(answered)")
        let stream = try await followed
        // It ended by itself (curl exits 0), after the snapshot and the terminal event.
        #expect(stream.exitCode == 0, "\(stream)")
        #expect(stream.stdout.hasPrefix("event: snapshot\ndata: {"), "\(stream.stdout.prefix(300))")
        #expect(stream.stdout.contains(#""state":"needsInput""#))
        let last = stream.stdout.components(separatedBy: "\n\n").filter { !$0.isEmpty }.last ?? ""
        #expect(last.hasPrefix("event: status\ndata: ") && last.contains(#""state":"success""#), "\(last)")
        // Bob's live stream saw none of Alice's events.
        let bobs = try await live
        #expect(!bobs.stdout.contains("gw-s1"), "\(bobs.stdout.prefix(500))")

        // An ended intent's stream is its snapshot alone; an unknown one is a 404.
        let ended = try await world.stream("/v1/intents/gw-s1/events", token: world.aliceToken, timeout: 30)
        #expect(ended.exitCode == 0 && ended.stdout.components(separatedBy: "event: ").count == 2, "\(ended)")
        let unknown = try await world.request("GET", "/v1/intents/nothing-here/events", token: world.aliceToken)
        #expect(unknown.status == 404, "\(unknown)")
    }

    @Test func aLongPollWakesWhenTheTerminalEventComes() async throws {
        let world = try await GatewaySandbox("gw-latency")
        defer { Task { await world.tearDown() } }
        try await world.start()
        var lags: [Double] = []
        for round in 0..<5 {
            let id = "gw-lag-\(round)"
            // A 1 s call: the long poll is well into its wait when the outcome comes.
            let booked = try await world.request(
                "POST", "/v1/intents/BookAppointment", token: world.aliceToken,
                json: #"{"id":"\#(id)","parameters":{"hairdresser":"Alice","time":"3pm","callSeconds":1}}"#)
            #expect(booked.status == 202, "\(booked)")
            try await world.waitUntilRecorded(id)
            let waited = try await world.request("GET", "/v1/intents/\(id)?wait=30", token: world.aliceToken)
            let answeredAt = Date().timeIntervalSince1970
            #expect(waited.state == "success", "\(waited)")
            let finished = try #require(waited.json["finishedAt"] as? Double)
            lags.append(answeredAt - finished)
        }
        let sorted = lags.sorted()
        print(
            "intent-gateway ?wait: answered \(sorted.map { String(format: "%.1f", $0 * 1000) }.joined(separator: ", ")) ms after the outcome was decided"
        )
    }

    @Test func theGatewaySurvivesABrokerRestart() async throws {
        let broker = TestBroker(node: "iqtest-gateway", port: 5694)
        if TestBroker.answers(port: 5694) { try await broker.stop() }
        let sandbox = try await Sandbox("gw-restart", broker: broker)
        let tokens = sandbox.directory.appendingPathComponent("tokens").path
        try "restart-token-0123456789 guest operator\n".write(toFile: tokens, atomically: true, encoding: .utf8)
        chmod(tokens, 0o600)
        let port = try GatewaySandbox.freePort()
        try await broker.control(["set_user_tags", "guest", "administrator", "impersonator"])
        let gateway = try WorkerProcess(
            arguments: ["--tokens", tokens, "--listen", "127.0.0.1:\(port)"], environment: sandbox.environment,
            executable: Paths.tool("intent-gateway"), logPath: sandbox.directory.appendingPathComponent("gateway.log").path)
        defer {
            Task {
                _ = try? await gateway.stop()
                await sandbox.tearDown()
                try? await broker.stop()
            }
        }
        try await sandbox.startWorker()
        func call(_ method: String, _ path: String, _ json: String? = nil) async throws -> HTTPResult {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            request.httpMethod = method
            request.timeoutInterval = 60
            request.setValue("Bearer restart-token-0123456789", forHTTPHeaderField: "Authorization")
            if let json {
                request.httpBody = Data(json.utf8)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            return HTTPResult(status: (response as? HTTPURLResponse)?.statusCode ?? 0, headers: [:], body: data)
        }
        try await eventually(timeout: 60, "the gateway to be healthy") {
            (try? Data(contentsOf: URL(string: "http://127.0.0.1:\(port)/healthz")!)).map { String(decoding: $0, as: UTF8.self).contains(#""ok""#) }
                ?? false
        }
        let before = try await call("POST", "/v1/intents/SendMessage?wait=30", #"{"id":"gw-r1","parameters":{"recipients":["Alice"],"content":"a"}}"#)
        #expect(before.state == "success", "\(before)")

        try await broker.stop()
        // Down: a clear 503 with a reason, not a hang; the health check says which part is down.
        let refused = try await call("POST", "/v1/intents/SendMessage", #"{"id":"gw-r2","parameters":{"recipients":["Alice"],"content":"b"}}"#)
        #expect(refused.status == 503 && refused.code == "unavailable", "\(refused)")
        // The gateway learns of it from its own connections, a moment after the broker has gone.
        try await eventually(timeout: 60, "the health check to say the broker is down") {
            let health = try await call("GET", "/healthz")
            return health.status == 503 && health.json["broker"] as? String == "down"
        }
        #expect(gateway.isRunning)

        try await broker.restart()
        try await eventually(timeout: 90, "the gateway to follow the broker again") {
            (try? Data(contentsOf: URL(string: "http://127.0.0.1:\(port)/healthz")!)).map { String(decoding: $0, as: UTF8.self).contains(#""ok""#) }
                ?? false
        }
        let after = try await call("POST", "/v1/intents/SendMessage?wait=60", #"{"id":"gw-r3","parameters":{"recipients":["Alice"],"content":"c"}}"#)
        #expect(after.state == "success", "\(after)")

        // A broker that blocks its publishers (a memory alarm) confirms nothing: the submission is answered 503
        // once the gateway stops waiting for its confirm, not held open; once the alarm clears, they go through.
        try await broker.control(["set_vm_memory_high_watermark", "0.000001"])
        // The broker raises the alarm a moment later: a submission before it would still be confirmed (202).
        try await eventually(timeout: 60, "the broker to raise its memory alarm") {
            try await broker.control(["eval", "rabbit_alarm:get_alarms()."]).contains("memory")
        }
        let blocked = try await call("POST", "/v1/intents/SendMessage", #"{"id":"gw-r4","parameters":{"recipients":["Alice"],"content":"d"}}"#)
        #expect(blocked.status == 503 && blocked.code == "unavailable", "\(blocked)")
        #expect(gateway.isRunning)
        try await broker.control(["set_vm_memory_high_watermark", "0.4"])
        var accepted = 0
        for attempt in 0..<30 where accepted != 202 {
            let again = try await call(
                "POST", "/v1/intents/SendMessage", #"{"id":"gw-r5-\#(attempt)","parameters":{"recipients":["Alice"],"content":"e"}}"#)
            accepted = again.status
        }
        #expect(accepted == 202, "submissions are confirmed again once the alarm has cleared")
    }
}

/// One HTTP exchange over a plain socket, for what a client library would not send: a request's head without its body.
enum RawHTTP {
    struct Reply {
        /// What the server sent before it closed the connection or the read timed out.
        var text: String
        /// Whether the server closed the connection (rather than the read timing out).
        var closed: Bool
    }

    static func exchange(port: Int, sending bytes: [UInt8], readTimeout seconds: Int) throws -> Reply {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        try #require(connected, "connect to 127.0.0.1:\(port)")
        let sent = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        try #require(sent == bytes.count)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += buffer[0..<count]
                continue
            }
            return Reply(text: String(decoding: received, as: UTF8.self), closed: count == 0)
        }
    }
}
