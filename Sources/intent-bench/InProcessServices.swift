import Foundation
import Hairdressers
import IntentAMQP
import IntentKit
import IntentStore
import IntentWorker
import Synchronization

/// The end-to-end phases' workers and recorder, run inside the benchmark so
/// they use the run's own topology: `WorkerService` × W and one `StatusRecorder`,
/// each with its own connection and threads exactly as `intent-worker` runs them,
/// and each worker with its own connection to the app database, as separate
/// `intent-worker` processes on one machine would have.
final class InProcessServices: Sendable {
    let workers: [WorkerService]
    let recorder: StatusRecorder
    private let exits = DispatchSemaphore(value: 0)
    private let state = Mutex<(stopping: Bool, failure: String?)>((false, nil))

    init(
        url: BrokerURL, topology: Topology, workers count: Int, concurrency: Int, prefetch: UInt16, statusPath: String, appPath: String,
        logger: Logger
    ) throws {
        workers = try (0..<count).map { index in
            var registry = IntentRegistry()
            try HairdressersApp.register(into: &registry, database: HairdressersDatabase.open(path: appPath))
            let configuration = WorkerConfiguration(
                brokerURL: url, topology: topology, concurrency: concurrency, prefetch: prefetch,
                workerName: "intent-bench-worker-\(index + 1)")
            return try WorkerService(registry: registry, configuration: configuration, logger: logger)
        }
        var recorderConfiguration = StatusRecorder.Configuration(brokerURL: url, topology: topology, storePath: statusPath)
        recorderConfiguration.written = { [stored] updates in stored.note(updates) }
        recorder = StatusRecorder(configuration: recorderConfiguration, logger: logger)
    }

    /// When each intent's terminal state was first written into the status store by the recorder.
    let stored = StoredTimes()

    private var services: [any Service] { [recorder] + workers }

    /// Runs every service as a task; a service that returns or throws before
    /// `stop` is recorded as a failure.
    func start() {
        for (index, service) in services.enumerated() {
            let name = index == 0 ? "the recorder" : "worker \(index)"
            Task.detached { [self] in
                var reason: String?
                do {
                    try await service.run()
                    reason = "\(name) stopped on its own"
                } catch {
                    reason = "\(name) failed: \(error)"
                }
                state.withLock { state in
                    if !state.stopping, state.failure == nil { state.failure = reason }
                }
                exits.signal()
            }
        }
    }

    /// Why a service ended early, if one did.
    var failure: String? { state.withLock { $0.failure } }

    /// Throws when a service ended early.
    func check(phase: String) throws(BenchError) {
        if let failure { throw .failed("\(phase): \(failure)") }
    }

    /// Waits until every worker has connected and declared its queues, so a
    /// submission is routable.
    func waitUntilConnected(control: PhaseControl) throws {
        while !workers.allSatisfy(\.isConnected) {
            try check(phase: control.phase)
            try control.check("waiting for the in-process workers to connect")
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Stops the workers, then the recorder (as `ServiceGroup` does), waiting
    /// up to `timeout` seconds for all to return; false when one did not.
    @discardableResult
    func stop(timeout: Double) -> Bool {
        state.withLock { $0.stopping = true }
        let deadline = DispatchTime.now() + timeout
        for worker in workers { worker.stop() }
        var remaining = workers.count + 1
        // Workers flush their last status events before returning; the recorder goes last.
        while remaining > 1 {
            guard exits.wait(timeout: deadline) == .success else { return false }
            remaining -= 1
        }
        recorder.stop()
        return exits.wait(timeout: deadline) == .success
    }
}

/// The moment the recorder first wrote each intent's terminal state (visible in the store from then on), by id.
final class StoredTimes: Sendable {
    private let times = Mutex<[String: Double]>([:])

    /// Notes the terminal events of a batch the recorder has just written.
    func note(_ updates: [StatusStore.Update]) {
        let now = Date().timeIntervalSince1970
        times.withLock { times in
            for case .event(let event) in updates where event.state.isTerminal && times[event.id] == nil {
                times[event.id] = now
            }
        }
    }

    /// How many intents' terminal states were written and not yet taken.
    var count: Int { times.withLock { $0.count } }

    /// When each of `ids`' terminal states was written (nil for one not written), forgotten here once told, so
    /// that what the benchmark keeps does not grow with the runs.
    func take(_ ids: [String]) -> [String: Double] {
        times.withLock { times in
            var taken: [String: Double] = [:]
            taken.reserveCapacity(ids.count)
            for id in ids { taken[id] = times.removeValue(forKey: id) }
            return taken
        }
    }
}
