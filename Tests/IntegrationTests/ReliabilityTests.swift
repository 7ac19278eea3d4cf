import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

/// Nothing lost, nothing done twice: retries, poison messages, bad input and shutdown.
@Suite(.timeLimit(.minutes(10)))
struct ReliabilityTests {
    /// A queue deleted under its consumer (an operator's `rabbitmqctl delete_queue`) is noticed: the broker says so
    /// (the client asks for consumer_cancel_notify at login), and the recorder reconnects and declares it again,
    /// rather than wait on it for ever while the store stops changing.
    @Test func aDeletedLedgerQueueIsDeclaredAgainAndRecordingGoesOn() async throws {
        let sandbox = try await Sandbox("deleted-ledger")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker()
        let before = try await sandbox.submit(["SendMessage", "recipients=Alice Smith", "content=before", "--wait"])
        #expect(before.exitCode == 0, "\(before)")
        let vhost = String(sandbox.brokerURL.split(separator: "/").last ?? "")
        _ = try await TestBroker.shared.control(["delete_queue", "-p", vhost, "intents.ledger"])
        try await eventually(timeout: 90, "the recorder to consume the ledger queue again (log: \(worker.logPath))") {
            try await queueConsumers("intents.ledger", sandbox: sandbox) == 1
        }
        let after = try await sandbox.submit(
            ["SendMessage", "recipients=Alice Smith", "content=after", "--wait", "--timeout", "60"], timeout: 90)
        #expect(after.exitCode == 0, "\(after)\n\(worker.log)")
    }

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

    @Test func theRecorderShowsWhatItRecordsAtOnceAndAcksItAllOnceSynced() async throws {
        let sandbox = try await Sandbox("recorder-sync")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()

        for index in 0..<5 {
            let sent = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=synced \(index)", "--id", "synced-\(index)", "--wait"])
            #expect(sent.exitCode == 0, "\(sent)")
        }
        // Every submission and event the recorder wrote is acked (its sync follows within its interval):
        // none stays in the ledger queue to be recorded again.
        #expect(try await settledDepth("intents.ledger", expected: 0, sandbox: sandbox) == 0)
        for index in 0..<5 {
            #expect(try sandbox.statusStore().status(id: "synced-\(index)")?.state == .success)
        }
    }

    /// A worker that dies on receiving any delivery of an intent whose id starts with `prefix`, started again
    /// whenever it dies (as systemd would), until the task is canceled; `crashes` counts its deaths.
    static func restarted(dyingOn prefix: String, in sandbox: Sandbox, crashes: Counter) -> Task<Void, any Error> {
        Task {
            var generation = 0
            while !Task.isCancelled {
                let worker = try WorkerProcess(
                    arguments: ["--concurrency", "1", "--prefetch", "1"],
                    environment: sandbox.environment.merging(["INTENTQUEUE_FAULT": "afterReceive@\(prefix)"]) { _, new in new },
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
    }

    /// An answer that kills the worker every time is dead-lettered, and its question is still open in the intent's
    /// ledger. The recorder used to record `failure/deadLettered` itself, while the ledger would still take another
    /// answer (and the store would then have said `success` after `failure`). Now the workers end the question in
    /// the ledger, and the store's failure is the ledger's: the outcome a second answer finds.
    @Test func anAnswerThatKillsTheWorkerEveryTimeEndsItsQuestionInTheLedger() async throws {
        let sandbox = try await Sandbox("lost-answer")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--recorder-only", "--lost-answer-grace", "1"], expectedConnections: 1)
        let asking = try await sandbox.startWorker([], expectedConnections: 1)
        let asked = try await sandbox.submit(["SendMessage", "recipients=Jeff", "content=3pm?", "--id", "lost-answer", "--wait"])
        #expect(asked.exitCode == 3, "\(asked)")
        #expect(try await asking.stop() == 0)

        // Workers that die on every delivery of this intent, restarted as systemd would.
        let crashing = Self.restarted(dyingOn: "lost-answer", in: sandbox, crashes: Counter())
        defer { crashing.cancel() }
        let answered = try await sandbox.submit(["--answer", "lost-answer", "recipients=Jeff Baker"])
        #expect(answered.exitCode == 0, "\(answered)")
        // Dead-lettered (and then the recorder's first request to end its question, which these workers die on too).
        try await eventually(timeout: 120, "the answer to be dead-lettered") {
            let connection = try AMQPConnection(url: try BrokerURL(sandbox.brokerURL))
            defer { connection.close() }
            return try connection.inspectQueue("intents.dead").messages >= 1
        }
        crashing.cancel()
        _ = try? await crashing.value
        #expect(try sandbox.statusStore().status(id: "lost-answer")?.terminal == false, "no failure the ledger does not hold")

        // A worker that takes the recorder's request (asked again every minute) ends the question in the ledger.
        try await sandbox.startWorker([], expectedConnections: 1)
        try await eventually(timeout: 150, "the workers to end the question") {
            try sandbox.statusStore().status(id: "lost-answer")?.terminal == true
        }
        let ended = try #require(try sandbox.statusStore().status(id: "lost-answer"))
        #expect(ended.state == .failure && ended.response?.code == FailureCode.deadLettered, "\(ended)")
        let ledger = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        let decided = try ledger.queryFirst("SELECT code FROM intent_effect WHERE intent_id = 'lost-answer'") { $0.string(0) }
        #expect(decided == FailureCode.deadLettered, "the ledger holds the outcome the store shows")
        #expect(try sandbox.messageCount(intentID: "lost-answer") == 0)
    }

    @Test func aMessageThatKillsTheWorkerEveryTimeIsDeadLetteredOnceWhileOthersFlow() async throws {
        let sandbox = try await Sandbox("poison")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--recorder-only"], expectedConnections: 1)

        // A supervisor restarts the worker whenever it dies, as systemd would.
        let crashes = Counter()
        let supervisor = Self.restarted(dyingOn: "poison-", in: sandbox, crashes: crashes)
        defer { supervisor.cancel() }
        try await eventually(timeout: 30, "the first worker to bind the work queue") {
            let log = (try? String(contentsOfFile: sandbox.directory.appendingPathComponent("crashing-0.log").path, encoding: .utf8)) ?? ""
            return log.contains(" connected ")
        }

        try await publishRaw(
            url: sandbox.brokerURL, routingKey: "SendMessage",
            body: IntentEnvelope(id: "poison-1", type: "SendMessage", parameters: ["recipients": ["Alice"], "content": "boom"], submittedAt: 0)
                .encoded(),
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
        // The store keeps the dead letter until the requeued run's outcome is recorded (this recorder knows no
        // operator, so the requeue does not reopen it), and `--wait` ends at once on a stored outcome: the
        // store is watched until it changes.
        try await eventually(timeout: 60, "the requeued intent to end again") {
            try sandbox.statusStore().status(id: "poison-1")?.response?.code != FailureCode.deadLettered
        }
        let healed = try await sandbox.status(["poison-1", "--wait", "--timeout", "30"])
        #expect(healed.exitCode == 0, "\(healed)")
        #expect(try sandbox.messageCount(intentID: "poison-1") == 1)
        #expect(try await settledDepth("intents.dead", expected: 0, sandbox: sandbox) == 0)
    }

    /// Every kind of hostile input at once, among innocent intents: each ends
    /// as its documented failure (or, with no usable id, is listed by
    /// `intent-status dead`), the same worker goes on, no innocent intent is
    /// redelivered, and nothing raw reaches the metrics file.
    @Test func aHostileBatchEndsAsDocumentedFailuresAndTheSameWorkerGoesOn() async throws {
        let sandbox = try await Sandbox("bad-input")
        defer { Task { await sandbox.tearDown() } }
        let metricsPath = sandbox.directory.appendingPathComponent("hostile.prom").path
        let worker = try await sandbox.startWorker(["--with-recorder", "--metrics-file", metricsPath, "--metrics-interval", "0.2"])
        let pid = worker.pid

        func envelope(_ fields: String) -> [UInt8] { Array(fields.utf8) }
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let manyRecipients = "[" + String(repeating: "\"a\",", count: 200_000) + "\"a\"]"
        let cases: [(id: String, body: [UInt8], reason: String)] = [
            ("bad-json", envelope("{\"version\":1,"), "not valid JSON"),
            ("bad-utf8", [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D], "not valid JSON"),
            ("bad-version", envelope(#"{"version":2,"id":"bad-version","type":"SendMessage","parameters":{}}"#), "version 2"),
            ("bad-type", envelope(#"{"version":1,"id":"bad-type","parameters":{}}"#), "'type'"),
            ("bad-parameters", envelope(#"{"version":1,"id":"bad-parameters","type":"SendMessage","parameters":[1]}"#), "'parameters'"),
            (
                "bad-field", envelope(#"{"version":1,"id":"bad-field","type":"SendMessage","parameters":{"recipients":{"a":1},"content":"x"}}"#),
                "recipients"
            ),
            (
                "too-big",
                envelope(
                    #"{"version":1,"id":"too-big","type":"SendMessage","parameters":{"content":""# + String(repeating: "x", count: 1_100_000) + "\"}}"
                ), "over the limit"
            ),
            (
                "duplicate-keys", envelope(#"{"version":1,"id":"duplicate-keys","type":"SendMessage","type":"OrderSoup","parameters":{}}"#),
                "appears twice"
            ),
            (
                "deeply-nested",
                envelope(#"{"version":1,"id":"deeply-nested","type":"SendMessage","parameters":{"content":"#) + envelope(deep) + envelope("}}"),
                "nested more than"
            ),
            (
                "string-submitted-at",
                envelope(#"{"version":1,"id":"string-submitted-at","type":"SendMessage","submittedAt":"yesterday","parameters":{}}"#), "'submittedAt'"
            ),
            (
                "long-type", envelope(#"{"version":1,"id":"long-type","type":""# + String(repeating: "T", count: 300) + #"","parameters":{}}"#),
                "over the limit of 100"
            ),
            ("crlf-type", envelope(#"{"version":1,"id":"crlf-type","type":"Send\r\nMessage","parameters":{}}"#), "not made of ASCII letters"),
            (
                "huge-list",
                envelope(#"{"version":1,"id":"huge-list","type":"SendMessage","parameters":{"recipients":"# + manyRecipients + #","content":"x"}}"#),
                "over the limit of 1000"
            ),
            // The wire is strict: a list written as text is a command line's shorthand, not JSON's.
            (
                "text-for-list",
                envelope(#"{"version":1,"id":"text-for-list","type":"SendMessage","parameters":{"recipients":"Alice, Bob","content":"x"}}"#),
                "expected an array"
            ),
        ]
        // Innocent intents before, between and after the hostile ones.
        var innocents: [String] = []
        func innocent() async throws {
            let id = "innocent-\(innocents.count)"
            innocents.append(id)
            try await publishRaw(
                url: sandbox.brokerURL, routingKey: "SendMessage",
                body: IntentEnvelope(id: id, type: "SendMessage", parameters: ["recipients": ["Alice Smith"], "content": "hi"], submittedAt: 0)
                    .encoded(),
                messageID: id, userID: "guest")
        }
        try await innocent()
        for item in cases {
            try await publishRaw(url: sandbox.brokerURL, routingKey: "SendMessage", body: item.body, messageID: item.id)
            try await innocent()
        }
        // No usable id anywhere — none at all, one of 300 bytes, one with a newline and an escape
        // sequence: nothing to record them against, so they go to the dead-letter queue.
        let nameless: [(body: [UInt8], messageID: String?)] = [
            ([], nil),
            (envelope(#"{"version":1,"id":""# + String(repeating: "i", count: 300) + #"","type":"SendMessage","parameters":{}}"#), nil),
            (envelope(#"{"version":1,"id":"line\nbreak\u001b[2J","type":"SendMessage","parameters":{}}"#), "line\nbreak\u{1B}[2J"),
        ]
        for item in nameless {
            try await publishRaw(url: sandbox.brokerURL, routingKey: "SendMessage", body: item.body, messageID: item.messageID)
        }
        // A retry counter of 2^63 - 1 is clamped, not added into an overflow.
        try await publishRaw(
            url: sandbox.brokerURL, routingKey: "SendMessage",
            body: IntentEnvelope(id: "huge-retries", type: "SendMessage", parameters: ["recipients": ["Bob Jones"], "content": "x"], submittedAt: 0)
                .encoded(),
            messageID: "huge-retries", headers: [Topology.retriesHeader: .integer(.max), "x-delivery-count": .integer(.max)], userID: "guest")
        try await innocent()

        for item in cases {
            let result = try await sandbox.status([item.id, "--wait", "--timeout", "20", "--json"])
            #expect(result.exitCode == 1, "\(item.id): \(result)")
            let code = item.id == "huge-list" ? FailureCode.outcomeTooLarge : FailureCode.invalidIntent
            #expect(result.stdout.contains(code), "\(item.id): \(result.stdout.prefix(400))")
            #expect(result.stdout.contains(item.reason), "\(item.id) should mention \(item.reason): \(result.stdout.prefix(400))")
        }
        // Deeply nested and very many headers are skipped, not walked: the intent is handled.
        var nested = HeaderValue.string("bottom")
        for level in 0..<100 { nested = .table(["level-\(level)": nested, "x-delivery-count": .string("not a number")]) }
        var headers: [String: HeaderValue] = ["deep": nested]
        for index in 0..<500 { headers["h\(index)"] = .string(String(repeating: "v", count: 20)) }
        try await publishRaw(
            url: sandbox.brokerURL, routingKey: "SendMessage",
            body: IntentEnvelope(id: "nested-headers", type: "SendMessage", parameters: ["recipients": ["Dan"], "content": "deep"], submittedAt: 0)
                .encoded(),
            messageID: "nested-headers", headers: headers)
        let nestedResult = try await sandbox.status(["nested-headers", "--wait", "--timeout", "20"])
        #expect(nestedResult.exitCode == 0, "\(nestedResult)")

        // An id full of SQL and quoting is an id like any other.
        let oddID = "x'); DELETE FROM intent_status; -- \"quoted\" %_"
        try await publishRaw(
            url: sandbox.brokerURL, routingKey: "SendMessage",
            body: IntentEnvelope(id: oddID, type: "SendMessage", parameters: ["recipients": ["Erin"], "content": "odd id"], submittedAt: 0).encoded(),
            messageID: oddID)
        let oddResult = try await sandbox.status([oddID, "--wait", "--timeout", "20", "--json"])
        #expect(oddResult.exitCode == 0, "\(oddResult)")
        #expect(try sandbox.messageCount(intentID: oddID) == 1)
        #expect(try sandbox.statusStore().list(limit: 1000).count >= cases.count + 2)

        // Strings are stored verbatim, however hostile or long.
        let hostile = "Robert'); DROP TABLE message;-- \"quoted\" % _ \\ 🙂 " + String(repeating: "é", count: 50_000)
        let verbatim = try await sandbox.submit([
            "SendMessage", "recipients=Alice", "--parameters", JSONValue.object(["content": .string(hostile)]).jsonString, "--id", "hostile",
            "--wait",
        ])
        #expect(verbatim.exitCode == 0, "\(verbatim.stderr)")
        let stored = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
            .queryFirst("SELECT content FROM message WHERE intent_id = 'hostile'") { $0.text(0) }
        #expect(stored == hostile)

        #expect(try await sandbox.status(["huge-retries", "--wait", "--timeout", "20"]).exitCode == 0)
        for id in innocents {
            let status = try #require(try await waitForEnd(sandbox, id))
            #expect(status.state == .success && status.attempts == 1, "\(id) was redelivered or failed: \(status.state) \(status.attempts)")
        }
        #expect(try sandbox.messageCount(intentID: "huge-list") == 0, "a list of 200,001 names wrote nothing")
        // The nameless ones are listed under ids made from their bodies.
        let expected = Set(nameless.map { DeadLetters.syntheticID(for: $0.body) })
        try await eventually(timeout: 20, "the nameless dead letters to be listed") {
            Set(try sandbox.statusStore().deadLettered(limit: 100).map(\.id)).isSuperset(of: expected)
        }
        let dead = try await sandbox.status(["dead"])
        #expect(expected.allSatisfy { dead.stdout.contains($0) }, "\(dead.stdout)")
        #expect(!dead.stdout.contains("\u{1B}") && !dead.stdout.contains("line\nbreak"), "no raw control characters on the terminal")

        #expect(worker.isRunning)
        #expect(worker.pid == pid)
        #expect(try await settledDepth("intents.dead", expected: nameless.count, sandbox: sandbox) == nameless.count)
        // The databases are their owner's alone, whatever the umask the test runner has.
        for path in [sandbox.statusStorePath, sandbox.appDatabasePath] {
            let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
            #expect(mode & 0o077 == 0, "\(path) is mode \(String(mode, radix: 8))")
        }
        try await eventually(timeout: 60, "the metrics file") { FileManager.default.fileExists(atPath: metricsPath) }
        let metrics = try String(contentsOfFile: metricsPath, encoding: .utf8)
        #expect(!metrics.contains("\r") && !metrics.contains("Send\r\nMessage"), "a type from a body never reaches the file raw")
        var types = Set<String>()
        for line in metrics.split(separator: "\n") {
            guard let start = line.firstRange(of: "type=\"") else { continue }
            types.insert(String(line[start.upperBound...].prefix { $0 != "\"" }))
        }
        #expect(types.isSubset(of: ["BookAppointment", "OrderSoup", "SendMessage", "SendPayment", "other"]), "\(types)")
    }

    func waitForEnd(_ sandbox: Sandbox, _ id: String) async throws -> IntentStatus? {
        try await eventually(timeout: 30, "\(id) to end") { try sandbox.statusStore().status(id: id)?.state.isTerminal ?? false }
        return try sandbox.statusStore().status(id: id)
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
                continuation.resume(
                    with: Result {
                        let publisher = try IntentPublisher(url: url)
                        defer { publisher.close() }
                        for index in 0..<count {
                            try publisher.submit(
                                IntentEnvelope(
                                    id: "load-\(index)", type: "BookAppointment",
                                    parameters: ["hairdresser": "Carol", "time": "10:00", "callSeconds": .number(0.2)],
                                    submittedAt: Date().timeIntervalSince1970))
                        }
                    })
            }.start()
        }
        // 400 calls of 0.2 s at four at a time: 20 s of work, so that the stop comes mid-run however busy the machine.
        try await eventually(timeout: 60, "some intents to be handled") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            return try (sandbox.statusStore().counts()[.success] ?? 0) >= 20
        }
        // A worker still running 20 s after SIGTERM (its grace is 10 s) fails the test in stop(timeout:).
        let exitCode = try await worker.stop(timeout: 20)
        #expect(exitCode == 0)
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
        // Heartbeat 5 s and a 12 s call, longer than two missed heartbeats: the connection must outlive it. (With 2 s, a
        // machine that starved the process for 4 s would fail the test for a reason of its own.)
        try await sandbox.startWorker(["--with-recorder", "--heartbeat", "5"])
        let result = try await sandbox.submit(
            [
                "BookAppointment", "hairdresser=Erin", "time=9:00", "callSeconds=12", "--id", "long-call", "--wait", "--timeout", "90",
            ], timeout: 120)
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
