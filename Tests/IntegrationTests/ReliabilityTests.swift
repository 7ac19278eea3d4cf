import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

/// Nothing lost, nothing done twice: retries, poison messages, bad input and shutdown.
@Suite(.timeLimit(.minutes(4)))
struct ReliabilityTests {
    @Test func transientFailuresAreRetriedWithBackoffThenGiveUp() async throws {
        let sandbox = try await Sandbox("retry")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()

        let booked = try await sandbox.submit([
            "BookAppointment", "hairdresser=Alice", "time=15:00", "callSeconds=0.1", "busyCalls=2", "--id", "busy-twice",
            "--wait", "--timeout", "30", "--json",
        ])
        #expect(booked.exitCode == 0, "\(booked)")
        let status = try #require(try sandbox.statusStore().status(id: "busy-twice"))
        #expect(status.attempts == 3)
        #expect(status.response?.message == "Booked with Alice Smith at 15:00")

        let hopeless = try await sandbox.submit([
            "BookAppointment", "hairdresser=Bob", "time=16:00", "callSeconds=0", "busyCalls=99", "--id", "always-busy",
            "--wait", "--timeout", "30",
        ])
        #expect(hopeless.exitCode == 1, "\(hopeless)")
        let failed = try #require(try sandbox.statusStore().status(id: "always-busy"))
        #expect(failed.response?.code == FailureCode.retriesExhausted)
        #expect(failed.attempts == 4)
        // No message is left behind in the work queue or the retry queues.
        #expect(try await settledDepth("intents.work", expected: 0, sandbox: sandbox) == 0)
    }

    @Test func aMessageThatKillsTheWorkerEveryTimeIsDeadLetteredOnceWhileOthersFlow() async throws {
        let sandbox = try await Sandbox("poison")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--recorder-only"], expectedConnections: 1)

        // A supervisor restarts the worker whenever it dies, as systemd would.
        let crashes = Counter()
        let supervisor = Task {
            var generation = 0
            while !Task.isCancelled {
                let worker = try WorkerProcess(
                    arguments: ["--concurrency", "1", "--prefetch", "1"],
                    environment: sandbox.environment.merging(["INTENTQUEUE_FAULT": "afterReceive@poison-"]) { _, new in new },
                    logPath: sandbox.directory.appendingPathComponent("crashing-\(generation).log").path)
                generation += 1
                while worker.isRunning, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(20)) }
                if Task.isCancelled {
                    kill(worker.pid, SIGKILL)
                    return
                }
                crashes.increment()
            }
        }
        defer { supervisor.cancel() }
        try await eventually(timeout: 30, "the first worker to bind the work queue") {
            let log = (try? String(contentsOfFile: sandbox.directory.appendingPathComponent("crashing-0.log").path, encoding: .utf8)) ?? ""
            return log.contains(" connected ")
        }

        try await publishRaw(
            url: sandbox.brokerURL, routingKey: "SendMessage",
            body: IntentEnvelope(id: "poison-1", type: "SendMessage", parameters: ["recipients": "Alice", "content": "boom"], submittedAt: 0).encoded(),
            messageID: "poison-1")
        for index in 0..<20 {
            let result = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=fine \(index)", "--id", "fine-\(index)"])
            #expect(result.exitCode == 0)
        }
        try await eventually(timeout: 120, "the poison message to be dead-lettered and the others handled") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            let store = try sandbox.statusStore()
            guard try store.status(id: "poison-1")?.state == .failure else { return false }
            return try (0..<20).allSatisfy { try store.status(id: "fine-\($0)")?.state == .success }
        }
        let poison = try #require(try sandbox.statusStore().status(id: "poison-1"))
        #expect(poison.response?.code == FailureCode.deadLettered)
        #expect(crashes.value >= 5)
        #expect(try sandbox.messageCount(intentID: "poison-1") == 0)
        for index in 0..<20 { #expect(try sandbox.messageCount(intentID: "fine-\(index)") == 1) }
        #expect(try await settledDepth("intents.dead", expected: 1, sandbox: sandbox) == 1)

        // An operator lists it, fixes the cause (here: a worker that does not crash), and requeues it.
        let listed = try await sandbox.status(["dead", "--json"])
        #expect(listed.exitCode == 0)
        #expect(listed.stdout.contains("poison-1") && !listed.stdout.contains("fine-"))
        supervisor.cancel()
        try await sandbox.startWorker([], expectedConnections: 1)
        let missing = try await sandbox.status(["requeue", "no-such-intent"])
        #expect(missing.exitCode == 4, "\(missing)")
        let requeued = try await sandbox.status(["requeue", "poison-1"])
        #expect(requeued.exitCode == 0, "\(requeued)")
        let healed = try await sandbox.status(["poison-1", "--wait", "--timeout", "30"])
        #expect(healed.exitCode == 0, "\(healed)")
        #expect(try sandbox.messageCount(intentID: "poison-1") == 1)
        #expect(try await settledDepth("intents.dead", expected: 0, sandbox: sandbox) == 0)
    }

    @Test func badInputEndsAsReadableFailuresAndTheSameWorkerGoesOn() async throws {
        let sandbox = try await Sandbox("bad-input")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker()
        let pid = worker.pid

        func envelope(_ fields: String) -> [UInt8] { Array(fields.utf8) }
        let cases: [(id: String, body: [UInt8], reason: String)] = [
            ("bad-json", envelope("{\"version\":1,"), "not valid JSON"),
            ("bad-utf8", [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D], "not valid JSON"),
            ("bad-version", envelope(#"{"version":2,"id":"bad-version","type":"SendMessage","parameters":{}}"#), "version 2"),
            ("bad-type", envelope(#"{"version":1,"id":"bad-type","parameters":{}}"#), "'type'"),
            ("bad-parameters", envelope(#"{"version":1,"id":"bad-parameters","type":"SendMessage","parameters":[1]}"#), "'parameters'"),
            ("bad-field", envelope(#"{"version":1,"id":"bad-field","type":"SendMessage","parameters":{"recipients":{"a":1},"content":"x"}}"#), "recipients"),
            ("too-big", envelope(#"{"version":1,"id":"too-big","type":"SendMessage","parameters":{"content":""# + String(repeating: "x", count: 1_100_000) + "\"}}"), "over the limit"),
        ]
        for item in cases {
            try await publishRaw(url: sandbox.brokerURL, routingKey: "SendMessage", body: item.body, messageID: item.id)
        }
        // No id anywhere: nothing to record it against, so it goes to the dead-letter queue.
        try await publishRaw(url: sandbox.brokerURL, routingKey: "SendMessage", body: [])

        for item in cases {
            let result = try await sandbox.status([item.id, "--wait", "--timeout", "20", "--json"])
            #expect(result.exitCode == 1, "\(item.id): \(result)")
            #expect(result.stdout.contains("invalidIntent"), "\(item.id): \(result.stdout)")
            #expect(result.stdout.contains(item.reason), "\(item.id) should mention \(item.reason): \(result.stdout.prefix(400))")
        }
        // Deeply nested and very many headers are skipped, not walked: the intent is handled.
        var nested = HeaderValue.string("bottom")
        for level in 0..<100 { nested = .table(["level-\(level)": nested, "x-delivery-count": .string("not a number")]) }
        var headers: [String: HeaderValue] = ["deep": nested]
        for index in 0..<500 { headers["h\(index)"] = .string(String(repeating: "v", count: 20)) }
        try await publishRaw(
            url: sandbox.brokerURL, routingKey: "SendMessage",
            body: IntentEnvelope(id: "nested-headers", type: "SendMessage", parameters: ["recipients": "Dan", "content": "deep"], submittedAt: 0).encoded(),
            messageID: "nested-headers", headers: headers)
        let nestedResult = try await sandbox.status(["nested-headers", "--wait", "--timeout", "20"])
        #expect(nestedResult.exitCode == 0, "\(nestedResult)")

        // An id full of SQL and quoting is an id like any other.
        let oddID = "x'); DELETE FROM intent_status; -- \"quoted\" %_"
        try await publishRaw(
            url: sandbox.brokerURL, routingKey: "SendMessage",
            body: IntentEnvelope(id: oddID, type: "SendMessage", parameters: ["recipients": "Erin", "content": "odd id"], submittedAt: 0).encoded(),
            messageID: oddID)
        let oddResult = try await sandbox.status([oddID, "--wait", "--timeout", "20", "--json"])
        #expect(oddResult.exitCode == 0, "\(oddResult)")
        #expect(try sandbox.messageCount(intentID: oddID) == 1)
        #expect(try sandbox.statusStore().list(limit: 1000).count >= cases.count + 2)

        // Strings are stored verbatim, however hostile or long.
        let hostile = "Robert'); DROP TABLE message;-- \"quoted\" % _ \\ 🙂 " + String(repeating: "é", count: 50_000)
        let verbatim = try await sandbox.submit(["SendMessage", "recipients=Alice", "--parameters", JSONValue.object(["content": .string(hostile)]).jsonString, "--id", "hostile", "--wait"])
        #expect(verbatim.exitCode == 0, "\(verbatim.stderr)")
        let stored = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
            .queryFirst("SELECT content FROM message WHERE intent_id = 'hostile'") { $0.text(0) }
        #expect(stored == hostile)

        #expect(worker.isRunning)
        #expect(worker.pid == pid)
        #expect(try await settledDepth("intents.dead", expected: 1, sandbox: sandbox) == 1)
    }

    @Test func sigtermDuringLoadLosesNothingAndExitsZero() async throws {
        let sandbox = try await Sandbox("sigterm")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--recorder-only"], expectedConnections: 1)
        let worker = try await sandbox.startWorker(["--concurrency", "4", "--grace", "10"], expectedConnections: 1)

        let count = 400
        let url = try BrokerURL(sandbox.brokerURL)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread {
                continuation.resume(with: Result {
                    let publisher = try IntentPublisher(url: url)
                    defer { publisher.close() }
                    for index in 0..<count {
                        try publisher.submit(IntentEnvelope(
                            id: "load-\(index)", type: "BookAppointment",
                            parameters: ["hairdresser": "Carol", "time": "10:00", "callSeconds": .number(0.01)],
                            submittedAt: Date().timeIntervalSince1970))
                    }
                })
            }.start()
        }
        try await eventually(timeout: 60, "some intents to be handled") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            return try (sandbox.statusStore().counts()[.success] ?? 0) >= 20
        }
        let stopped = Date()
        let exitCode = try await worker.stop(timeout: 20)
        #expect(exitCode == 0)
        #expect(Date().timeIntervalSince(stopped) < 10)
        let handledBefore = try sandbox.statusStore().counts()[.success] ?? 0
        #expect(handledBefore < count, "the worker should have been stopped mid-run")

        try await sandbox.startWorker(["--concurrency", "8"], expectedConnections: 1)
        try await eventually(timeout: 120, "every intent to end after the restart") {
            (try sandbox.statusStore().counts()[.success] ?? 0) == count
        }
        let rows = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
            .queryFirst("SELECT count(*), count(DISTINCT intent_id) FROM appointment") { ($0.int(0), $0.int(1)) }
        #expect(rows?.0 == count)
        #expect(rows?.1 == count)
    }

    @Test func aHandlerLongerThanTheHeartbeatIsNotRedelivered() async throws {
        let sandbox = try await Sandbox("long-handler")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--with-recorder", "--heartbeat", "1"])
        let result = try await sandbox.submit([
            "BookAppointment", "hairdresser=Erin", "time=9:00", "callSeconds=4", "--id", "long-call", "--wait", "--timeout", "30",
        ])
        #expect(result.exitCode == 0, "\(result)")
        let status = try #require(try sandbox.statusStore().status(id: "long-call"))
        #expect(status.attempts == 1)
    }
}

/// A counter shared between a test and a task it started.
final class Counter: Sendable {
    private let storage = Mutex(0)
    func increment() { storage.withLock { $0 += 1 } }
    var value: Int { storage.withLock { $0 } }
}
