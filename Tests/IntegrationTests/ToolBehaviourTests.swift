import Foundation
import Testing

/// What the tools do with bad requests, unknown things and an unreachable broker.
@Suite(.timeLimit(.minutes(10)))
struct ToolBehaviourTests {
    @Test func anUnservedTypeIsRefusedAtOnce() async throws {
        let sandbox = try await Sandbox("unserved")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let result = try await sandbox.submit(["NoSuchIntent", "x=1"])
        #expect(result.exitCode == 2, "\(result)")
        #expect(result.stderr.contains("no worker serves intent type 'NoSuchIntent'"))
        #expect(result.stdout.isEmpty)
    }

    /// A request the recorder refuses as not valid is a usage error (64), not a recorder that cannot answer (69).
    @Test func aRequestTheRecorderRefusesIsAUsageError() async throws {
        let sandbox = try await Sandbox("refused-request")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--with-recorder"])
        let result = try await sandbox.status(["", "--remote"])
        #expect(result.exitCode == 64, "\(result)")
        #expect(result.stderr.contains("refused the request"), "\(result)")
    }

    /// A tool whose output cannot be written (a full disk, a closed pipe) still ends as it would have, never by a
    /// trap in the middle of its work.
    @Test(arguments: ["intent-status", "intent-submit", "intent-worker"])
    func aToolWhoseOutputCannotBeWrittenDoesNotCrash(tool: String) async throws {
        let result = try await run("/bin/sh", ["-c", "exec '\(Paths.tool(tool))' --help >/dev/full"], timeout: 30)
        #expect(result.exitCode == 0, "\(result)")
        #expect(!result.stderr.contains("Fatal error"), "\(result)")
    }

    /// A submission the broker confirmed, whose status then cannot be followed (no store file here, no recorder to
    /// ask), is said to have been submitted: the failure is in following it, not in submitting it.
    @Test func aSubmissionWhoseStatusCannotBeFollowedIsSaidToBeSubmitted() async throws {
        let sandbox = try await Sandbox("unfollowed")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--concurrency", "1"], expectedConnections: 1)
        let result = try await sandbox.submit([
            "SendMessage", "recipients=Alice Smith", "content=hi", "--id", "unfollowed-1", "--wait", "--json", "--timeout", "5",
        ])
        #expect(result.exitCode != 0, "\(result)")
        #expect(result.stderr.contains("unfollowed-1 was submitted"), "\(result)")
    }

    @Test func anUnknownIDExitsFour() async throws {
        let sandbox = try await Sandbox("unknown")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let id = UUID().uuidString.lowercased()
        let result = try await sandbox.status([id])
        #expect(result.exitCode == 4, "\(result)")
        let json = try await sandbox.status([id, "--json"])
        #expect(json.exitCode == 4)
        #expect(json.stdout.contains("\"state\":\"unknown\""))
    }

    @Test(arguments: [
        ("intent-submit", [String]()),
        ("intent-submit", ["SendMessage", "no-equals-sign"]),
        ("intent-submit", ["SendMessage", "--timeout", "5"]),
        ("intent-submit", ["SendMessage", "--parameters", "[1,2]"]),
        ("intent-submit", ["Send.Message"]),
        ("intent-submit", ["SendMessage", "--bogus"]),
        ("intent-submit", ["SendMessage", "--id", "."]),
        ("intent-submit", ["SendMessage", "--id", "a\u{1}b"]),
        ("intent-status", ["schedule", "s", "--every", "400d", "SendMessage"]),
        ("intent-status", ["schedule", "s", "--every", "1h", "--starting", "2026-02-30T10:00:00Z", "SendMessage"]),
        ("intent-status", ["watch", "--type", ""]),
        ("intent-status", ["watch", "--type", "a.b"]),
        ("intent-status", [String]()),
        ("intent-status", ["list", "--unfinished"]),
        ("intent-status", ["cancel", "x", "--unfinished"]),
        ("intent-status", ["list", "--limit", "0"]),
        ("intent-status", ["list", "--state", "done"]),
        ("intent-status", ["some-id", "--state", "queued"]),
        ("intent-worker", ["--concurrency", "0"]),
        ("intent-worker", ["--with-recorder", "--recorder-only"]),
        ("intent-worker", ["extra"]),
        ("intent-worker", ["--owner-rate", "SendMessage=10"]),
        ("intent-worker", ["--owner-rate", "SendMessage=0/1m"]),
        ("intent-worker", ["--owner-rate", "SendMessage=10/soon"]),
        ("intent-worker", ["--scheduling", "fast"]),
        ("intent-worker", ["--ledger-retain", "30m"]),
        ("intent-worker", ["--ledger-retain", "soon"]),
        ("intent-worker", ["--recorder-only", "--ledger-retain", "30d"]),
        ("intent-worker", ["--with-recorder", "--retain", "60d", "--ledger-retain", "30d"]),
        ("intent-worker", ["--with-recorder", "--retain", "7d", "--ledger-retain", "7d"]),
        ("intent-worker", ["--with-recorder", "--query-share", "0"]),
        ("intent-worker", ["--recorder-only", "--query-share", "2"]),
        ("intent-worker", ["--recorder-only", "--query-share", "lots"]),
        ("intent-worker", ["--query-share", "0.5"]),
        ("intent-worker", ["--with-recorder", "--retain", "forever", "--ledger-retain", "30d"]),
        ("intent-bench", ["--scheduling", "idle"]),
        ("intent-bench", ["--c-effects"]),
        ("intent-bench", ["--c-ceiling", "/bin/true", "--c-effects", "--latency-intents", "0"]),
    ])
    func badArgumentsAreUsageErrors(tool: String, arguments: [String]) async throws {
        let result = try await run(Paths.tool(tool), arguments, environment: ["INTENT_BROKER_URL": "amqp://127.0.0.1:1/"])
        #expect(result.exitCode == 64, "\(result)")
        #expect(result.stderr.hasPrefix("Error: "))
        #expect(result.stderr.contains("Usage: "))
        #expect(result.stderr.contains("--help"))
    }

    /// Every thread of a serving worker, the ones its services started after the policy was set among them, is under
    /// the policy `--scheduling` names: SCHED_BATCH (3 in Linux's `<sched.h>`) by default, SCHED_OTHER (0) for normal.
    /// One sandbox, one worker after the other: each virtual host is two rabbitmqctl calls the whole suite queues for.
    @Test func aWorkersThreadsRunUnderItsSchedulingPolicy() async throws {
        let sandbox = try await Sandbox("scheduling")
        defer { Task { await sandbox.tearDown() } }
        for (arguments, policy) in [([String](), 3), (["--scheduling", "normal"], 0)] {
            let worker = try await sandbox.startWorker(["--with-recorder"] + arguments)
            // Connected is not yet ready: wait for the line that says every service is up (their threads are started).
            try await eventually(timeout: 30, "the worker to be ready (log: \(worker.logPath))") { worker.log.contains("ready") }
            var policies: [String: Int] = [:]
            for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(worker.pid)/task") {
                let base = "/proc/\(worker.pid)/task/\(task)"
                guard let stat = try? String(contentsOfFile: base + "/stat", encoding: .utf8),
                    let name = try? String(contentsOfFile: base + "/comm", encoding: .utf8),
                    let end = stat.lastIndex(of: ")")
                else { continue }  // The thread ended since it was listed.
                // After the name in parentheses come fields 3, 4, …; the policy is field 41.
                let fields = stat[stat.index(after: end)...].split(separator: " ")
                policies["\(task) \(name.trimmingCharacters(in: .whitespacesAndNewlines))"] = Int(fields[41 - 3])
            }
            // The main thread, the I/O threads, the recorder, a task or queue thread.
            #expect(policies.count >= 4, "\(arguments): \(policies)")
            #expect(policies.values.allSatisfy { $0 == policy }, "\(arguments): \(policies)")
            #expect(try await worker.stop() == 0)
        }
    }

    /// A tool whose output is a pipe no one reads any more ends as it would have (here 0), not killed by SIGPIPE:
    /// an `intent-submit` killed so after the broker confirmed its submission looks failed, and a script submits again.
    @Test(arguments: ["intent-submit", "intent-status", "intent-worker", "intent-gateway", "intent-bench"])
    func aClosedOutputPipeDoesNotKillATool(tool: String) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Paths.tool(tool))
        process.arguments = ["--help"]
        let output = Pipe()
        try output.fileHandleForReading.close()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let exited = AsyncStream<Void> { continuation in
            process.terminationHandler = { _ in continuation.finish() }
        }
        try process.run()
        try output.fileHandleForWriting.close()
        for await _ in exited {}
        #expect(process.terminationReason == .exit, "killed by signal \(process.terminationStatus)")
        #expect(process.terminationStatus == 0)
    }

    @Test(arguments: ["intent-submit", "intent-status", "intent-worker"])
    func helpExitsZero(tool: String) async throws {
        let result = try await run(Paths.tool(tool), ["--help"])
        #expect(result.exitCode == 0)
        #expect(result.stdout.contains("Usage:"))
    }

    @Test func onlyAToolThatConnectsLoadsTheBrokerLibrary() async throws {
        // rabbitmq-c, and OpenSSL under it, is loaded by the first connection: a lookup in the store file never
        // pays for it. The dynamic loader lists what it loads on stderr with LD_DEBUG=files.
        let sandbox = try await Sandbox("lazy-library")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let traced = sandbox.environment.merging(["LD_DEBUG": "files"]) { _, new in new }
        let id = "lazy-\(UUID().uuidString.prefix(8))"
        let submit = try await run(
            Paths.tool("intent-submit"), ["SendMessage", "recipients=Alice", "content=lazy", "--id", id], environment: traced)
        #expect(submit.exitCode == 0, "\(submit)")
        #expect(submit.stderr.contains("file=librabbitmq.so.4"), "intent-submit connects, so it loads the library")
        try await eventually(timeout: 60, "the store records \(id)'s success") {
            try sandbox.statusStore().status(id: id)?.state == .success
        }
        let lookup = try await run(Paths.tool("intent-status"), [id], environment: traced)
        #expect(lookup.exitCode == 0, "\(lookup)")
        #expect(lookup.stdout.contains("success"), "\(lookup)")
        #expect(lookup.stderr.contains("file=libsqlite3.so.0"), "the loader's trace is on: \(lookup.stderr.prefix(300))")
        #expect(!lookup.stderr.contains("librabbitmq"), "a lookup in the store loaded the broker library")
        #expect(!lookup.stderr.contains("libssl"), "a lookup in the store loaded OpenSSL")
    }

    /// The broker library as the dynamic loader finds it, when this machine can hide it from one command
    /// (root, with `unshare` for a private mount namespace).
    static let hideableLibrary: String? = {
        guard getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare") else { return nil }
        return ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"]
            .map { $0 + "/librabbitmq.so.4" }.first { FileManager.default.fileExists(atPath: $0) }
    }()

    @Test(.enabled(if: hideableLibrary != nil, "needs root and unshare to hide librabbitmq from one command"))
    func aMissingBrokerLibraryIsAClearErrorAndTheWorkerStopsAtOnce() async throws {
        // The library replaced by an empty file, for these commands only (a private mount namespace).
        let library = try #require(Self.hideableLibrary)
        let environment = ["INTENT_BROKER_URL": "amqp://guest:guest@127.0.0.1:1/%2f"]
        func hidden(_ tool: String, _ arguments: [String]) async throws -> ToolResult {
            let command = "mount --bind /dev/null \(library) && exec \(Paths.tool(tool)) \(arguments.joined(separator: " "))"
            return try await run("/usr/bin/unshare", ["-m", "sh", "-c", command], environment: environment, timeout: 30)
        }
        let submit = try await hidden("intent-submit", ["SendMessage", "recipients=Alice", "content=hi"])
        #expect(submit.exitCode == 69, "\(submit)")
        #expect(submit.stderr.contains("could not load rabbitmq-c (librabbitmq.so.4, Debian package librabbitmq4)"), "\(submit)")
        #expect(!submit.stderr.contains("broker unreachable"), "the broker is not what failed: \(submit)")
        // A worker does not retry what no reconnect mends: it says so and exits.
        let worker = try await hidden("intent-worker", ["--with-recorder"])
        #expect(worker.exitCode == 69, "\(worker)")
        #expect(worker.stderr.contains("could not load rabbitmq-c"), "\(worker)")
    }

    @Test func toolsExit69WhenTheBrokerIsUnreachable() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iq-down-\(UUID().uuidString)")
        let environment = [
            "INTENT_BROKER_URL": "amqp://guest:guest@127.0.0.1:1/%2f",  // nothing listens on port 1
            "INTENT_STATUS_DB": directory.appendingPathComponent("status.sqlite").path,
        ]
        let submit = try await run(
            Paths.tool("intent-submit"), ["SendMessage", "recipients=Alice", "content=hi"], environment: environment, timeout: 15)
        #expect(submit.exitCode == 69, "\(submit)")
        #expect(submit.stderr.split(separator: "\n").count == 1, "one line: \(submit.stderr)")
        let status = try await run(Paths.tool("intent-status"), ["some-id"], environment: environment, timeout: 15)
        #expect(status.exitCode == 69, "\(status)")
        #expect(status.stderr.split(separator: "\n").count == 1)
    }

    @Test func aBrokerThatNeverAnswersIsGivenUpOnWithExit69() async throws {
        // A listening socket that never speaks AMQP: connect succeeds, the handshake hangs.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(listener, raw, length) == 0 && listen(listener, 8) == 0 && getsockname(listener, raw, &length) == 0
            }
        }
        try #require(bound)
        let port = UInt16(bigEndian: address.sin_port)
        let result = try await run(
            Paths.tool("intent-submit"), ["SendMessage", "recipients=Alice", "content=hi"],
            environment: ["INTENT_BROKER_URL": "amqp://guest:guest@127.0.0.1:\(port)/%2f"], timeout: 20)
        #expect(result.exitCode == 69, "\(result)")
    }
}
