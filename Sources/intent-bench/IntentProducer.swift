import Foundation
import IntentAMQP

/// One end-to-end producer: its own `IntentPublisher` on its own thread,
/// submitting SendMessage intents with a confirm window, at full speed or paced.
struct IntentProducer: Sendable {
    /// Open-loop pacing: the intent at position `index` of this producer is due
    /// at start + (index × stride + offset) / rate, whatever became of earlier ones.
    struct Pacing: Sendable {
        var rate: Double
        var offset: Int
        var stride: Int
    }

    struct Report: Sendable {
        /// When the last publish was confirmed.
        var finished: Date
        /// How late the most delayed publish was against its schedule (paced runs).
        var maxLagSeconds: Double
        /// CPU seconds of this producer's thread, connection included.
        var cpuSeconds: Double
    }

    var url: BrokerURL
    var topology: Topology
    var ids: [String]
    var window: Int
    var pacing: Pacing?

    func run(gate: StartGate, control: PhaseControl) throws -> Report {
        let publisher = try IntentPublisher(url: url, topology: topology, connectTimeout: 5, confirmTimeout: 30)
        defer { publisher.close() }
        let start = try gate.arriveAndWait(control: control).timeIntervalSince1970
        let lag = LagMeter()
        // Read lazily by `submit`: each envelope is made (and stamped) right before its publish.
        let envelopes = ids.enumerated().lazy.map { [pacing] index, id in
            if let pacing {
                let due = start + Double(index * pacing.stride + pacing.offset) / pacing.rate
                let wait = due - Date().timeIntervalSince1970
                if wait > 0 { Thread.sleep(forTimeInterval: wait) } else { lag.record(-wait) }
            }
            return Workload.envelope(id: id)
        }
        try publisher.submit(envelopes, window: window)
        return Report(finished: Date(), maxLagSeconds: lag.maximum, cpuSeconds: ProcessMetrics.threadCPUSeconds())
    }
}

/// The largest lag seen; confined to the producer's thread.
private final class LagMeter {
    private(set) var maximum = 0.0

    func record(_ seconds: Double) { maximum = max(maximum, seconds) }
}
