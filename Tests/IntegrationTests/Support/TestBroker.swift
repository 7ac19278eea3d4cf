import Foundation

/// A RabbitMQ node of the test run's own (`iqtest` on 127.0.0.1:5690), started
/// once through deploy/broker.sh; each test gets a virtual host of its own so
/// tests running in parallel never see each other's queues.
actor TestBroker {
    static let shared = TestBroker(node: "iqtest", port: 5690)

    let node: String
    let port: Int
    private var startup: Task<Void, any Error>?
    /// Whether this test run has started the node already (a restart keeps its data).
    private var startedOnce = false

    init(node: String, port: Int) {
        self.node = node
        self.port = port
    }

    /// Starts the node unless it already answers.
    func ensureRunning() async throws {
        if let startup { return try await startup.value }
        let fresh = !startedOnce
        startedOnce = true
        let task = Task { [node, port] in
            if Self.answers(port: port) { return }
            if fresh {
                // The node is the tests' own: the first start of a run begins without the
                // virtual hosts (and their quorum queues) of earlier runs, which would
                // otherwise pile up and slow every boot.
                let base = ProcessInfo.processInfo.environment["INTENTQUEUE_BROKER_DIR"] ?? "/var/tmp/intentqueue-broker"
                try? FileManager.default.removeItem(atPath: "\(base)/\(node)")
            }
            // Longer than the script's own wait for the node (150 s), so that its reason, not a timeout, is what fails.
            let result = try await run(Paths.brokerScript, ["start", node, "\(port)"], timeout: 200)
            guard result.exitCode == 0 else { throw BrokerFailure(message: "could not start \(node): \(result)") }
        }
        startup = task
        try await task.value
    }

    /// A fresh virtual host that the guest user may use; returns its URL.
    func makeVirtualHost(_ label: String) async throws -> String {
        try await ensureRunning()
        let name = "\(label)-\(UUID().uuidString.prefix(8).lowercased())"
        for arguments in [["add_vhost", name], ["set_permissions", "-p", name, "guest", ".*", ".*", ".*"]] {
            try await control(arguments)
        }
        return "amqp://guest:guest@127.0.0.1:\(port)/\(name)"
    }

    /// rabbitmqctl against the node, at most three at a time: each is an Erlang VM
    /// of its own, and thirty starting at once on two cores time out, or pick the
    /// same CLI node name and fail with `nodistribution` (which is retried). Returns what it printed.
    @discardableResult
    func control(_ arguments: [String]) async throws -> String {
        // First come, first served: a slot given up goes straight to the longest waiter. (Given back to the
        // count instead, a caller arriving meanwhile took it first, and a test waiting behind a busy suite's
        // hundreds of calls could wait past its time limit.)
        if running >= 3 {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            running += 1
        }
        defer {
            if waiting.isEmpty {
                running -= 1
            } else {
                waiting.removeFirst().resume()
            }
        }
        var attempt = 0
        while true {
            attempt += 1
            let result = try await run(Paths.brokerScript, ["ctl", node] + arguments, timeout: 60)
            if result.exitCode == 0 { return result.stdout }
            let clash = result.stderr.contains("nodistribution") || result.stderr.contains("Distribution failed")
            guard clash, attempt < 4 else {
                throw BrokerFailure(message: "rabbitmqctl \(arguments.joined(separator: " ")): \(result)")
            }
            try await Task.sleep(for: .milliseconds(200 * attempt))
        }
    }

    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    /// Stops the node (rabbitmqctl stop against it).
    func stop() async throws {
        _ = try await run(Paths.brokerScript, ["stop", node], timeout: 60)
        startup = nil
    }

    /// Starts it again on the same data directory: durable queues and persistent messages survive.
    func restart() async throws {
        startup = nil
        try await ensureRunning()
    }

    nonisolated static func answers(port: Int) -> Bool {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

struct BrokerFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
