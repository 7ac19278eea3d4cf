import Foundation
import IntentAMQP
import Testing

/// What benchmarks and tests make in a broker is taken away again: every quorum queue left behind is a Raft member
/// the broker keeps ticking (1,557 of them, left by earlier intent-bench runs, cost an idle node 7 % of a core).
@Suite(.timeLimit(.minutes(10)))
struct TopologyCleanupTests {
    /// The queues and exchanges in a virtual host other than the broker's own (`amq.*` and the default exchange).
    static func objects(in sandbox: Sandbox) async throws -> (queues: [String], exchanges: [String]) {
        let vhost = try BrokerURL(sandbox.brokerURL).virtualHost
        func names(_ listing: String) async throws -> [String] {
            let output = try await TestBroker.shared.control([listing, "-p", vhost, "name", "--silent", "--no-table-headers"])
            return output.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty && !$0.hasPrefix("amq.") }
        }
        return (try await names("list_queues"), try await names("list_exchanges"))
    }

    /// A topology declared in full (as a worker and the recorder declare it) is gone after `deleteAll`: each of its
    /// queues, the high-priority one among them, and each of its exchanges.
    @Test func deleteAllLeavesNothingOfTheTopologyBehind() async throws {
        let sandbox = try await Sandbox("topology-delete")
        defer { Task { await sandbox.tearDown() } }
        let url = try BrokerURL(sandbox.brokerURL)
        let topology = Topology()
        let connection = try AMQPConnection(url: url, connectTimeout: 10, rpcTimeout: 30)
        try topology.declareWork(on: connection, types: ["SendMessage"])
        try topology.declareLedger(on: connection)
        try topology.declareRetries(on: connection)
        try topology.declareCancellations(on: connection)
        try topology.declareStatusRequests(on: connection)
        let declared = try await Self.objects(in: sandbox)
        #expect(declared.queues.contains(topology.highPriorityQueue), "\(declared.queues)")
        #expect(declared.queues.count >= 6 + topology.retryDelays.count, "\(declared.queues)")
        connection.close()

        topology.deleteAll(url: url)
        try await Self.expectNothingLeft(in: sandbox)
    }

    /// intent-bench deletes every phase's queues and exchanges once it is done, the paced phases' included.
    @Test func aBenchmarkRunLeavesNothingInTheBroker() async throws {
        let sandbox = try await Sandbox("bench-cleanup")
        defer { Task { await sandbox.tearDown() } }
        let result = try await run(
            Paths.tool("intent-bench"), ["--intents", "40", "--latency-intents", "20", "--rate", "200", "--concurrency", "4"],
            environment: ["INTENT_BROKER_URL": sandbox.brokerURL, "TMPDIR": sandbox.directory.path], timeout: 300)
        #expect(result.exitCode == 0, "\(result)")
        #expect(result.stderr.contains("deleted the run's"), "\(result.stderr)")
        try await Self.expectNothingLeft(in: sandbox)
    }

    /// A run stopped by SIGINT in its fixed-load phase stops its in-process services, deletes every queue and exchange
    /// it made, removes its files and exits 130, as a shell reports a Ctrl-C.
    @Test func anInterruptedBenchmarkRunLeavesNothingInTheBroker() async throws {
        let sandbox = try await Sandbox("bench-interrupt")
        defer { Task { await sandbox.tearDown() } }
        let bench = try WorkerProcess(
            arguments: ["--skip-ceiling", "--intents", "10", "--latency-intents", "100000", "--rate", "50", "--concurrency", "4"],
            environment: ["INTENT_BROKER_URL": sandbox.brokerURL, "TMPDIR": sandbox.directory.path],
            executable: Paths.tool("intent-bench"), logPath: sandbox.directory.appendingPathComponent("bench.log").path)
        try await eventually(timeout: 120, "the fixed-load phase's queues (log: \(bench.logPath))") {
            if !bench.isRunning { throw BrokerFailure(message: "intent-bench ended early:\n\(bench.log)") }
            return try await Self.objects(in: sandbox).queues.contains { $0.hasSuffix(".e2e.ledger") } && Self.runFolders(in: sandbox).count == 1
        }
        kill(bench.pid, SIGINT)
        let exitCode = try await bench.waitForExit()
        #expect(exitCode == 130, "\(bench.log)")
        #expect(bench.log.contains("interrupted by SIGINT"), "\(bench.log)")
        try await Self.expectNothingLeft(in: sandbox)
        #expect(Self.runFolders(in: sandbox).isEmpty, "\(bench.log)")
    }

    /// SIGTERM while the C ceiling program runs ends that program too (here a stand-in that notes the SIGTERM it gets),
    /// then deletes both ceilings' queues and exchanges and exits 143.
    @Test func aBenchmarkRunTerminatedDuringTheCCeilingEndsTheProgramAndLeavesNothing() async throws {
        let sandbox = try await Sandbox("bench-terminate")
        defer { Task { await sandbox.tearDown() } }
        let marks = sandbox.directory.appendingPathComponent("marks").path
        try FileManager.default.createDirectory(atPath: marks, withIntermediateDirectories: true)
        let program = sandbox.directory.appendingPathComponent("stand-in-ceiling").path
        let script = """
            #!/bin/sh
            trap 'echo terminated > "$MARKS/ended"; exit 0' TERM
            echo $$ > "$MARKS/started"
            while :; do sleep 0.05; done

            """
        #expect(FileManager.default.createFile(atPath: program, contents: Data(script.utf8), attributes: [.posixPermissions: 0o755]))
        let bench = try WorkerProcess(
            arguments: ["--intents", "40", "--latency-intents", "0", "--concurrency", "4", "--c-ceiling", program],
            environment: ["INTENT_BROKER_URL": sandbox.brokerURL, "TMPDIR": sandbox.directory.path, "MARKS": marks],
            executable: Paths.tool("intent-bench"), logPath: sandbox.directory.appendingPathComponent("bench.log").path)
        try await eventually(timeout: 120, "the stand-in C ceiling to start (log: \(bench.logPath))") {
            if !bench.isRunning { throw BrokerFailure(message: "intent-bench ended early:\n\(bench.log)") }
            return FileManager.default.fileExists(atPath: marks + "/started")
        }
        // Should intent-bench leave it running (it has not noted an end), the test ends it.
        let started = (try? String(contentsOfFile: marks + "/started", encoding: .utf8)) ?? ""
        let standIn = Int32(started.trimmingCharacters(in: .whitespacesAndNewlines))
        defer {
            if let standIn, !FileManager.default.fileExists(atPath: marks + "/ended") { kill(standIn, SIGKILL) }
        }
        let exitCode = try await bench.stop(timeout: 60)
        #expect(exitCode == 143, "\(bench.log)")
        #expect(bench.log.contains("interrupted by SIGTERM"), "\(bench.log)")
        let ended = (try? String(contentsOfFile: marks + "/ended", encoding: .utf8)) ?? ""
        #expect(ended.contains("terminated"), "the C ceiling program was not ended: \(bench.log)")
        try await Self.expectNothingLeft(in: sandbox)
    }

    /// Expects the sandbox's virtual host to hold no queue and no exchange (other than the broker's own), failing at the
    /// caller's line.
    static func expectNothingLeft(in sandbox: Sandbox, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let left = try await objects(in: sandbox)
        #expect(left.queues.isEmpty, "left behind: \(left.queues)", sourceLocation: sourceLocation)
        #expect(left.exchanges.isEmpty, "left behind: \(left.exchanges)", sourceLocation: sourceLocation)
    }

    /// The folders intent-bench made for its runs under the sandbox's temporary folder.
    static func runFolders(in sandbox: Sandbox) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path)) ?? []).filter { $0.hasPrefix("intentbench.") }
    }
}
