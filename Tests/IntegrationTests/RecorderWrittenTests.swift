import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import IntentWorker
import Synchronization
import Testing

/// The recorder's `written` callback, which intent-bench times outcomes by: it names a batch only once a reader of
/// the store sees it.
@Suite(.timeLimit(.minutes(10)))
struct RecorderWrittenTests {
    @Test func aBatchIsReportedOnlyOnceAReaderSeesIt() async throws {
        let sandbox = try await Sandbox("recorder-written")
        defer { Task { await sandbox.tearDown() } }
        // The queues bound by a worker that then stops, so the recorder below is the run's only one.
        let binder = try await sandbox.startWorker(["--concurrency", "1"], expectedConnections: 1)
        #expect(try await binder.stop() == 0)

        // What each report named, and what a reader of its own (as intent-status is) found at that moment.
        let seen = Mutex<[String: (reported: IntentState, stored: IntentState?)]>([:])
        let path = sandbox.statusStorePath
        var configuration = StatusRecorder.Configuration(brokerURL: try BrokerURL(sandbox.brokerURL), storePath: path)
        configuration.written = { updates in
            let reader = try? StatusReader(path: path)
            for case .event(let event) in updates where event.state.isTerminal {
                let stored = try? reader?.status(id: event.id)?.state
                seen.withLock { $0[event.id] = (event.state, stored) }
            }
        }
        let recorder = StatusRecorder(configuration: configuration, logger: .disabled())
        let running = Task { try await recorder.run() }
        // Stopped below once the intents are in; this covers a test that fails first (stopping twice is harmless).
        defer { recorder.stop() }
        try await sandbox.startWorker(["--concurrency", "4"], expectedConnections: 1)

        let ids = (0..<6).map { "written-\($0)" }
        for id in ids {
            let result = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=\(id)", "--id", id, "--wait"])
            #expect(result.exitCode == 0, "\(result)")
        }
        recorder.stop()
        try await running.value

        let reports = seen.withLock { $0 }
        for id in ids {
            let report = try #require(reports[id], "the recorder reported writing \(id)'s outcome")
            #expect(report.reported == .success)
            #expect(report.stored == .success, "a reader saw \(id)'s outcome when it was reported")
        }
    }
}
