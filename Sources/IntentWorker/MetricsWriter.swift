import Foundation
import IntentAMQP
import IntentKit

/// Writes the metrics, in Prometheus' text format, to a file that
/// node_exporter's textfile collector reads: every `interval` seconds and
/// once more on stop, each time to a temporary file renamed over the last
/// one, so a reader never sees half a file. When given the broker, it also
/// reports the depth and consumers of IntentQueue's queues, read with a passive
/// `queue.declare` on a connection of its own.
public final class MetricsWriter: Service {
    /// Where the metrics are written, how often, and which broker's queues are reported.
    public struct Configuration: Sendable {
        /// The file written, in node_exporter's textfile directory; its name without `.prom` labels every sample as `process`.
        public var path: String
        /// Seconds between writes; at least 0.1.
        public var interval: Double
        /// The broker whose queue depths and consumers are reported; nil reports none.
        public var brokerURL: BrokerURL?
        /// Names the queues reported: the work, ledger and dead-letter queues.
        public var topology: Topology

        /// Writes to `path` every `interval` seconds (at least 0.1), with the queues' depths when `brokerURL` is given.
        public init(path: String, interval: Double = 5, brokerURL: BrokerURL? = nil, topology: Topology = Topology()) {
            self.path = path
            self.interval = max(0.1, interval)
            self.brokerURL = brokerURL
            self.topology = topology
        }
    }

    private let configuration: Configuration
    private let metrics: Metrics
    private let logger: Logger
    private let stopping = StopRequest()

    /// A writer of `metrics` with these settings; nothing is written until `prepare()` or `run()`.
    public init(configuration: Configuration, metrics: Metrics, logger: Logger) {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger.with(["component": "metrics"])
    }

    /// Writes the file every `interval` seconds on a thread of its own until `stop()`, then once more;
    /// throws when the file cannot be written at start.
    public func run() async throws {
        try await runOnThread(named: "iq-metrics") { [self] in
            do {
                try runThread()
            } catch {
                logger.error("metrics stopped: \(error)", metadata: ["metrics.path": configuration.path])
                throw error
            }
        }
    }

    /// Asks the writer to write the file a last time and return from `run()`; returns at once.
    public func stop() {
        stopping.request()
    }

    /// Creates the folder and writes the file once: a path that cannot be
    /// written is found at start, not an interval later.
    public func prepare() throws {
        let directory = URL(fileURLWithPath: configuration.path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try write(metrics.render(constantLabels: ["process": processLabel]))
    }

    private func runThread() throws {
        try prepare()
        logger.info("writing metrics every \(configuration.interval) s", metadata: ["metrics.path": configuration.path])
        var connection: AMQPConnection?
        defer { connection?.close() }
        while true {
            let last = stopping.isRequested
            if let url = configuration.brokerURL { probeQueues(url: url, connection: &connection) }
            do {
                try write(metrics.render(constantLabels: ["process": processLabel]))
            } catch {
                logger.warning("cannot write the metrics file: \(error)", metadata: ["metrics.path": configuration.path])
            }
            if last { return }
            stopping.pause(configuration.interval)
        }
    }

    /// The file's name without `.prom`: every sample carries it as `process`, so
    /// several processes can write their files into one collector directory.
    private var processLabel: String {
        let name = URL(fileURLWithPath: configuration.path).lastPathComponent
        return name.hasSuffix(".prom") ? String(name.dropLast(5)) : name
    }

    private func probeQueues(url: BrokerURL, connection: inout AMQPConnection?) {
        let topology = configuration.topology
        var samples: [(String, AMQPConnection.QueueInfo)] = []
        for queue in [topology.workQueue, topology.highPriorityQueue, topology.ledgerQueue, topology.deadLetterQueue] {
            do {
                let live = try connection ?? AMQPConnection(url: url, heartbeat: 0, connectTimeout: 2, rpcTimeout: 3)
                connection = live
                samples.append((queue, try live.inspectQueue(queue)))
            } catch let error as AMQPError where error.replyCode == 404 {
                // Not declared yet (no worker has run): nothing to report. The broker
                // closed the channel; the connection stays.
                do {
                    try connection?.reopenChannel()
                } catch {
                    connection?.abandon()
                    connection = nil
                }
            } catch {
                connection?.abandon()
                connection = nil
                metrics.set("intentqueue_broker_up", to: 0)
                // No depth is better than a stale one.
                metrics.clear("intentqueue_queue_messages")
                metrics.clear("intentqueue_queue_consumers")
                return
            }
        }
        metrics.set("intentqueue_broker_up", to: 1)
        metrics.clear("intentqueue_queue_messages")
        metrics.clear("intentqueue_queue_consumers")
        for (queue, info) in samples {
            metrics.set("intentqueue_queue_messages", ["queue": queue], to: Double(info.messages))
            metrics.set("intentqueue_queue_consumers", ["queue": queue], to: Double(info.consumers))
        }
    }

    private func write(_ text: String) throws {
        let temporary = configuration.path + ".tmp.\(ProcessInfo.processInfo.processIdentifier)"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, configuration.path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "rename to \(configuration.path): \(reason)"])
        }
    }
}
