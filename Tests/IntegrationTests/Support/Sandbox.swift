import Foundation
import IntentKit
import IntentStore
import Testing

/// One test's world: a virtual host on the test broker, a temporary folder with
/// the status store and the Hairdressers database, and the processes it started.
final class Sandbox: @unchecked Sendable {
    // @unchecked: `workers` is only touched by the test that owns the sandbox.
    let directory: URL
    let brokerURL: String
    private var workers: [WorkerProcess] = []

    init(_ label: String, broker: TestBroker = .shared) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("intentqueue-\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        brokerURL = try await broker.makeVirtualHost(label)
    }

    var statusStorePath: String { directory.appendingPathComponent("status.sqlite").path }
    var appDatabasePath: String { directory.appendingPathComponent("hairdressers.sqlite").path }

    var environment: [String: String] {
        ["INTENT_BROKER_URL": brokerURL, "INTENT_STATUS_DB": statusStorePath, "HAIRDRESSERS_DB": appDatabasePath]
    }

    /// Starts `intent-worker` with `arguments` and waits until its connections are up.
    @discardableResult
    func startWorker(_ arguments: [String] = ["--with-recorder"], expectedConnections: Int = 2) async throws -> WorkerProcess {
        let worker = try WorkerProcess(
            arguments: arguments, environment: environment, logPath: directory.appendingPathComponent("worker-\(workers.count).log").path)
        workers.append(worker)
        try await worker.waitForConnections(expectedConnections)
        return worker
    }

    /// Binds the queues (a worker starts and stops), then runs only the recorder: submissions wait in the queue.
    func startRecorderWithNoWorker() async throws {
        let first = try await startWorker(["--concurrency", "1"], expectedConnections: 1)
        let exit = try await first.stop()
        guard exit == 0 else { throw BrokerFailure(message: "the worker that bound the queues exited \(exit):\n\(first.log)") }
        try await startWorker(["--recorder-only"], expectedConnections: 1)
    }

    /// `intent-status watch` with `arguments` (by default `--json`), once its queue is bound: every status event the
    /// broker carries, as it comes (the store keeps only an intent's latest). `events(of:)` reads them from its log,
    /// the file `log` in the sandbox. One that never says it watches is interrupted before the error is thrown.
    func startWatcher(_ arguments: [String] = ["--json"], log: String = "watch.log") async throws -> WorkerProcess {
        let watcher = try WorkerProcess(
            arguments: ["watch"] + arguments, environment: environment, executable: Paths.tool("intent-status"),
            logPath: directory.appendingPathComponent(log).path)
        do {
            try await watcher.waitUntilWatching()
        } catch {
            watcher.process.interrupt()
            throw error
        }
        return watcher
    }

    func submit(_ arguments: [String], timeout: Double = 30) async throws -> ToolResult {
        try await run(Paths.tool("intent-submit"), arguments, environment: environment, timeout: timeout)
    }

    func status(_ arguments: [String], timeout: Double = 30) async throws -> ToolResult {
        try await run(Paths.tool("intent-status"), arguments, environment: environment, timeout: timeout)
    }

    /// How many Message rows the app stored for an intent.
    func messageCount(intentID: String) throws -> Int {
        let database = try Database(path: appDatabasePath, mode: .readOnly)
        return try database.queryFirst("SELECT count(*) FROM message WHERE intent_id = ?", [.text(intentID)]) { $0.int(0) } ?? 0
    }

    func statusStore() throws -> StatusReader {
        try StatusReader(path: statusStorePath)
    }

    /// Stops every worker still running (SIGTERM), and removes the folder.
    func tearDown() async {
        for worker in workers where worker.isRunning {
            _ = try? await worker.stop()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A running `intent-worker`, its log in a file.
final class WorkerProcess: @unchecked Sendable {
    // @unchecked: Process is used from the owning test only.
    let process = Process()
    let logPath: String

    init(arguments: [String], environment: [String: String], executable: String = Paths.tool("intent-worker"), logPath: String) throws {
        self.logPath = logPath
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardError = log
        process.standardOutput = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        ProcessReaper.track(process.processIdentifier)
    }

    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// The status events of `id` a watcher (`Sandbox.startWatcher --json`) has printed so far: every complete line
    /// that is an event is decoded, and one that does not decode throws; a last line still being written waits.
    func events(of id: String) throws -> [StatusEvent] {
        try log.split(separator: "\n", omittingEmptySubsequences: false).dropLast().filter { $0.hasPrefix("{") }
            .map { try StatusEvent.decode(Array($0.utf8)) }.filter { $0.id == id }
    }

    /// For `intent-status watch`: waits until it says it watches (its queue is bound). One that exits first, refused
    /// or unable to reach the broker, fails the wait at once, with its log.
    func waitUntilWatching(timeout: Double = 60) async throws {
        try await eventually(timeout: timeout, "intent-status watch to bind its queue (log: \(logPath))") {
            if log.contains("watching") { return true }
            if !process.isRunning { throw BrokerFailure(message: "intent-status watch exited before it watched:\n\(log)") }
            return false
        }
    }

    func waitForConnections(_ count: Int, timeout: Double = 30) async throws {
        try await eventually(timeout: timeout, "the worker to connect (log: \(logPath))") {
            if !process.isRunning { throw BrokerFailure(message: "intent-worker exited early:\n\(log)") }
            return log.components(separatedBy: " connected ").count - 1 >= count
        }
    }

    /// Waits for the process to end by itself (nothing is sent to it) and returns its exit code.
    func waitForExit(timeout: Double = 60) async throws -> Int32 {
        try await eventually(timeout: timeout, "\(process.executableURL?.lastPathComponent ?? "the process") to exit (log: \(logPath))") {
            !process.isRunning
        }
        ProcessReaper.forget(process.processIdentifier)
        return process.terminationStatus
    }

    /// Sends SIGTERM and waits for the exit code.
    func stop(timeout: Double = 30) async throws -> Int32 {
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() > deadline {
                kill(process.processIdentifier, SIGKILL)
                throw ToolTimeout(command: "intent-worker stop")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        ProcessReaper.forget(process.processIdentifier)
        return process.terminationStatus
    }
}
