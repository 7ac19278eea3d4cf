import Foundation
import IntentStore
import Testing

/// The broker goes away and comes back: tools say so at once, the worker waits
/// and resumes, and nothing the broker had confirmed is lost.
@Suite(.timeLimit(.minutes(10)))
struct BrokerOutageTests {
    @Test func theWorkerResumesWhenTheBrokerReturnsAndLosesNothingConfirmed() async throws {
        let broker = TestBroker(node: "iqtest-restart", port: 5691)
        if TestBroker.answers(port: 5691) { try await broker.stop() }
        let sandbox = try await Sandbox("outage", broker: broker)
        defer {
            Task {
                await sandbox.tearDown()
                try? await broker.stop()
            }
        }

        // Served while the broker is up.
        let worker = try await sandbox.startWorker()
        for index in 0..<5 {
            let result = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=before \(index)", "--id", "before-\(index)", "--wait"])
            #expect(result.exitCode == 0, "\(result)")
        }
        #expect(try await worker.stop() == 0)

        // Confirmed while no worker runs: these wait in the durable queue.
        for index in 0..<20 {
            let result = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=queued \(index)", "--id", "queued-\(index)"])
            #expect(result.exitCode == 0, "\(result)")
        }

        try await broker.stop()
        let refused = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=while down"], timeout: 20)
        #expect(refused.exitCode == 69, "\(refused)")

        // A worker started while the broker is down keeps retrying.
        let patient = try WorkerProcess(
            arguments: ["--with-recorder"], environment: sandbox.environment,
            logPath: sandbox.directory.appendingPathComponent("patient.log").path)
        try await eventually(timeout: 30, "the worker to retry the absent broker twice (log: \(patient.logPath))") {
            if !patient.isRunning { throw BrokerFailure(message: "intent-worker exited while the broker was down:\n\(patient.log)") }
            return patient.log.components(separatedBy: "broker unavailable").count - 1 >= 2
        }

        try await broker.restart()
        try await eventually(timeout: 90, "the queued intents to be handled after the broker returned") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            return try (0..<20).allSatisfy { try sandbox.statusStore().status(id: "queued-\($0)")?.state == .success }
        }
        for index in 0..<20 {
            #expect(try sandbox.messageCount(intentID: "queued-\(index)") == 1)
        }
        #expect(try await patient.stop() == 0)
    }
}

/// A broker that stops answering (SIGSTOP) is detected by heartbeats, and work
/// resumes once it thaws.
@Suite(.timeLimit(.minutes(10)))
struct FrozenBrokerTests {
    @Test func aFrozenBrokerIsDetectedWithinTwoHeartbeatsAndWorkResumes() async throws {
        let broker = TestBroker(node: "iqtest-freeze", port: 5692)
        if TestBroker.answers(port: 5692) { try await broker.stop() }
        let sandbox = try await Sandbox("freeze", broker: broker)
        defer {
            Task {
                await sandbox.tearDown()
                try? await broker.stop()
            }
        }
        let heartbeat = 2
        let worker = try await sandbox.startWorker(["--with-recorder", "--heartbeat", "\(heartbeat)"])
        let before = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=before", "--wait"])
        #expect(before.exitCode == 0, "\(before)")

        let pidResult = try await run(Paths.brokerScript, ["pid", "iqtest-freeze"])
        let pid = try #require(Int32(pidResult.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        kill(pid, SIGSTOP)
        let frozenAt = Date()
        var detectedAfter: Double?
        // Without heartbeats nothing would tell: the frozen broker's socket stays open. How soon is a figure, not a check.
        while Date().timeIntervalSince(frozenAt) < 60 {
            if worker.log.contains("connection lost") {
                detectedAfter = Date().timeIntervalSince(frozenAt)
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        kill(pid, SIGCONT)
        let detected = try #require(detectedAfter, "the worker did not notice the frozen broker:\n\(worker.log)")
        // rabbitmq-c declares the connection dead after two missed heartbeat intervals.
        print("heartbeat \(heartbeat) s: the frozen broker noticed after \(String(format: "%.1f", detected)) s")

        let after = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=after", "--wait", "--timeout", "60"], timeout: 90)
        #expect(after.exitCode == 0, "\(after)\n\(worker.log)")
        #expect(worker.isRunning)
    }
}

/// A scheduled intent a worker kept in its ledger runs when it is due even
/// while the broker is down; its outcome reaches the store once it is back.
@Suite(.timeLimit(.minutes(10)))
struct KeptScheduleTests {
    @Test func aKeptIntentRunsWhenDueWhileTheBrokerIsDownAndIsRecordedOnceItIsBack() async throws {
        let broker = TestBroker(node: "iqtest-kept", port: 5697)
        if TestBroker.answers(port: 5697) { try await broker.stop() }
        let sandbox = try await Sandbox("kept", broker: broker)
        defer {
            Task {
                await sandbox.tearDown()
                try? await broker.stop()
            }
        }
        try await sandbox.startWorker()
        let submitted = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=on time", "--id", "kept-1", "--in", "40s"])
        #expect(submitted.exitCode == 0, "\(submitted)")
        try await eventually(timeout: 30, "the worker to keep it in its ledger, and the store to know it is scheduled") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            let database = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
            let kept = try database.queryFirst("SELECT count(*) FROM intent_kept WHERE intent_id = 'kept-1'") { $0.int(0) } ?? 0
            return try kept == 1 && sandbox.statusStore().status(id: "kept-1")?.state == .scheduled
        }
        let due = try #require(try sandbox.statusStore().status(id: "kept-1")?.dueAt)

        try await broker.stop()
        let down = Date().timeIntervalSince1970
        try #require(down < due, "the broker took longer to stop than the 40 s the intent waits: this test needs it down first")
        try await eventually(timeout: 90, "the kept intent to run when due, with the broker down") {
            try sandbox.messageCount(intentID: "kept-1") == 1
        }
        #expect(!TestBroker.answers(port: 5697), "nothing but the worker's ledger could have started it")
        let database = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        let sentAt = try #require(try database.queryFirst("SELECT created_at FROM message WHERE intent_id = 'kept-1'") { $0.double(0) })
        #expect(sentAt >= due, "not before its time")
        #expect(try sandbox.statusStore().status(id: "kept-1")?.state == .scheduled, "the store hears of it only through the broker")

        try await broker.restart()
        try await eventually(timeout: 90, "its outcome to be recorded once the broker is back") {
            try sandbox.statusStore().status(id: "kept-1")?.state == .success
        }
        let status = try #require(try sandbox.statusStore().status(id: "kept-1"))
        #expect((status.startedAt ?? 0) >= due && (status.startedAt ?? .infinity) <= sentAt, "started when it ran, not when the broker returned")
        #expect(try sandbox.messageCount(intentID: "kept-1") == 1, "sent once")
    }
}
