import Foundation
import Testing

/// A sandbox whose processes log in as the roles of deploy/definitions.json:
/// a user per role (and two producers), each with the definitions'
/// permissions, topic permissions and policies, in a virtual host of its own.
/// The worker and the recorder run as separate processes under their own
/// users, as in production.
final class SecureSandbox: @unchecked Sendable {
    // @unchecked: the processes are touched by the owning test only.
    enum Role: String, CaseIterable {
        case producer = "intent-producer"
        case worker = "intent-worker"
        case recorder = "intent-recorder"
        case `operator` = "intent-operator"
        case gateway = "intent-gateway"
    }

    struct Grant: Equatable {
        var configure: String
        var write: String
        var read: String
    }

    let sandbox: Sandbox
    let vhost: String
    private let suffix = String(UUID().uuidString.prefix(6)).lowercased()
    private(set) var users: [String] = []
    private var processes: [WorkerProcess] = []

    /// The first producer (owner of the victims' intents), the second (the attacker), and the others.
    var alice: String { "alice-\(suffix)" }
    var bob: String { "bob-\(suffix)" }
    var workerUser: String { "worker-\(suffix)" }
    var recorderUser: String { "recorder-\(suffix)" }
    var operatorUser: String { "operator-\(suffix)" }

    init(_ label: String) async throws {
        sandbox = try await Sandbox(label)
        vhost = String(sandbox.brokerURL.split(separator: "/").last ?? "")
        for (user, role) in [(alice, Role.producer), (bob, .producer), (workerUser, .worker), (recorderUser, .recorder), (operatorUser, .operator)] {
            try await TestBroker.shared.control(["add_user", user, password(user)])
            users.append(user)
            try await grant(role, to: user)
        }
        for policy in try Self.definitions()["policies"] as? [[String: Any]] ?? [] {
            let definition = try JSONSerialization.data(withJSONObject: policy["definition"] ?? [:])
            try await TestBroker.shared.control([
                "set_policy", "-p", vhost, "--apply-to", policy["apply-to"] as? String ?? "queues",
                policy["name"] as? String ?? "policy", policy["pattern"] as? String ?? "", String(decoding: definition, as: UTF8.self),
            ])
        }
    }

    /// A user of the gateway role, with the `impersonator` tag the definitions give it.
    func addGatewayUser() async throws -> String {
        let user = "gateway-\(suffix)"
        try await TestBroker.shared.control(["add_user", user, password(user)])
        users.append(user)
        try await TestBroker.shared.control(["set_user_tags", user, "impersonator"])
        try await grant(.gateway, to: user)
        return user
    }

    func password(_ user: String) -> String { "pw-\(user)" }

    func url(_ user: String) -> String { "amqp://\(user):\(password(user))@127.0.0.1:5690/\(vhost)" }

    func environment(as user: String) -> [String: String] {
        sandbox.environment.merging(["INTENT_BROKER_URL": url(user)]) { _, new in new }
    }

    static func definitions() throws -> [String: Any] {
        let data = try Data(contentsOf: Paths.repository.appendingPathComponent("deploy/definitions.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// A role's permissions, as definitions.json has them.
    static func grant(of role: Role) throws -> Grant {
        let entry = try #require((try definitions()["permissions"] as? [[String: Any]])?.first { $0["user"] as? String == role.rawValue })
        return Grant(
            configure: entry["configure"] as? String ?? "^$", write: entry["write"] as? String ?? "^$", read: entry["read"] as? String ?? "^$")
    }

    /// Gives `user` the role's permissions and topic permissions, or `replacing` them.
    func grant(_ role: Role, to user: String, replacing: Grant? = nil) async throws {
        let grant = try replacing ?? Self.grant(of: role)
        try await TestBroker.shared.control(["set_permissions", "-p", vhost, user, grant.configure, grant.write, grant.read])
        for topic in try Self.definitions()["topic_permissions"] as? [[String: Any]] ?? [] where topic["user"] as? String == role.rawValue {
            try await TestBroker.shared.control([
                "set_topic_permissions", "-p", vhost, user, topic["exchange"] as? String ?? "",
                topic["write"] as? String ?? "^$", topic["read"] as? String ?? "^$",
            ])
        }
    }

    /// The recorder and a worker, each as its own user, trusting each other, with the operator named; the worker.
    @discardableResult
    func startServices(workerArguments: [String] = [], recorderArguments: [String] = []) async throws -> WorkerProcess {
        let recorder = try WorkerProcess(
            arguments: ["--recorder-only", "--trust-user", workerUser, "--operator-user", operatorUser] + recorderArguments,
            environment: environment(as: recorderUser), logPath: sandbox.directory.appendingPathComponent("recorder.log").path)
        processes.append(recorder)
        try await recorder.waitForConnections(1)
        return try await startWorker(workerArguments)
    }

    /// The recorder `startServices` started, while it is there.
    var recorderProcess: WorkerProcess? { processes.first }

    /// A worker as the worker user; it replaces the previous one as `worker`.
    @discardableResult
    func startWorker(_ arguments: [String] = [], environment extra: [String: String] = [:], waiting: Bool = true) async throws -> WorkerProcess {
        let worker = try WorkerProcess(
            arguments: ["--trust-user", recorderUser, "--operator-user", operatorUser, "--allow-user", alice] + arguments,
            environment: environment(as: workerUser).merging(extra) { _, new in new },
            logPath: sandbox.directory.appendingPathComponent("worker-\(processes.count).log").path)
        processes.append(worker)
        if waiting { try await worker.waitForConnections(1) }
        return worker
    }

    /// Stops the latest worker (SIGTERM).
    func stopWorker() {
        if let worker = processes.last, processes.count > 1, worker.isRunning { worker.process.terminate() }
    }

    /// Every worker's log, oldest first.
    var workerLog: String { processes.dropFirst().map(\.log).joined(separator: "\n") }
    var recorderLog: String { processes.first?.log ?? "" }
    var workerPID: Int32? { processes.count > 1 ? processes.last?.pid : nil }
    var workerIsRunning: Bool { processes.count > 1 && processes.last!.isRunning }

    func submit(as user: String, _ arguments: [String], timeout: Double = 30) async throws -> ToolResult {
        try await run(Paths.tool("intent-submit"), arguments, environment: environment(as: user), timeout: timeout)
    }

    func status(as user: String, _ arguments: [String], timeout: Double = 30) async throws -> ToolResult {
        try await run(Paths.tool("intent-status"), arguments, environment: environment(as: user), timeout: timeout)
    }

    func tearDown() async {
        for process in processes where process.isRunning { _ = try? await process.stop() }
        for user in users { _ = try? await TestBroker.shared.control(["delete_user", user]) }
        await sandbox.tearDown()
    }
}
