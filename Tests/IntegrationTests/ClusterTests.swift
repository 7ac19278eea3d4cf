import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

/// A three-node RabbitMQ cluster (deploy/cluster.sh) on loopback: one node is
/// stopped (or killed) in the middle of a run; nothing confirmed is lost, every
/// intent ends, work goes on through the other nodes, and the node rejoins.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct ClusterTests {
    static let script = Paths.repository.appendingPathComponent("deploy/cluster.sh").path
    static let name = "iqtestcluster"
    static let basePort = 5711
    static var environment: [String: String] { ["INTENTQUEUE_CLUSTER_NAME": name] }

    /// `cluster.sh start` may take each node's boot (up to 150 s on a busy machine), the joins, and a minute for
    /// every node to run: the wait is longer than all of them.
    static func cluster(_ arguments: [String], timeout: Double = 420) async throws -> ToolResult {
        try await run(script, arguments, environment: environment, timeout: timeout)
    }

    /// The nodes running, as node 1..3 of the cluster see them (`cluster_status`).
    static func runningNodes(asking node: Int) async throws -> Int {
        let status = try await run(Paths.brokerScript, ["ctl", "\(name)\(node)", "cluster_status", "--formatter", "json"], timeout: 60)
        guard status.exitCode == 0, let data = status.stdout.data(using: .utf8),
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let running = object["running_nodes"] as? [String]
        else { throw BrokerFailure(message: "cluster_status: \(status)") }
        return running.count
    }

    /// `stop-node`: rabbitmqctl stop, connections closed politely; `kill-node`: kill -9.
    @Test(arguments: ["stop-node", "kill-node"]) func aNodeStoppedMidRunLosesNothingAndRejoins(_ fault: String) async throws {
        let started = try await Self.cluster(["start", "\(Self.basePort)"])
        try #require(started.exitCode == 0, "\(started)")
        // Stopped before the next case starts the cluster again, also when this one fails.
        do {
            try await scenario(fault, urls: started.stdout)
        } catch {
            _ = try? await Self.cluster(["stop"])
            throw error
        }
        #expect(try await Self.cluster(["stop"]).exitCode == 0)
    }

    private func scenario(_ fault: String, urls line: String) async throws {
        let nodes = line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        try #require(nodes.count == 3)
        #expect(try await Self.runningNodes(asking: 1) == 3)
        // Each process lists the nodes from a different first one, so they spread over the cluster.
        func urls(startingAt first: Int) -> String { (0..<3).map { nodes[(first + $0) % 3] }.joined(separator: ",") }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("intentqueue-cluster-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = [
            "INTENT_STATUS_DB": directory.appendingPathComponent("status.sqlite").path,
            "HAIRDRESSERS_DB": directory.appendingPathComponent("hairdressers.sqlite").path,
        ]
        var processes: [WorkerProcess] = []
        defer { for process in processes where process.isRunning { kill(process.pid, SIGKILL) } }
        // The recorder and the first worker start on node 1, the one that will stop.
        for (first, arguments) in [(0, ["--recorder-only"]), (0, ["--concurrency", "8"]), (1, ["--concurrency", "8"])] {
            let process = try WorkerProcess(
                arguments: arguments + ["--heartbeat", "5"], environment: files.merging(["INTENT_BROKER_URL": urls(startingAt: first)]) { $1 },
                logPath: directory.appendingPathComponent("process-\(processes.count).log").path)
            processes.append(process)
            try await process.waitForConnections(1)
        }

        // A producer that, like any careful client, resubmits what was not confirmed
        // (same id: effects stay once-only) and reconnects through the other nodes.
        let count = 1_500
        let confirmed = Mutex<Set<String>>([])
        let resubmissions = Atomic<Int>(0)
        let nodeStopped = Latch()
        let producer = try BrokerURL(urls(startingAt: 0))
        let producing = Task.detached {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Thread {
                    continuation.resume(
                        with: Result {
                            var publisher: IntentPublisher?
                            for index in 0..<count {
                                if index == count / 2 {
                                    // The second half waits for the node's stop to return: however long the stop
                                    // takes on a busy machine, it falls mid-run.
                                    nodeStopped.wait(timeout: 120)
                                }
                                let envelope = IntentEnvelope(
                                    id: String(format: "cluster-%05d", index), type: "SendMessage",
                                    parameters: ["recipients": ["Alice Smith"], "content": .string("n\(index)")],
                                    submittedAt: Date().timeIntervalSince1970)
                                var tries = 0
                                while true {
                                    do {
                                        let live = try publisher ?? IntentPublisher(url: producer)
                                        publisher = live
                                        try live.submit(envelope)
                                        confirmed.withLock { _ = $0.insert(envelope.id) }
                                        break
                                    } catch {
                                        publisher?.close()
                                        publisher = nil
                                        tries += 1
                                        resubmissions.add(1, ordering: .relaxed)
                                        guard tries < 60 else { throw error }
                                        Thread.sleep(forTimeInterval: 0.25)
                                    }
                                }
                                // About 150 a second: the run lasts about ten seconds, the node stops in its middle.
                                Thread.sleep(forTimeInterval: 0.005)
                            }
                            publisher?.close()
                        })
                }.start()
            }
        }

        try await eventually(timeout: 60, "a fifth of the intents to be confirmed") { confirmed.withLock { $0.count } >= count / 5 }
        print("cluster (\(fault)): taking node 1 down at \(Date())")
        let stopped = try await Self.cluster([fault, "1"])
        nodeStopped.open()
        #expect(stopped.exitCode == 0, "\(stopped)")
        let confirmedAtStop = confirmed.withLock { $0.count }
        print("cluster (\(fault)): node 1 down with \(confirmedAtStop) of \(count) confirmed")
        var running = 3
        var lastFailure: (any Error)?
        let deadline = Date().addingTimeInterval(60)
        while running != 2, Date() < deadline {
            // A rabbitmqctl that fails on a busy machine is asked again, like one that sees three nodes.
            do {
                running = try await Self.runningNodes(asking: 2)
            } catch {
                lastFailure = error
            }
            if running != 2 { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(running == 2, "node 2 still sees \(running) running nodes (last failure to ask: \(String(describing: lastFailure)))")
        // The work, ledger and retry queues are quorum queues with a member on every node
        // (node 1 stays a member while it is down).
        let listed = try await run(
            Paths.brokerScript, ["ctl", "\(Self.name)2", "list_queues", "name", "type", "members", "--formatter", "json"], timeout: 60)
        let queues = (try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]) ?? []
        for name in ["intents.work", "intents.ledger", "intents.dead", "intents.retry.1s"] {
            let queue = queues.first { $0["name"] as? String == name }
            #expect(queue?["type"] as? String == "quorum", "\(name): \(String(describing: queue))")
            #expect((queue?["members"] as? [String])?.count == 3, "\(name) is not on every node: \(String(describing: queue))")
        }
        try await producing.value
        #expect(confirmed.withLock { $0.count } == count)

        let ids = confirmed.withLock { $0 }
        let storePath = files["INTENT_STATUS_DB"]!
        do {
            try await eventually(timeout: 120, "every confirmed intent to end") {
                guard let store = try? StatusReader(path: storePath) else { return false }
                return try store.counts()[.success] ?? 0 >= count
            }
        } catch {
            // What a failure needs to be understood: each process's last lines, the store, the queues.
            for process in processes {
                let lines = process.log.split(separator: "\n")
                let notable = lines.filter {
                    $0.contains("refused") || $0.contains("connect") || $0.contains("interrupted") || $0.contains("unavailable")
                }
                print(
                    "── \(process.logPath): \(lines.count) lines, \(lines.filter { $0.contains("refused") }.count) refusals\n"
                        + notable.prefix(25).joined(separator: "\n") + "\n…\n" + lines.suffix(5).joined(separator: "\n"))
            }
            print("store: \(String(describing: try? StatusReader(path: storePath).counts()))")
            let queues = try? await run(
                Paths.brokerScript,
                ["ctl", "\(Self.name)2", "list_queues", "name", "messages_ready", "messages_unacknowledged", "consumers", "members"], timeout: 60)
            print("queues: \(queues?.stdout ?? "?")")
            throw error
        }
        let store = try StatusReader(path: storePath)
        #expect(try store.counts() == [.success: count])
        for id in ids.sorted().prefix(5) + ids.sorted().suffix(5) {
            #expect(try store.status(id: id)?.state == .success)
        }
        let app = try Database(path: files["HAIRDRESSERS_DB"]!, mode: .readOnly)
        let rows = try app.queryFirst("SELECT count(*), count(DISTINCT intent_id) FROM message") { ($0.int(0), $0.int(1)) }
        #expect(rows?.0 == count && rows?.1 == count, "one Message row per intent, none twice: \(String(describing: rows))")
        // The recorder and the worker that were on node 1 moved to another node and went on.
        let moved = processes.filter { $0.log.contains("reconnecting") || $0.log.contains("interrupted") }
        #expect(moved.count >= 2, "the processes on the stopped node did not move: \(moved.count)")
        for process in moved {
            let reconnected = process.log.components(separatedBy: "\n").last { $0.contains(" connected ") } ?? ""
            #expect(!reconnected.contains(":\(Self.basePort)/"), "still on the stopped node: \(reconnected)")
        }
        let refusals = processes.map { $0.log.components(separatedBy: "refused a status event").count - 1 }.reduce(0, +)
        print(
            "cluster (\(fault)) at \(Date()): node 1 down after \(confirmedAtStop) of \(count) confirmed; \(resubmissions.load(ordering: .relaxed)) resubmissions; \(moved.count) processes failed over; \(refusals) refused status events (each answered by a fresh connection)"
        )

        // A status client given the stopped node first reaches the recorder through another.
        let remote = try await run(
            Paths.tool("intent-status"), [ids.sorted()[0], "--remote", "--json"],
            environment: ["INTENT_BROKER_URL": urls(startingAt: 0)], timeout: 30)
        #expect(remote.exitCode == 0 && remote.stdout.contains("\"state\":\"success\""), "\(remote)")

        // The node comes back and rejoins.
        let restarted = try await Self.cluster(["start-node", "1"])
        #expect(restarted.exitCode == 0, "\(restarted)")
        #expect(try await Self.runningNodes(asking: 1) == 3)
        for process in processes { #expect(try await process.stop() == 0) }
    }
}
