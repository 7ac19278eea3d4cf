import Foundation
import IntentAMQP

/// Phase 1: IntentQueue's exact message pattern through the same broker and
/// queue types, with none of its work — the number the end-to-end phase is held against.
struct CeilingPhase {
    var url: BrokerURL
    var topology: Topology
    var intents: Int
    var producers: Int
    var window: Int
    var prefetch: UInt16
    var batchSize: Int
    /// Status events the worker publishes per intent: 1 (the outcome alone, as a quick run does) or 2 (`inProgress` too).
    var statusEvents: Int
    var storePath: String
    var timeout: Double
    var broker: BrokerProcess?

    /// Declares the phase's queues and exchanges (the work, ledger and status objects, as a worker would).
    func declareTopology(phase: String) throws {
        do {
            let connection = try AMQPConnection(url: url, connectTimeout: 5)
            defer { connection.close() }
            try topology.declareWork(on: connection, types: [Workload.type])
        } catch {
            throw BenchError.from(error, phase: "\(phase) set-up")
        }
    }

    func run() throws -> PhaseResult {
        let control = PhaseControl(phase: "ceiling", timeout: timeout)
        try declareTopology(phase: "ceiling")

        let gate = StartGate()
        let recorder = BenchThread(name: "ceiling recorder") { [self] in
            try CeilingRecorder(url: url, topology: topology, storePath: storePath, expectedRows: (1 + statusEvents) * intents, batchSize: batchSize)
                .run(gate: gate, control: control)
        }
        let worker = BenchThread(name: "ceiling worker") { [self] in
            try CeilingWorker(url: url, topology: topology, count: intents, prefetch: prefetch, statusEvents: statusEvents).run(
                gate: gate, control: control)
        }
        let producerThreads = BenchRun.shares(of: intents, among: producers).enumerated().map { index, share in
            BenchThread(name: "ceiling producer \(index + 1)") { [self] in
                try CeilingProducer(url: url, topology: topology, count: share, window: window).run(gate: gate, control: control)
            }
        }
        let threads: [any Joinable] = [recorder, worker] + producerThreads
        try gate.waitForArrivals(threads.count, threads: threads, control: control)

        let before = ProcessMetrics.sample(broker: broker)
        let start = gate.open()
        try control.join(threads)
        let used = ProcessMetrics.sample(broker: broker).since(before)

        let end = recorder.value ?? Date()
        let submitted = producerThreads.compactMap(\.value).max() ?? end
        return PhaseResult(
            name: "ceiling", intents: intents, seconds: end.timeIntervalSince(start),
            submitSeconds: submitted.timeIntervalSince(start), latency: nil,
            processCPUSeconds: used.cpuSeconds, machineCPUSeconds: used.machineBusySeconds, brokerCPUSeconds: used.brokerCPUSeconds)
    }
}
