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
        let left = try await Self.objects(in: sandbox)
        #expect(left.queues.isEmpty, "left behind: \(left.queues)")
        #expect(left.exchanges.isEmpty, "left behind: \(left.exchanges)")
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
        let left = try await Self.objects(in: sandbox)
        #expect(left.queues.isEmpty, "left behind: \(left.queues)")
        #expect(left.exchanges.isEmpty, "left behind: \(left.exchanges)")
    }
}
