import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Testing

/// deploy/definitions.json against a real broker: each role logs in and does
/// what IntentQueue's processes do as it, and is refused what they must never
/// do; then each grant is taken away in turn, and the command that needs it
/// fails. A grant nothing needs would be caught by the last check.
///
/// The limit is a hang guard, not a timing: the five roles run as one test,
/// and the worker's thirty grants each start a worker that must fail, which
/// took 450–535 s of CI beside a CPU hog and once passed 600 s.
@Suite(.timeLimit(.minutes(25)))
struct DefinitionsBrokerTests {
    typealias Role = SecureSandbox.Role

    /// One permission a command needs: a kind (configure, write, read) and the
    /// object names (a regular expression) it is needed on; `topic` for the
    /// read topic permission on intents.status.
    struct Need: CustomStringConvertible {
        enum Kind: String { case configure, write, read, topic }
        var kind: Kind
        var objects: String
        var description: String { "\(kind.rawValue) on \(objects)" }
    }

    /// What a process of a role does, as one command, and the grants it needs.
    struct Command {
        var name: String
        var needs: [Need]
        var run: @Sendable (AMQPConnection, _ user: String) throws -> Void
    }

    static let topology = Topology()
    static let types = ["BookAppointment", "OrderSoup", "SendMessage", "SendPayment"]

    /// Publishes with confirms and waits for the broker to take it (a refusal closes the channel: an error).
    static func publish(_ connection: AMQPConnection, _ message: OutgoingMessage) throws {
        let result = Result { () throws(AMQPError) in
            try connection.publishConfirmed([message], timeout: 30, context: "publishing to \(message.exchange)")
        }
        guard case .failure(let error) = result else { return }
        // Taken by the broker and routed nowhere is fine: what this checks is the grant, not a binding.
        if error.kind == .unroutable { return }
        throw error.kind == .rejected ? BrokerFailure(message: "the broker refused a publish to \(message.exchange)") : error
    }

    static func followQueue(_ connection: AMQPConnection, key: String) throws {
        let queue = try connection.declareQueue("", durable: false, exclusive: true, autoDelete: true).name
        try connection.bindQueue(queue, exchange: topology.statusExchange, routingKey: key)
        _ = try connection.consume(queue, noAck: true, exclusive: true)
    }

    static let envelope = IntentEnvelope(id: "probe", type: "SendMessage", parameters: [:], submittedAt: 0).encoded()

    static func commands(_ role: Role) -> [Command] {
        let t = topology
        switch role {
        case .producer:
            return [
                Command(name: "submit (intent-submit)", needs: [Need(kind: .write, objects: "intents")]) { connection, user in
                    try t.checkExchanges(on: connection)
                    try publish(connection, OutgoingMessage(exchange: t.intentsExchange, routingKey: "SendMessage", body: envelope, userID: user))
                },
                Command(name: "the cancel hint (intent-status cancel)", needs: [Need(kind: .write, objects: #"intents\.cancel"#)]) {
                    connection, user in
                    try publish(connection, OutgoingMessage(exchange: t.cancelExchange, routingKey: "", body: envelope, userID: user))
                },
                Command(name: "a remote status request (--remote)", needs: [Need(kind: .write, objects: #"intents\.status\.requests"#)]) {
                    connection, user in
                    try publish(
                        connection,
                        OutgoingMessage(
                            exchange: t.statusRequestExchange, routingKey: t.statusRequestQueue, body: [], userID: user, persistent: false))
                },
                Command(
                    name: "follow its own events (--wait, watch)",
                    needs: [
                        Need(kind: .configure, objects: #"amq\.gen-.*"#), Need(kind: .write, objects: #"amq\.gen-.*"#),
                        Need(kind: .read, objects: #"amq\.gen-.*"#), Need(kind: .read, objects: #"intents\.status"#),
                        Need(kind: .topic, objects: ""),
                    ]
                ) { connection, user in
                    try followQueue(connection, key: "\(user).#")
                },
            ]
        case .gateway:
            // The operator's grants, and the impersonator tag: it publishes as each token's user.
            return commands(.operator) + [
                Command(name: "submit for a token's user (impersonator)", needs: [Need(kind: .write, objects: "intents")]) { connection, _ in
                    try publish(
                        connection, OutgoingMessage(exchange: t.intentsExchange, routingKey: "SendMessage", body: envelope, userID: "someone-else"))
                }
            ]
        case .operator:
            return [
                Command(
                    name: "requeue a dead letter",
                    needs: [
                        Need(kind: .read, objects: #"intents\.dead"#), Need(kind: .write, objects: "intents"),
                    ]
                ) { connection, user in
                    _ = try connection.get(t.deadLetterQueue)
                    try publish(connection, OutgoingMessage(exchange: t.intentsExchange, routingKey: "SendMessage", body: envelope, userID: user))
                },
                Command(name: "cancel", needs: [Need(kind: .write, objects: #"intents\.cancel"#)]) { connection, user in
                    try t.checkExchanges(on: connection)
                    try publish(connection, OutgoingMessage(exchange: t.cancelExchange, routingKey: "", body: envelope, userID: user))
                },
                Command(name: "a remote status request", needs: [Need(kind: .write, objects: #"intents\.status\.requests"#)]) { connection, user in
                    try publish(
                        connection,
                        OutgoingMessage(
                            exchange: t.statusRequestExchange, routingKey: t.statusRequestQueue, body: [], userID: user, persistent: false))
                },
                Command(
                    name: "follow everyone's events (watch --all)",
                    needs: [
                        Need(kind: .configure, objects: #"amq\.gen-.*"#), Need(kind: .write, objects: #"amq\.gen-.*"#),
                        Need(kind: .read, objects: #"amq\.gen-.*"#), Need(kind: .read, objects: #"intents\.status"#),
                        Need(kind: .topic, objects: ""),
                    ]
                ) { connection, _ in
                    try followQueue(connection, key: "#")
                },
            ]
        case .worker:
            let shared = [
                "intents", #"intents\.status"#, #"intents\.dead"#, #"intents\.retry"#, #"intents\.retry\.[0-9]+s"#,
                #"intents\.work"#, #"intents\.work\.high"#, #"intents\.ledger"#, #"intents\.cancel"#, #"intents\.cancellations"#,
            ]
            let reads = [
                "intents", #"intents\.status"#, #"intents\.dead"#, #"intents\.retry"#, #"intents\.retry\.[0-9]+s"#,
                #"intents\.work"#, #"intents\.work\.high"#, #"intents\.cancel"#, #"intents\.cancellations"#,
            ]
            return [
                Command(
                    name: "declare the topology, consume, publish outcomes and retries",
                    needs: shared.map { Need(kind: .configure, objects: $0) } + shared.map { Need(kind: .write, objects: $0) }
                        + reads.map { Need(kind: .read, objects: $0) }
                ) { connection, user in
                    try t.declareWork(on: connection, types: types)
                    try connection.setPrefetch(10)  // a stream is consumed only with a prefetch
                    _ = try connection.consume(t.workQueue)
                    _ = try connection.consume(t.highPriorityQueue)
                    _ = try connection.consume(t.cancelStream, arguments: ["x-stream-offset": .string("first")])
                    let event = StatusEvent(id: "probe", type: "SendMessage", state: .success, attempt: 1, owner: user)
                    var status = t.statusMessage(for: event)
                    status.userID = user
                    try publish(connection, status)
                    try publish(
                        connection,
                        OutgoingMessage(
                            exchange: t.retryExchange, routingKey: "SendMessage", body: envelope, userID: user,
                            headers: [Topology.retryBucketHeader: .string("1s")]))
                    try publish(connection, OutgoingMessage(exchange: t.cancelExchange, routingKey: "", body: [], userID: user))
                },
                Command(
                    name: "read the schedules from the recorder (--scheduler)", needs: [Need(kind: .write, objects: #"intents\.status\.requests"#)]
                ) { connection, user in
                    try publish(
                        connection,
                        OutgoingMessage(
                            exchange: t.statusRequestExchange, routingKey: t.statusRequestQueue, body: StatusQuery.schedules.encoded, userID: user,
                            persistent: false))
                },
            ]
        case .recorder:
            let configures = ["intents", #"intents\.status"#, #"intents\.dead"#, #"intents\.ledger"#, #"intents\.status\.requests"#]
            return [
                Command(
                    name: "declare the ledger and the request queue, consume, announce, ask for expiries, answer",
                    needs: configures.map { Need(kind: .configure, objects: $0) }
                        + ["intents", #"intents\.ledger"#, #"intents\.status"#, #"intents\.status\.requests"#, #"amq\.default"#]
                        .map { Need(kind: .write, objects: $0) }
                        + [#"intents\.status"#, #"intents\.dead"#, #"intents\.ledger"#, #"intents\.status\.requests"#]
                        .map { Need(kind: .read, objects: $0) }
                ) { connection, user in
                    try t.declareLedger(on: connection)
                    try t.declareStatusRequests(on: connection)
                    _ = try connection.consume(t.ledgerQueue)
                    _ = try connection.consume(t.statusRequestQueue, noAck: true)
                    let event = StatusEvent(id: "probe", type: "SendMessage", state: .failure, attempt: 1, owner: user)
                    var announcement = t.statusMessage(for: event, persistent: false)
                    announcement.userID = user
                    try publish(connection, announcement)
                    try publish(
                        connection,
                        OutgoingMessage(
                            exchange: t.intentsExchange, routingKey: "SendMessage",
                            body: IntentEnvelope.request(.expire, id: "probe", type: "SendMessage", turn: 1).encoded(), userID: user))
                    // An answer goes to the requester's reply-to address through the default exchange.
                    try publish(
                        connection, OutgoingMessage(exchange: "", routingKey: t.statusRequestQueue, body: [], userID: user, persistent: false))
                }
            ]
        }
    }

    /// What a role must never do.
    static func forbidden(_ role: Role, otherUser: String) -> [(String, @Sendable (AMQPConnection, String) throws -> Void)] {
        let t = topology
        let common: [(String, @Sendable (AMQPConnection, String) throws -> Void)] = [
            (
                "publish a status event",
                { connection, user in
                    var message = t.statusMessage(for: StatusEvent(id: "x", type: "SendMessage", state: .success, attempt: 1, owner: user))
                    message.userID = user
                    try publish(connection, message)
                }
            ),
            ("delete intents.dead", { connection, _ in try connection.deleteQueue(t.deadLetterQueue) }),
            ("delete intents.status", { connection, _ in try connection.deleteExchange(t.statusExchange) }),
            ("declare intents.work", { connection, _ in _ = try connection.declareQueue(t.workQueue) }),
            ("declare a queue named intents.status", { connection, _ in _ = try connection.declareQueue(t.statusExchange) }),
            (
                "publish through the default exchange",
                { connection, user in
                    try publish(connection, OutgoingMessage(exchange: "", routingKey: t.workQueue, body: envelope, userID: user))
                }
            ),
        ]
        let other: @Sendable (AMQPConnection, String) throws -> Void = { connection, _ in try followQueue(connection, key: "\(otherUser).#") }
        let everyone: @Sendable (AMQPConnection, String) throws -> Void = { connection, _ in try followQueue(connection, key: "#") }
        let dead: @Sendable (AMQPConnection, String) throws -> Void = { connection, _ in _ = try connection.get(t.deadLetterQueue) }
        switch role {
        case .producer:
            return common + [("follow another owner's events", other), ("follow everyone's events", everyone), ("read the dead letters", dead)]
        case .operator, .gateway:
            return common
        case .worker, .recorder:
            return []
        }
    }

    /// The grant with `need` taken away: a negative lookahead before the role's own pattern.
    static func without(_ need: Need, from grant: SecureSandbox.Grant) -> SecureSandbox.Grant {
        func excluding(_ pattern: String) -> String { "^(?!(?:\(need.objects))$)(?:\(pattern))" }
        var reduced = grant
        switch need.kind {
        case .configure: reduced.configure = excluding(grant.configure)
        case .write: reduced.write = excluding(grant.write)
        case .read: reduced.read = excluding(grant.read)
        case .topic: break
        }
        return reduced
    }

    func run(_ command: @escaping @Sendable (AMQPConnection, String) throws -> Void, as user: String, in secure: SecureSandbox) async -> (any Error)?
    {
        let url = secure.url(user)
        return await withCheckedContinuation { (done: CheckedContinuation<(any Error)?, Never>) in
            Thread {
                do {
                    let connection = try AMQPConnection(url: try BrokerURL(url), connectTimeout: 30, rpcTimeout: 30)
                    defer { connection.close() }
                    try connection.enableConfirms()
                    try command(connection, user)
                    done.resume(returning: nil)
                } catch {
                    done.resume(returning: error)
                }
            }.start()
        }
    }

    /// The broker's refusal (ACCESS_REFUSED), not any failure: a timeout on a busy machine proves nothing.
    static func isRefusal(_ error: (any Error)?) -> Bool {
        guard let error else { return false }
        if error is BrokerFailure { return true }  // a publish the broker rejected
        return (error as? AMQPError)?.replyCode == 403
    }

    @Test(arguments: [Role.worker, .recorder, .producer, .operator, .gateway])
    func eachRoleMayDoWhatItsProcessesDoAndNothingElseAndNeedsEveryGrant(_ role: Role) async throws {
        let secure = try await SecureSandbox("definitions-\(role.rawValue.dropFirst(7))")
        defer { Task { await secure.tearDown() } }
        let user: String
        switch role {
        case .producer: user = secure.alice
        case .worker: user = secure.workerUser
        case .recorder: user = secure.recorderUser
        case .operator: user = secure.operatorUser
        case .gateway: user = try await secure.addGatewayUser()
        }
        // The topology the worker and the recorder declare, for the other roles to use.
        if role != .worker, let declare = Self.commands(.worker).first {
            #expect(await run(declare.run, as: secure.workerUser, in: secure) == nil, "the worker declares the topology")
        }
        let recorderDeclares = Self.commands(.recorder).first
        if [.producer, .operator, .gateway, .worker].contains(role), let declare = recorderDeclares {
            #expect(await run(declare.run, as: secure.recorderUser, in: secure) == nil, "the recorder declares its request exchange")
        }
        for command in Self.commands(role) {
            let error = await run(command.run, as: user, in: secure)
            #expect(error == nil, "\(role.rawValue) may \(command.name): \(error.map { "\($0)" } ?? "")")
        }
        for (name, command) in Self.forbidden(role, otherUser: secure.bob) {
            let error = await run(command, as: user, in: secure)
            #expect(Self.isRefusal(error), "\(role.rawValue) must not \(name): \(error.map { "\($0)" } ?? "it could")")
        }
        // Each grant taken away in turn: the command that needs it then fails.
        let full = try SecureSandbox.grant(of: role)
        var checked = 0
        for command in Self.commands(role) {
            for need in command.needs {
                if role == .worker || role == .recorder {
                    // From nothing, as on a fresh broker: some checks (a dead-letter exchange's) come only with creation.
                    Self.topology.deleteAll(url: try BrokerURL(secure.sandbox.brokerURL))
                    // A worker's scheduler asks through the recorder's request exchange: it must exist.
                    if role == .worker, command.name.contains("--scheduler"), let declare = recorderDeclares {
                        #expect(await run(declare.run, as: secure.recorderUser, in: secure) == nil)
                    }
                }
                if need.kind == .topic {
                    try await TestBroker.shared.control(["set_topic_permissions", "-p", secure.vhost, user, Self.topology.statusExchange, "^$", "^$"])
                } else {
                    try await secure.grant(role, to: user, replacing: Self.without(need, from: full))
                }
                let error = await run(command.run, as: user, in: secure)
                #expect(Self.isRefusal(error), "\(role.rawValue) without \(need): \(command.name) \(error.map { "\($0)" } ?? "still works")")
                try await secure.grant(role, to: user)
                checked += 1
            }
        }
        print(
            "definitions: \(role.rawValue): \(Self.commands(role).count) commands allowed, \(Self.forbidden(role, otherUser: "").count) refused, \(checked) grants each needed"
        )
    }
}
