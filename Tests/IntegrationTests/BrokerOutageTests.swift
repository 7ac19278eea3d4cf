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
        while Date().timeIntervalSince(frozenAt) < Double(4 * heartbeat + 4) {
            if worker.log.contains("connection lost") {
                detectedAfter = Date().timeIntervalSince(frozenAt)
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        kill(pid, SIGCONT)
        let detected = try #require(detectedAfter, "the worker did not notice the frozen broker:\n\(worker.log)")
        // rabbitmq-c declares the connection dead after two missed heartbeat intervals.
        #expect(detected <= Double(3 * heartbeat) + 1)

        let after = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=after", "--wait", "--timeout", "60"], timeout: 90)
        #expect(after.exitCode == 0, "\(after)\n\(worker.log)")
        #expect(worker.isRunning)
    }
}
