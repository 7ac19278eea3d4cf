import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A secure sandbox with an `intent-gateway` in front of it: the gateway logs
/// in as a user of its own with RabbitMQ's `impersonator` tag and the
/// definitions' gateway permissions; alice and bob hold producer tokens, the
/// operator an operator token.
final class GatewaySandbox: @unchecked Sendable {
    // @unchecked: the process is touched by the owning test only.
    let secure: SecureSandbox
    let gatewayUser: String
    let tokensPath: String
    private(set) var gateway: WorkerProcess?
    private(set) var port = 0

    var aliceToken: String { "alice-token-\(secure.alice)" }
    var bobToken: String { "bob-token-\(secure.bob)" }
    var operatorToken: String { "operator-token-\(secure.operatorUser)" }
    var base: String { "http://127.0.0.1:\(port)" }

    init(_ label: String) async throws {
        secure = try await SecureSandbox(label)
        gatewayUser = try await secure.addGatewayUser()
        tokensPath = secure.sandbox.directory.appendingPathComponent("gateway-tokens").path
        let tokens = """
            \(aliceToken) \(secure.alice) producer
            \(bobToken) \(secure.bob) producer
            \(operatorToken) \(secure.operatorUser) operator

            """
        try tokens.write(toFile: tokensPath, atomically: true, encoding: .utf8)
        chmod(tokensPath, 0o600)
    }

    /// The recorder, a worker (that knows the operator) and the gateway.
    func start(workerArguments: [String] = []) async throws {
        try await secure.startServices(workerArguments: workerArguments)
        try await startGateway()
    }

    /// Starts the gateway on a free port and waits until it answers `/healthz` with 200.
    func startGateway(_ arguments: [String] = [], environment extra: [String: String] = [:]) async throws {
        port = try Self.freePort()
        let gateway = try WorkerProcess(
            arguments: ["--tokens", tokensPath, "--listen", "127.0.0.1:\(port)", "--broker-threads", "4"] + arguments,
            environment: secure.environment(as: gatewayUser).merging(extra) { _, new in new }, executable: Paths.tool("intent-gateway"),
            logPath: secure.sandbox.directory.appendingPathComponent("gateway.log").path)
        self.gateway = gateway
        try await eventually(timeout: 60, "the gateway to answer /healthz (log: \(gateway.logPath))") {
            if !gateway.isRunning { throw BrokerFailure(message: "intent-gateway exited early:\n\(gateway.log)") }
            return Self.healthy(port: port)
        }
    }

    /// Waits until the recorder has stored `id`. A 202 means the broker holds the submission; the recorder reads it
    /// from the ledger queue, and a status request sent at once through another queue may reach it first (404).
    func waitUntilRecorded(_ id: String) async throws {
        try await eventually(timeout: 30, "the recorder to store \(id)") {
            (try? secure.sandbox.statusStore().status(id: id)) != nil
        }
    }

    private static func healthy(port: Int) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let healthy = LockedFlag()
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)/healthz")!)
        request.timeoutInterval = 5
        URLSession.shared.dataTask(with: request) { _, response, _ in
            if (response as? HTTPURLResponse)?.statusCode == 200 { healthy.set() }
            semaphore.signal()
        }.resume()
        semaphore.wait()
        return healthy.value
    }

    /// A port nothing listens on now.
    static func freePort() throws -> Int {
        let socket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, 16) } }
        guard bound == 0 else { throw BrokerFailure(message: "no free port") }
        var length = socklen_t(16)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// One request to the gateway; the body is JSON when given.
    func request(
        _ method: String, _ path: String, token: String?, json: String? = nil, headers: [String: String] = [:], timeout: Double = 60
    ) async throws -> HTTPResult {
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = method
        request.timeoutInterval = timeout
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return HTTPResult(status: http.statusCode, headers: http.allHeaderFields as? [String: String] ?? [:], body: data)
    }

    /// Follows an event stream with curl until it ends (or `timeout`); returns what it received.
    func stream(_ path: String, token: String, timeout: Double) async throws -> ToolResult {
        try await run(
            "/usr/bin/curl", ["-sN", "--max-time", String(Int(timeout)), "-H", "Authorization: Bearer \(token)", base + path], timeout: timeout + 30)
    }

    func tearDown() async {
        if let gateway, gateway.isRunning { _ = try? await gateway.stop() }
        await secure.tearDown()
    }
}

/// What the gateway answered.
struct HTTPResult: CustomStringConvertible {
    var status: Int
    var headers: [String: String]
    var body: Data

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    var state: String? { json["state"] as? String }
    var code: String? { json["code"] as? String }
    func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
    var description: String { "HTTP \(status) \(text.prefix(600))" }
}

/// A flag set from another thread.
final class LockedFlag: @unchecked Sendable {
    // @unchecked: guarded by the lock.
    private let lock = NSLock()
    private var flag = false
    func set() { lock.withLock { flag = true } }
    var value: Bool { lock.withLock { flag } }
}
