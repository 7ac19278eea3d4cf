import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Testing

/// The status store, the app's database and the worker's ledger on a small
/// file system of their own (a tmpfs the test mounts), filled up in the middle
/// of a 1,000-intent run and then freed: every confirmed intent ends, nothing
/// is lost or done twice, the same worker and recorder go on, and their logs
/// say what they wait for.
@Suite(.timeLimit(.minutes(10)), .enabled(if: getuid() == 0, "mounts a small tmpfs, which needs root"))
struct DiskFullTests {
    @Test func aFullDiskUnderTheDatabasesLosesNothingAndWorkResumesWhenSpaceReturns() async throws {
        let sandbox = try await Sandbox("disk-full")
        let small = sandbox.directory.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let mounted = try await run("/bin/mount", ["-t", "tmpfs", "-o", "size=12m,mode=0700", "tmpfs", small.path], timeout: 30)
        try #require(mounted.exitCode == 0, "\(mounted)")
        let environment = sandbox.environment.merging([
            "INTENT_STATUS_DB": small.appendingPathComponent("status.sqlite").path,
            "HAIRDRESSERS_DB": small.appendingPathComponent("hairdressers.sqlite").path,
            "INTENT_OUTCOMES_DB": small.appendingPathComponent("outcomes.sqlite").path,
        ]) { _, new in new }
        let process = try WorkerProcess(
            arguments: ["--with-recorder", "--concurrency", "8"], environment: environment,
            logPath: sandbox.directory.appendingPathComponent("worker.log").path)
        defer {
            Task {
                _ = try? await process.stop()
                _ = try? await run("/bin/umount", ["-l", small.path], timeout: 30)
                await sandbox.tearDown()
            }
        }
        try await process.waitForConnections(2)
        let pid = process.pid

        // 1,000 intents at about 250 a second, from a thread of their own.
        let envelopes = (0..<1000).map { index in
            IntentEnvelope(
                id: String(format: "full-%04d", index), type: "SendMessage",
                parameters: ["recipients": ["Alice Smith"], "content": .string("message \(index) " + String(repeating: "x", count: 200))],
                submittedAt: Date().timeIntervalSince1970)
        }
        let url = try BrokerURL(sandbox.brokerURL)
        // The last 700 wait until the disk is full, so that some always arrive while it is, however slow the test runs.
        let diskFull = Latch()
        let submitting = Task.detached {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
                Thread {
                    continuation.resume(
                        with: Result {
                            let publisher = try IntentPublisher(url: url)
                            defer { publisher.close() }
                            return try publisher.submit(
                                envelopes.enumerated().lazy.map { index, envelope in
                                    if index == 300 { diskFull.wait(timeout: 120) }
                                    Thread.sleep(forTimeInterval: 0.004)
                                    return envelope
                                }, window: 16)
                        })
                }.start()
            }
        }
        let storePath = small.appendingPathComponent("status.sqlite").path
        func finished() throws -> Int {
            guard FileManager.default.fileExists(atPath: storePath) else { return 0 }
            return try StatusReader(path: storePath).counts()[.success] ?? 0
        }
        try await eventually(timeout: 60, "the first 150 intents to succeed") { try finished() >= 150 }

        // Fill the file system to the last byte.
        let filler = small.appendingPathComponent("filler").path
        let filled = try await run("/bin/dd", ["if=/dev/zero", "of=\(filler)", "bs=64k"], timeout: 60)
        #expect(filled.stderr.contains("No space left"), "\(filled)")
        diskFull.open()
        try await eventually(timeout: 90, "the worker and the recorder to say they wait for storage (log: \(process.logPath))") {
            if !process.isRunning { throw BrokerFailure(message: "intent-worker exited on a full disk:\n\(process.log)") }
            return process.log.contains("waiting for storage") && process.log.contains("status store unavailable (disk full)")
        }
        let during = try finished()
        #expect(process.isRunning && process.pid == pid)
        // Asked over the broker meanwhile, the recorder says its store is behind, not "unknown" (exit 4) for what it
        // read and could not write.
        let asked = try await sandbox.status(["full-0999", "--remote", "--json"])
        #expect(asked.exitCode != 0 && asked.exitCode != 4 && asked.stderr.contains("cannot be written now"), "\(asked)")

        // Free it: everything confirmed ends, once.
        try FileManager.default.removeItem(atPath: filler)
        let confirmed = try await submitting.value
        #expect(confirmed == 1000)
        try await eventually(timeout: 300, "all 1,000 intents to succeed after the space came back") { try finished() == 1000 }
        let app = try Database(path: small.appendingPathComponent("hairdressers.sqlite").path, mode: .readOnly)
        let rows = try app.query("SELECT intent_id, count(*) FROM message GROUP BY intent_id") { ($0.string(0), $0.int(1)) }
        #expect(rows.count == 1000, "every intent sent its message")
        #expect(rows.allSatisfy { $0.1 == 1 }, "no message twice: \(rows.filter { $0.1 != 1 }.prefix(5))")
        #expect(try StatusReader(path: storePath).conflictCount() == 0)
        #expect(process.isRunning && process.pid == pid, "the same worker served throughout")
        #expect(process.log.contains("status store writable again"), "the recorder said it resumed")
        for needle in ["waiting for storage", "status store unavailable", "status store writable again"] {
            if let line = process.log.split(separator: "\n").first(where: { $0.contains(needle) }) { print("disk full, the log: \(line)") }
        }
        print("disk full: \(during) of 1000 had succeeded when both waited for storage; all 1000 succeeded once after space returned")
    }
}
