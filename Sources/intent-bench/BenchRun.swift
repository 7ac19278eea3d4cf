import Foundation
import IntentAMQP
import Synchronization

/// One benchmark run: its unique name, the broker objects of each phase and
/// the scratch folder for the SQLite files.
struct BenchRun {
    /// `intentbench.<time>-<random>`: the prefix of every queue and exchange of the run.
    let name: String
    let directory: String
    /// The phases whose topology was asked for, in order: the broker objects the run may have made.
    private let phases = Phases()

    private final class Phases: Sendable {
        let names = Mutex<[String]>([])
    }

    init(baseDirectory: String) throws {
        let stamp = Int(Date().timeIntervalSince1970)
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        name = "intentbench.\(stamp)-\(random)"
        directory = (baseDirectory as NSString).appendingPathComponent(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    /// The topology of one phase: IntentQueue's objects under names no other run or deployment uses.
    /// Throws when `Topology` has a name this code does not rename, rather than
    /// touch a deployment's objects in a shared virtual host.
    func topology(_ phase: String) throws(BenchError) -> Topology {
        phases.names.withLock { names in
            if !names.contains(phase) { names.append(phase) }
        }
        var topology = Topology()
        let prefix = "\(name).\(phase)"
        topology.intentsExchange = "\(prefix).intents"
        topology.statusExchange = "\(prefix).status"
        topology.deadLetterExchange = "\(prefix).dead"
        topology.deadLetterQueue = "\(prefix).dead"
        topology.workQueue = "\(prefix).work"
        topology.highPriorityQueue = "\(prefix).work.high"
        topology.ledgerQueue = "\(prefix).ledger"
        topology.retryExchange = "\(prefix).retry"
        topology.cancelExchange = "\(prefix).cancel"
        topology.cancelStream = "\(prefix).cancellations"
        topology.statusRequestQueue = "\(prefix).status.requests"
        topology.statusRequestExchange = "\(prefix).status.requests"
        for child in Mirror(reflecting: topology).children {
            if let value = child.value as? String, !value.hasPrefix(prefix) {
                throw .failed("Topology.\(child.label ?? "?") ('\(value)') is not renamed per run by intent-bench; refusing to touch a shared name")
            }
        }
        return topology
    }

    /// Deletes the queues and exchanges of every phase whose topology was asked for (whether the phase ran to its end
    /// or not): each quorum queue left behind would cost the broker memory and CPU from then on. Returns how many.
    func deleteTopologies(url: BrokerURL) -> Int {
        var deleted = 0
        for phase in phases.names.withLock({ $0 }) {
            if let topology = try? topology(phase) { deleted += topology.deleteAll(url: url) }
        }
        return deleted
    }

    func path(_ file: String) -> String {
        (directory as NSString).appendingPathComponent(file)
    }

    /// Removes the scratch folder. A SQLite connection released a moment late
    /// (by a finishing task) may still delete its WAL file meanwhile, so retry briefly.
    func removeDirectory() {
        for _ in 0..<20 {
            try? FileManager.default.removeItem(atPath: directory)
            if !FileManager.default.fileExists(atPath: directory) { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// `total` split into `parts` near-equal shares (none empty when total ≥ parts).
    static func shares(of total: Int, among parts: Int) -> [Int] {
        (0..<parts).map { total / parts + ($0 < total % parts ? 1 : 0) }.filter { $0 > 0 }
    }
}
