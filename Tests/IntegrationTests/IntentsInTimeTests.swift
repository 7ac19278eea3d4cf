import Foundation
import IntentKit
import IntentStore
import Testing

/// Intents that name a time, against the real broker, recorder and worker.
@Suite(.timeLimit(.minutes(10)))
struct IntentsInTimeTests {
    /// Submitted while no worker runs: those whose time to start has passed
    /// when a worker comes end `failure`/`expired` and send nothing; those with
    /// no limit, or a limit far off, are sent.
    @Test func intentsThatExpireWhileNoWorkerRunsEndExpiredWithNoEffects() async throws {
        let sandbox = try await Sandbox("expiry")
        defer { Task { await sandbox.tearDown() } }
        // Bind the queues, then leave only the recorder running.
        let first = try await sandbox.startWorker(["--concurrency", "1"], expectedConnections: 1)
        #expect(try await first.stop() == 0)
        try await sandbox.startWorker(["--recorder-only"], expectedConnections: 1)

        let soon = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
        var expiring: [String] = []
        var lasting: [String] = []
        for index in 0..<6 {
            let id = "stale-\(index)"
            let limit = index.isMultiple(of: 2) ? ["--expires-in", "1s"] : ["--expires-at", soon]
            let submitted = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=stale", "--id", id] + limit)
            #expect(submitted.exitCode == 0, "\(submitted)")
            expiring.append(id)
        }
        for index in 0..<6 {
            let id = "fresh-\(index)"
            let limit = index.isMultiple(of: 2) ? ["--expires-in", "1h"] : []
            let submitted = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=fresh", "--id", id] + limit)
            #expect(submitted.exitCode == 0, "\(submitted)")
            lasting.append(id)
        }
        // Every stale one's limit is at most 2 s after it was submitted, and each was submitted before now.
        let passed = Date().addingTimeInterval(2)
        try await eventually(timeout: 60, "the stale intents' limits to pass") { Date() > passed }

        try await sandbox.startWorker([], expectedConnections: 1)
        let ids = expiring + lasting
        try await eventually(timeout: 120, "all \(ids.count) to end") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            let store = try sandbox.statusStore()
            return try ids.allSatisfy { try store.status(id: $0)?.state.isTerminal ?? false }
        }
        let store = try sandbox.statusStore()
        for id in expiring {
            let status = try #require(try store.status(id: id))
            #expect(status.state == .failure && status.response?.code == FailureCode.expired, "\(id): \(status.state) \(status.response?.code ?? "")")
            #expect(status.startedAt == nil, "\(id) never started")
            #expect(try sandbox.messageCount(intentID: id) == 0, "\(id) sent nothing")
        }
        for id in lasting {
            #expect(try store.status(id: id)?.state == .success, "\(id)")
            #expect(try sandbox.messageCount(intentID: id) == 1, "\(id) was sent once")
        }
        let shown = try await sandbox.status(["stale-0"])
        #expect(shown.exitCode == 1 && shown.stdout.contains("expired"), "\(shown)")
    }

    @Test func intentSubmitRefusesAnUnreadableTimeBeforePublishing() async throws {
        let sandbox = try await Sandbox("expiry-usage")
        defer { Task { await sandbox.tearDown() } }
        for (limit, message) in [
            (["--expires-in", "soon"], "--expires-in must be a positive duration"),
            (["--expires-at", "2026-12-24 18:00"], "--expires-at must be a time in ISO 8601"),
            (["--expires-in", "1m", "--expires-at", "2026-12-24T18:00:00Z"], "--expires-in and --expires-at exclude each other"),
        ] {
            let refused = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=x"] + limit)
            #expect(refused.exitCode == 64, "\(refused)")
            #expect(refused.stderr.contains(message), "\(refused)")
        }
    }
}
