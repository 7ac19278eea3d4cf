import Foundation
import IntentAMQP
import IntentClient
import IntentKit
import IntentStore

/// The `/v1` routes for one authenticated request. Each checks what it can
/// on the HTTP thread (400s need no broker) and puts the rest off to the
/// broker pool; a wait registers with the follower before the broker is
/// touched, so no event can slip past it.
struct Handlers: Sendable {
    var gateway: Gateway
    var request: HTTPRequest
    var identity: GatewayIdentity
    var answer: Answer
    var pool: BrokerPool
    var pipeline: SubmitPipelines
    var follower: StatusFollower
    var configuration: Gateway.Configuration
    var metrics: GatewayMetrics

    // MARK: Reading

    func show(id: String) -> HTTPReply {
        if let problem = IntentEnvelope.problem(withID: id) ?? Self.spaceProblem(id) { return invalid(problem) }
        let wait: Double?
        do { wait = try seconds("wait") } catch { return invalid(error.description) }
        guard let wait else {
            return deferred { session in
                guard let status = try session.status(id: id, as: identity.user), !IntentClient.isRefusal(status) else {
                    return Self.unknown(id)
                }
                return Self.ok(status)
            }
        }
        return .later { [self] responder in
            let waiting = follower.wait(
                waiter(id: id, seconds: wait, responder: responder, done: StatusWaiter.answeredOrEnded) { status in
                    guard let status, !IntentClient.isRefusal(status) else { return Self.unknown(id) }
                    return Self.ok(status)
                }, readFirst: true)
            if !waiting { answer.send(follower.tooMany, responder) }
        }
    }

    func list() -> HTTPReply {
        let state: IntentState?
        let limit: Int
        do {
            state = try self.state()
            limit = try integer("limit", in: 1...Gateway.maximumLimit) ?? 50
        } catch {
            return invalid(error.description)
        }
        let type = request.query["type"]
        if let type, let problem = IntentEnvelope.problem(withType: type) { return invalid(problem) }
        return deferred { session in
            guard case .statuses(let statuses) = try session.ask(.list(state: state, type: type, limit: limit), as: identity.user) else {
                throw IntentClientError(.unavailable, "the recorder did not answer with a list")
            }
            return Self.list(statuses)
        }
    }

    func stats() -> HTTPReply {
        deferred { session in
            guard case .tally(let lines) = try session.ask(.tally, as: identity.user) else {
                throw IntentClientError(.unavailable, "the recorder did not answer with a tally")
            }
            var byState: [String: JSONValue] = [:]
            var byType: [String: [String: JSONValue]] = [:]
            var total = 0
            for line in lines {
                total += line.count
                byState[line.state.rawValue] = .number(Double((byState[line.state.rawValue]?.numberValue ?? 0) + Double(line.count)))
                byType[line.type, default: [:]][line.state.rawValue] = .number(Double(line.count))
            }
            let body: JSONValue = [
                "total": .number(Double(total)), "byState": .object(byState), "byType": .object(byType.mapValues(JSONValue.object)),
            ]
            return HTTPResponse(status: 200, body: body.serialized() + [0x0A])
        }
    }

    func dead() -> HTTPReply {
        guard identity.isOperator else { return forbidden("dead letters are for operators") }
        let limit: Int
        do { limit = try integer("limit", in: 1...Gateway.maximumLimit) ?? 50 } catch { return invalid(error.description) }
        return deferred { session in
            guard case .statuses(let statuses) = try session.ask(.dead(limit: limit), as: identity.user) else {
                throw IntentClientError(.unavailable, "the recorder did not answer with a list")
            }
            return Self.list(statuses)
        }
    }

    func requeue(id: String) -> HTTPReply {
        guard identity.isOperator else { return forbidden("requeueing dead letters is for operators") }
        if let problem = IntentEnvelope.problem(withID: id) { return invalid(problem) }
        let url = configuration.brokerURL
        let topology = configuration.topology
        let user = identity.user
        return deferred { session in
            // The token file's role is the gateway's word alone. Workers believe a requeue's publisher only from the
            // broker users they know as operators, so a letter requeued for any other would be taken out of the
            // dead-letter queue and then refused: the recorder, which knows the same operators, is asked first.
            _ = try session.ask(.dead(limit: 1), as: user)
            let outcome: DeadLetters.Outcome
            do throws(AMQPError) {
                outcome = try DeadLetters.requeue(id: id, url: url, topology: topology, userID: user)
            } catch {
                throw IntentClientError(error)
            }
            switch outcome {
            case .requeued(let type):
                let body: JSONValue = ["id": .string(id), "requeued": true, "type": .string(type)]
                return HTTPResponse(status: 200, body: body.serialized() + [0x0A])
            case .notFound(let scanned):
                return HTTPServer.error(404, "unknownIntent", "no dead letter has the id \(Gateway.printable(id)) (\(scanned) looked at)")
            }
        }
    }

    // MARK: Submitting and answering

    func submit(type: String) -> HTTPReply {
        if let problem = IntentEnvelope.problem(withType: type) { return notFound("\(problem): no worker serves it") }
        let body: [String: JSONValue]
        let wait: Double?
        do {
            body = try object(allowing: ["parameters", "id", "group", "expiresAt", "dueAt", "priority"])
            wait = try seconds("wait")
        } catch {
            return self.error(error)
        }
        guard let parameters = body["parameters"].map({ $0.objectValue }) ?? [:] else { return invalid("parameters must be a JSON object") }
        var id = IntentID.make()
        if let given = body["id"] {
            guard let text = given.stringValue else { return invalid("id must be a string") }
            if let problem = IntentEnvelope.problem(withID: text) ?? Self.spaceProblem(text) { return invalid(problem) }
            if IntentEnvelope.isScheduledRunID(text) { return invalid(IntentEnvelope.scheduledRunIDProblem) }
            id = text
        }
        var group: String?
        if let given = body["group"], given != .null {
            guard let text = given.stringValue, !text.isEmpty, text.utf8.count <= 255 else {
                return invalid("group must be a string of 1 to 255 bytes")
            }
            group = text
        }
        var times: [String: Double] = [:]
        for name in ["expiresAt", "dueAt"] {
            guard let given = body[name], given != .null else { continue }
            guard let seconds = given.numberValue, seconds.isFinite else { return invalid("\(name) must be a number of seconds since 1970") }
            times[name] = seconds
        }
        var priority = IntentPriority.normal
        if let given = body["priority"], given != .null {
            guard let name = given.stringValue, let known = IntentPriority(rawValue: name) else { return invalid("priority must be normal or high") }
            priority = known
        }
        let now = Date().timeIntervalSince1970
        let envelope = IntentEnvelope(
            id: id, type: type, parameters: parameters, submittedAt: now, group: group, expiresAt: times["expiresAt"], dueAt: times["dueAt"],
            priority: priority)
        let state: JSONValue = (envelope.dueAt ?? 0) > now ? "scheduled" : "queued"
        return publish(envelope, wait: wait, accepted: ["id": .string(id), "type": .string(type), "state": state])
    }

    /// `answer`, `confirm` or `deny`.
    func turn(_ kind: String, id: String) -> HTTPReply {
        if let problem = IntentEnvelope.problem(withID: id) ?? Self.spaceProblem(id) { return invalid(problem) }
        let answers: [String: JSONValue]
        let wait: Double?
        do {
            wait = try seconds("wait")
            if kind == "answer" {
                let body = try object(allowing: ["parameters"])
                guard let given = body["parameters"]?.objectValue, !given.isEmpty else {
                    return invalid("an answer needs \"parameters\": an object of the answered parameters")
                }
                answers = given
            } else {
                _ = try object(allowing: [])
                answers = [:]
            }
        } catch {
            return self.error(error)
        }
        let identity = identity
        return onPool { [self] session, responder in
            let status = try IntentClient.waitingForAnswer(
                try session.status(id: id, as: identity.user), id: id, user: identity.user, asOperator: identity.isOperator)
            let envelope: IntentEnvelope
            switch kind {
            case "answer": envelope = try IntentClient.answering(status, with: answers)
            case "confirm": envelope = try IntentClient.confirming(status)
            default: envelope = try IntentClient.denying(status)
            }
            var accepted: [String: JSONValue] = ["id": .string(id), "type": .string(envelope.type), "state": "queued"]
            accepted["turn"] = .number(Double(envelope.turn))
            publish(envelope, wait: wait, accepted: accepted, responder: responder)
        }
    }

    func cancel(id: String) -> HTTPReply {
        if let problem = IntentEnvelope.problem(withID: id) ?? Self.spaceProblem(id) { return invalid(problem) }
        let wait: Double
        do {
            _ = try object(allowing: [])
            wait = try seconds("wait") ?? 10
        } catch {
            return self.error(error)
        }
        let identity = identity
        return onPool { [self] session, responder in
            guard let status = try session.status(id: id, as: identity.user), !IntentClient.isRefusal(status) else {
                return answer.send(Self.unknown(id), responder)
            }
            if status.state.isTerminal { return answer.send(Self.ok(status), responder) }
            // Not ready until the cancel is published (as a submission's wait): a deadline passing first must not
            // answer `cancelRequested` for a cancel whose publish then fails.
            let registered = follower.register(
                waiter(id: id, seconds: wait, responder: responder, ready: false, done: { $0.state.isTerminal || IntentClient.isRefusal($0) }) {
                    decided in
                    guard let decided, !IntentClient.isRefusal(decided) else {
                        return Self.json(202, ["id": .string(id), "type": .string(status.type), "state": "cancelRequested"])
                    }
                    return decided.state.isTerminal ? Self.ok(decided) : Self.ok(decided, status: 202)
                })
            guard let key = registered else { return answer.send(follower.tooMany, responder) }
            do {
                try session.publish { publisher throws(AMQPError) in try publisher.cancel(id: id, type: status.type, userID: identity.user) }
            } catch {
                follower.cancel(key)
                throw error
            }
            follower.confirmed(key)
        }
    }

    // MARK: Streams

    func events(id: String) -> HTTPReply {
        if let problem = IntentEnvelope.problem(withID: id) ?? Self.spaceProblem(id) { return invalid(problem) }
        let identity = identity
        return .later { [self] responder in
            // Subscribed before the snapshot is read: events meanwhile are held, then follow it.
            let stream = EventStream(held: true)
            guard let key = follower.subscribe(StatusFollower.Subscription(id: id, type: nil, state: nil, identity: identity, stream: stream))
            else {
                return answer.send(follower.tooMany, responder)
            }
            pool.run { session in
                do {
                    guard let status = try session.status(id: id, as: identity.user), !IntentClient.isRefusal(status) else {
                        follower.unsubscribe(key)
                        stream.release(first: [], end: true)
                        return answer.send(Self.unknown(id), responder)
                    }
                    let snapshot = Array("event: snapshot\ndata: ".utf8) + IntentStatus.jsonEncoded(status) + Array("\n\n".utf8)
                    stream.release(first: snapshot, end: status.state.isTerminal)
                    answer.stream(stream, responder)
                } catch {
                    follower.unsubscribe(key)
                    stream.release(first: [], end: true)
                    answer.send(GatewayError.response(for: error), responder)
                }
            }
        }
    }

    func liveEvents() -> HTTPReply {
        let state: IntentState?
        do { state = try self.state() } catch { return invalid(error.description) }
        let type = request.query["type"]
        if let type, let problem = IntentEnvelope.problem(withType: type) { return invalid(problem) }
        let identity = identity
        return .later { [self] responder in
            let stream = EventStream(first: Array(": following\n\n".utf8))
            guard follower.subscribe(StatusFollower.Subscription(id: nil, type: type, state: state, identity: identity, stream: stream)) != nil
            else {
                return answer.send(follower.tooMany, responder)
            }
            answer.stream(stream, responder)
        }
    }

    // MARK: Helpers

    /// Publishes `envelope` as the token's user; answers 202 `accepted`, or with `wait`, the status once the turn is answered or ended.
    private func publish(_ envelope: IntentEnvelope, wait: Double?, accepted: [String: JSONValue]) -> HTTPReply {
        .later { [self] responder in publish(envelope, wait: wait, accepted: accepted, responder: responder) }
    }

    private func publish(_ envelope: IntentEnvelope, wait: Double?, accepted: [String: JSONValue], responder: Responder) {
        let user = identity.user
        let asOperator = identity.isOperator
        let location = "/v1/intents/\(Self.pathSegment(envelope.id))"
        let acceptedResponse = Self.json(202, accepted, headers: [("Location", location)])
        var registered: UInt64?
        if let wait {
            let minimumTurn = envelope.turn
            let type = envelope.type
            let isThisSubmissions: @Sendable (IntentStatus) -> Bool = { status in
                IntentClient.answers(status, aSubmissionOf: type, by: user, asOperator: asOperator)
            }
            let done: @Sendable (IntentStatus) -> Bool = { status in
                guard isThisSubmissions(status) else { return false }
                if IntentClient.isRefusal(status) { return true }
                if envelope.request == .deny { return status.state.isTerminal }
                return status.state.isTerminal || ((status.turn ?? 0) >= minimumTurn && status.state == .needsInput)
            }
            var waiting = waiter(id: envelope.id, seconds: wait, responder: responder, ready: false, done: done) { status in
                // Out of time with another intent's status: nothing of this submission is known yet.
                guard let status, isThisSubmissions(status) else { return acceptedResponse }
                if IntentClient.isRefusal(status) {
                    return HTTPServer.error(403, "forbidden", "refused: \(status.response?.message ?? status.response?.code ?? "")")
                }
                return Self.ok(status, headers: [("Location", location)])
            }
            waiting.refusedSince = Date().timeIntervalSince1970
            // Refused before anything is published: a 429 says nothing was submitted.
            guard let key = follower.register(waiting) else { return answer.send(follower.tooMany, responder) }
            registered = key
        }
        let answer = answer
        let metrics = metrics
        let follower = follower
        let key = registered
        pipeline.submit(IntentPublisher.message(for: envelope, topology: configuration.topology, userID: user)) { result in
            switch result {
            case .success:
                metrics.submitted()
                if let key { follower.confirmed(key) } else { answer.send(acceptedResponse, responder) }
            case .failure(let error):
                if let key { follower.cancel(key) }
                let response = GatewayError.response(for: error)
                guard response.status == 503 else { return answer.send(response, responder) }
                // Perhaps published and not confirmed: the id to submit again under (which never repeats its effects).
                let body: [String: JSONValue] = ["code": "unavailable", "error": .string(error.message), "id": .string(envelope.id)]
                answer.send(Self.json(503, body, headers: [("Location", location), ("Retry-After", "1")]), responder)
            }
        }
    }

    private func waiter(
        id: String, seconds: Double, responder: Responder, ready: Bool = true, done: @escaping @Sendable (IntentStatus) -> Bool,
        answer make: @escaping @Sendable (IntentStatus?) -> HTTPResponse
    ) -> StatusFollower.Waiter {
        let answer = self.answer
        return StatusFollower.Waiter(
            id: id, identity: identity, deadline: Date().addingTimeInterval(seconds), done: done, answer: { answer.finish(make($0)) },
            failure: { answer.finish(GatewayError.response(for: $0)) }, responder: responder, ready: ready)
    }

    /// Work for the pool whose result (or thrown error) is the answer.
    private func deferred(_ work: @escaping @Sendable (BrokerSession) throws -> HTTPResponse) -> HTTPReply {
        let answer = self.answer
        return onPool { session, responder in answer.send(try work(session), responder) }
    }

    /// Work for the pool that answers through `responder` itself; an error it throws is the answer.
    private func onPool(_ work: @escaping @Sendable (BrokerSession, Responder) throws -> Void) -> HTTPReply {
        let answer = self.answer
        return .later { [pool] responder in
            pool.run { session in
                do {
                    try work(session, responder)
                } catch {
                    answer.send(GatewayError.response(for: error), responder)
                }
            }
        }
    }

    /// The body as a JSON object with only these keys (an empty body is an empty object).
    private func object(allowing keys: Set<String>) throws(GatewayError) -> [String: JSONValue] {
        if let type = request.headers["content-type"], !request.body.isEmpty,
            !type.lowercased().hasPrefix("application/json") && !type.lowercased().contains("+json")
        {
            throw GatewayError(415, "unsupportedMediaType", "the body must be application/json, not \(Gateway.printable(type))")
        }
        guard !request.body.isEmpty else { return [:] }
        guard let value = try? JSONValue.parse(request.body) else { throw GatewayError(400, "invalid", "the body is not valid JSON") }
        guard let object = value.objectValue else { throw GatewayError(400, "invalid", "the body must be a JSON object") }
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            let expected = keys.isEmpty ? "no fields" : keys.sorted().joined(separator: ", ")
            throw GatewayError(400, "invalid", "unknown field '\(Gateway.printable(unknown))' (expected \(expected))")
        }
        return object
    }

    private func seconds(_ name: String) throws(GatewayError) -> Double? {
        guard let text = request.query[name] else { return nil }
        guard let value = Double(text), value.isFinite, value >= 0, value <= configuration.maximumWait else {
            throw GatewayError(400, "invalid", "\(name) must be a number of seconds from 0 to \(Int(configuration.maximumWait))")
        }
        return value
    }

    private func integer(_ name: String, in range: ClosedRange<Int>) throws(GatewayError) -> Int? {
        guard let text = request.query[name] else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw GatewayError(400, "invalid", "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    private func state() throws(GatewayError) -> IntentState? {
        guard let text = request.query["state"] else { return nil }
        guard let state = IntentState(rawValue: text) else {
            throw GatewayError(400, "invalid", "unknown state '\(Gateway.printable(text))'")
        }
        return state
    }

    private func invalid(_ words: String) -> HTTPReply { .now(answer.finish(HTTPServer.error(400, "invalid", words))) }
    private func forbidden(_ words: String) -> HTTPReply { .now(answer.finish(HTTPServer.error(403, "forbidden", words))) }
    private func notFound(_ words: String) -> HTTPReply { .now(answer.finish(HTTPServer.error(404, "noWorker", words))) }
    private func error(_ error: GatewayError) -> HTTPReply { .now(answer.finish(error.response)) }

    /// What a path segment may hold unencoded.
    static let segmentAllowed = CharacterSet.urlPathAllowed.subtracting(["/"])

    /// `id` as one path segment: as it is when it holds only unreserved characters (every generated id), else percent-encoded.
    static func pathSegment(_ id: String) -> String {
        let plain = id.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                return true
            default:
                return false
            }
        }
        return plain ? id : id.addingPercentEncoding(withAllowedCharacters: segmentAllowed) ?? id
    }

    /// Ids in paths may not hold spaces (the command line's rule too).
    static func spaceProblem(_ id: String) -> String? {
        id.contains(where: { $0.isWhitespace || $0.isNewline }) ? "the id contains a space" : nil
    }

    static func unknown(_ id: String) -> HTTPResponse {
        HTTPServer.error(404, "unknownIntent", "\(Gateway.printable(id)) is unknown to the status store")
    }

    static func ok(_ status: IntentStatus, status code: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: code, headers: headers, body: IntentStatus.jsonEncoded(status) + [0x0A])
    }

    static func list(_ statuses: [IntentStatus]) -> HTTPResponse {
        HTTPResponse(status: 200, body: Array(#"{"intents":"#.utf8) + IntentStatus.jsonEncoded(statuses) + Array("}\n".utf8))
    }

    static func json(_ code: Int, _ object: [String: JSONValue], headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: code, headers: headers, body: JSONValue.object(object).serialized() + [0x0A])
    }
}

/// A request the gateway answers with an error, and its status code.
struct GatewayError: Error, CustomStringConvertible {
    var status: Int
    var code: String
    var description: String

    init(_ status: Int, _ code: String, _ description: String) {
        self.status = status
        self.code = code
        self.description = description
    }

    var response: HTTPResponse {
        HTTPServer.error(status, code, description, headers: status == 503 ? [("Retry-After", "1")] : [])
    }

    /// The HTTP answer for what a client call threw.
    static func response(for error: any Error) -> HTTPResponse {
        if let error = error as? GatewayError { return error.response }
        guard let error = error as? IntentClientError else { return GatewayError(503, "unavailable", "\(error)").response }
        switch error.kind {
        case .unknownIntent, .notYours: return GatewayError(404, "unknownIntent", error.message).response
        case .notWaiting: return GatewayError(409, "notWaiting", error.message).response
        case .forbidden: return GatewayError(403, "forbidden", error.message).response
        case .noWorker: return GatewayError(404, "noWorker", error.message).response
        case .invalid: return GatewayError(400, "invalid", error.message).response
        case .configuration, .timeout, .unavailable: return GatewayError(503, "unavailable", error.message).response
        }
    }
}
