import Foundation
import IntentAMQP
import IntentKit

/// The ceiling again, by an independent C program (`deploy/ceiling/ceiling.c`,
/// rabbitmq-c and SQLite with none of IntentQueue's code) on a topology of its
/// own, with the same bodies, window, prefetch and batch: the check that the
/// Swift ceiling phase measures the broker's limit and not its own overhead.
struct CCeilingPhase {
    var executable: String
    /// The Swift ceiling's settings, on a topology of this phase's own; its store path is not used.
    var pattern: CeilingPhase
    var run: BenchRun
    /// Offered intents/s (open loop), with latency from each publish to the commit of its last status event;
    /// nil: full speed.
    var rate: Double?
    /// Whether its worker commits each intent's effect (synced, in a SQLite file of its own) before it publishes the
    /// intent's events, as a handler's `once` does: the floor of once-only effects, which the bare pattern leaves out.
    var effects = false

    /// The name of the paced phase's result.
    static let pacedName = "ceiling (C) paced"
    /// The name of the paced phase's result with `effects`.
    static let effectsName = "ceiling (C) paced, effects"

    func measure() throws -> PhaseResult {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchError.failed("--c-ceiling: '\(executable)' is not an executable (deploy/ceiling.sh builds it)")
        }
        try pattern.declareTopology(phase: "C ceiling")
        let (url, topology, intents) = (pattern.url, pattern.topology, pattern.intents)
        let intentBody = run.path("c-ceiling-intent.json")
        try Self.write(Workload.envelope(id: Workload.newID()).encoded(), to: intentBody)
        var arguments = [
            "--host", url.host, "--port", "\(url.port)", "--user", url.user, "--password", url.password, "--vhost", url.virtualHost,
            "--exchange", topology.intentsExchange, "--key", Workload.type, "--work-queue", topology.workQueue,
            "--status-exchange", topology.statusExchange, "--ledger-queue", topology.ledgerQueue,
            "--intent-body", intentBody, "--intents", "\(intents)", "--producers", "\(pattern.producers)", "--window", "\(pattern.window)",
            "--prefetch", "\(pattern.prefetch)", "--batch", "\(pattern.batchSize)",
            "--db", run.path(rate == nil ? "c-ceiling.sqlite" : "c-ceiling-paced.sqlite"),
        ]
        if effects {
            arguments += ["--effects", run.path(rate == nil ? "c-effects.sqlite" : "c-effects-paced.sqlite")]
        }
        if let rate {
            // Paced, the recorder writes as IntentQueue's does at a moderate load: an open batch is written once
            // nothing more is waiting to be read, is visible at once, and is synced (then acked) at most 20 ms later.
            arguments += ["--rate", "\(Int(rate))", "--linger-us", "0", "--sync-ms", "20"]
        }
        for (index, event) in Workload.statusEvents(id: Workload.newID(), worker: "intent-bench-ceiling").suffix(pattern.statusEvents).enumerated() {
            let path = run.path("c-ceiling-status-\(index).json")
            try Self.write(event.encoded(), to: path)
            arguments += ["--status-body", "\(path)=\(event.routingKey)"]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let before = ProcessMetrics.sample(broker: pattern.broker)
        try process.run()
        let deadline = Date().addingTimeInterval(pattern.timeout)
        while process.isRunning {
            if let signal = Interruption.signal {
                Self.end(process)
                throw BenchError.interrupted(signal)
            }
            if Date() > deadline {
                Self.end(process)
                throw BenchError.failed("C ceiling: not done within \(Int(pattern.timeout)) s")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        // A Ctrl-C in a terminal reaches the program too: it then ends by the signal, which is the run's.
        try Interruption.check()
        let used = ProcessMetrics.sample(broker: pattern.broker).since(before)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0, let result = try? JSONValue.parse(Data(text.utf8)),
            let seconds = result["seconds"]?.numberValue, let cpu = result["cpuSeconds"]?.numberValue
        else {
            let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw BenchError.failed("C ceiling: exit \(process.terminationStatus): \(problem.isEmpty ? text : problem)")
        }
        let latency = result["latencyMs"].flatMap { object -> LatencySummary? in
            guard let p50 = object["p50"]?.numberValue, let p95 = object["p95"]?.numberValue, let p99 = object["p99"]?.numberValue,
                let max = object["max"]?.numberValue
            else { return nil }
            return LatencySummary(count: intents, p50: p50, p95: p95, p99: p99, max: max)
        }
        return PhaseResult(
            name: rate == nil ? "ceiling (C)" : effects ? Self.effectsName : Self.pacedName, intents: intents, seconds: seconds,
            submitSeconds: result["submitSeconds"]?.numberValue ?? 0, latency: latency, processCPUSeconds: cpu,
            machineCPUSeconds: used.machineBusySeconds,
            // Its worker and recorder threads: what compares with IntentQueue's workers and recorder.
            servicesCPUSeconds: result["workerCpuSeconds"]?.numberValue.flatMap { worker in
                result["recorderCpuSeconds"]?.numberValue.map { worker + $0 }
            },
            brokerCPUSeconds: used.brokerCPUSeconds, offeredRate: rate)
    }

    /// Ends the program: SIGTERM, then SIGKILL if it has not ended 5 s later; waits for it either way.
    private static func end(_ process: Process) {
        process.terminate()
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Writes a message body the C program reads, saying which file could not be written.
    private static func write(_ bytes: [UInt8], to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw BenchError.failed("C ceiling: could not write \(path)")
        }
    }
}
