import Foundation
import IntentAMQP
import IntentKit

/// The ceiling again, by an independent C program (`deploy/ceiling/ceiling.c`,
/// rabbitmq-c and SQLite with none of IntentQueue's code) on a topology of its
/// own, with the same bodies, window, prefetch and batch: the check that the
/// Swift ceiling phase measures the broker's limit and not its own overhead.
struct CCeilingPhase {
    var executable: String
    var url: BrokerURL
    var topology: Topology
    var intents: Int
    var producers: Int
    var window: Int
    var prefetch: UInt16
    var batchSize: Int
    var statusEvents: Int
    var run: BenchRun
    var timeout: Double
    var broker: BrokerProcess?

    func measure() throws -> PhaseResult {
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw BenchError.failed("--c-ceiling: '\(executable)' is not an executable (deploy/ceiling.sh builds it)")
        }
        do {
            let connection = try AMQPConnection(url: url, connectTimeout: 5)
            defer { connection.close() }
            try topology.declareWork(on: connection, types: [Workload.type])
        } catch {
            throw BenchError.from(error, phase: "C ceiling set-up")
        }
        let intentBody = run.path("c-ceiling-intent.json")
        FileManager.default.createFile(atPath: intentBody, contents: Data(Workload.envelope(id: Workload.newID()).encoded()))
        var arguments = [
            "--host", url.host, "--port", "\(url.port)", "--user", url.user, "--password", url.password, "--vhost", url.virtualHost,
            "--exchange", topology.intentsExchange, "--key", Workload.type, "--work-queue", topology.workQueue,
            "--status-exchange", topology.statusExchange, "--ledger-queue", topology.ledgerQueue,
            "--intent-body", intentBody, "--intents", "\(intents)", "--producers", "\(producers)", "--window", "\(window)",
            "--prefetch", "\(prefetch)", "--batch", "\(batchSize)", "--db", run.path("c-ceiling.sqlite"),
        ]
        for (index, event) in Workload.statusEvents(id: Workload.newID(), worker: "intent-bench-ceiling").suffix(statusEvents).enumerated() {
            let path = run.path("c-ceiling-status-\(index).json")
            FileManager.default.createFile(atPath: path, contents: Data(event.encoded()))
            arguments += ["--status-body", "\(path)=\(event.routingKey)"]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let before = ProcessMetrics.sample(broker: broker)
        try process.run()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                process.terminate()
                throw BenchError.failed("C ceiling: not done within \(Int(timeout)) s")
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
        let used = ProcessMetrics.sample(broker: broker).since(before)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        guard process.terminationStatus == 0, let result = try? JSONValue.parse(Data(text.utf8)),
            let seconds = result["seconds"]?.numberValue, let cpu = result["cpuSeconds"]?.numberValue
        else {
            let problem = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw BenchError.failed("C ceiling: exit \(process.terminationStatus): \(problem.isEmpty ? text : problem)")
        }
        return PhaseResult(
            name: "ceiling (C)", intents: intents, seconds: seconds, submitSeconds: result["submitSeconds"]?.numberValue ?? 0,
            latency: nil, processCPUSeconds: cpu, machineCPUSeconds: used.machineBusySeconds, brokerCPUSeconds: used.brokerCPUSeconds)
    }
}
