import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

/// What an operator uses: remote status, the live watch, --wait woken by
/// events, the metrics file and retention, against the real broker and store.
@Suite(.timeLimit(.minutes(10)))
struct OperationsTests {
    /// Publishes envelopes with confirms, off the cooperative pool.
    static func submit(_ envelopes: [IntentEnvelope], url: String) async throws {
        let broker = try BrokerURL(url)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread {
                continuation.resume(
                    with: Result {
                        let publisher = try IntentPublisher(url: broker)
                        defer { publisher.close() }
                        for envelope in envelopes { try publisher.submit(envelope) }
                    })
            }.start()
        }
    }

    /// 100 intents: 80 messages to Alice (success), 10 to "Jeff" (needsInput), 10 sold-out soups (failure).
    static func mixedRun(prefix: String, count: Int = 100) -> [IntentEnvelope] {
        (0..<count).map { index in
            let id = String(format: "\(prefix)-%03d", index)
            let now = Date().timeIntervalSince1970
            switch index % 10 {
            case 3:
                return IntentEnvelope(id: id, type: "SendMessage", parameters: ["recipients": ["Jeff"], "content": "3pm?"], submittedAt: now)
            case 7:
                return IntentEnvelope(id: id, type: "OrderSoup", parameters: ["soup": "Minestrone", "quantity": 1], submittedAt: now)
            default:
                return IntentEnvelope(
                    id: id, type: "SendMessage", parameters: ["recipients": ["Alice Smith"], "content": .string("n\(index)")], submittedAt: now)
            }
        }
    }

    static func settled(_ sandbox: Sandbox, ids: [String]) throws -> Bool {
        guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
        let store = try sandbox.statusStore()
        return try ids.allSatisfy { id in
            guard let status = try store.status(id: id) else { return false }
            return status.state.isTerminal || status.state == .needsInput
        }
    }

    @Test func remoteStatusGivesTheSameAnswersAsTheLocalStore() async throws {
        let sandbox = try await Sandbox("remote")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker()
        #expect(try await sandbox.submit(["SendMessage", "recipients=Alice", "content=hi", "--id", "remote-ok", "--wait"]).exitCode == 0)
        #expect(try await sandbox.submit(["SendMessage", "recipients=Jeff", "content=hi", "--id", "remote-jeff", "--wait"]).exitCode == 3)

        // A machine without the database file: it asks the recorder, with or without --remote.
        let elsewhere = sandbox.directory.appendingPathComponent("no-such-folder/status.sqlite").path
        func remote(_ arguments: [String]) async throws -> ToolResult {
            try await run(
                Paths.tool("intent-status"), arguments + ["--remote"],
                environment: sandbox.environment.merging(["INTENT_STATUS_DB": elsewhere]) { _, new in new })
        }
        let blind = try await run(
            Paths.tool("intent-status"), ["remote-ok", "--json"],
            environment: sandbox.environment.merging(["INTENT_STATUS_DB": elsewhere]) { _, new in new })
        #expect(blind.exitCode == 0, "\(blind)")
        #expect(blind.stdout == (try await remote(["remote-ok", "--json"])).stdout)
        // A broker no recorder answers on: the read fails as unavailable.
        let unanswered = try await run(
            Paths.tool("intent-status"), ["remote-ok"],
            environment: ["INTENT_STATUS_DB": elsewhere, "INTENT_BROKER_URL": "amqp://guest:guest@127.0.0.1:1/%2f"])
        #expect(unanswered.exitCode == 69, "\(unanswered)")

        for (id, code) in [("remote-ok", Int32(0)), ("remote-jeff", 3), ("remote-unknown", 4)] {
            let local = try await sandbox.status([id, "--json"])
            let far = try await remote([id, "--json"])
            #expect(local.exitCode == code, "\(local)")
            #expect(far.exitCode == code, "\(far)")
            #expect(!far.stdout.isEmpty && far.stdout == local.stdout, "local: \(local.stdout)\nremote: \(far.stdout)")
            let localText = try await sandbox.status([id])
            let farText = try await remote([id])
            #expect(farText.stdout == localText.stdout)
        }
        let localList = try await sandbox.status(["list", "--json"])
        let farList = try await remote(["list", "--json"])
        #expect(farList.exitCode == 0 && farList.stdout == localList.stdout, "\(farList)")
        #expect(farList.stdout.contains("remote-ok") && farList.stdout.contains("remote-jeff"))
        // --wait over the broker returns at once for a settled intent.
        let waited = try await remote(["remote-ok", "--wait", "--json"])
        #expect(waited.exitCode == 0 && waited.stdout.contains("\"state\":\"success\""), "\(waited)")

        // With no recorder running, a remote read says so at once (69), it does not hang.
        #expect(try await worker.stop() == 0)
        // The broker deletes the recorder's request queue once its connection is gone, a moment after the process.
        try await eventually(timeout: 60, "the broker to delete the recorder's request queue") {
            do {
                return try await queueDepth("intents.status.requests", sandbox: sandbox) == nil
            } catch {
                return false  // rabbitmqctl failed on a busy machine: asked again
            }
        }
        let alone = try await remote(["remote-ok"])
        #expect(alone.exitCode == 69, "\(alone)")
        #expect(alone.stderr.contains("no recorder answers"))
    }

    @Test func aRunThatEndsWithinTheStartedEventDelayPublishesItsOutcomeAlone() async throws {
        let sandbox = try await Sandbox("started-delay")
        defer { Task { await sandbox.tearDown() } }
        // A delay longer than any run here: the outcome alone, with when its run started.
        var worker = try await sandbox.startWorker(["--with-recorder", "--started-event-delay", "600"])
        let watcher = try await sandbox.startWatcher()
        let quick = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=quick", "--id", "quick-1", "--wait"])
        #expect(quick.exitCode == 0, "\(quick)")
        try await eventually(timeout: 20, "the watcher to print quick-1's outcome") {
            try watcher.events(of: "quick-1").contains { $0.state == .success }
        }
        let alone = try watcher.events(of: "quick-1")
        #expect(alone.map(\.state) == [.success])
        let startedAt = try #require(alone.first?.startedAt)
        #expect(startedAt <= alone[0].at)
        let stored = try #require(try sandbox.statusStore().status(id: "quick-1"))
        #expect(stored.state == .success && stored.startedAt == startedAt, "\(stored)")

        // No delay: the run is seen to start before it ends.
        #expect(try await worker.stop() == 0)
        worker = try await sandbox.startWorker(["--with-recorder", "--started-event-delay", "0"])
        let seen = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=seen", "--id", "quick-2", "--wait"])
        #expect(seen.exitCode == 0, "\(seen)")
        try await eventually(timeout: 20, "the watcher to print quick-2's outcome") {
            try watcher.events(of: "quick-2").contains { $0.state == .success }
        }
        #expect(try watcher.events(of: "quick-2").map(\.state) == [.inProgress, .success])
        // The watcher follows the broker; the store has the start once the recorder has written it.
        try await eventually(timeout: 20, "the store to record quick-2's start") {
            try sandbox.statusStore().status(id: "quick-2")?.startedAt != nil
        }
        watcher.process.interrupt()
        #expect(try await watcher.stop() == 0)
        #expect(try await worker.stop() == 0)
    }

    @Test func watchShowsEveryStateChangeOfAHundredIntentsInOrder() async throws {
        let sandbox = try await Sandbox("watch")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--with-recorder", "--concurrency", "16"])
        let everything = try await sandbox.startWatcher()
        let failures = try await sandbox.startWatcher(["--type", "OrderSoup", "--state", "failure"], log: "watch-failures.log")

        let envelopes = Self.mixedRun(prefix: "watch")
        try await Self.submit(envelopes, url: sandbox.brokerURL)
        let ids = envelopes.map(\.id)
        try await eventually(timeout: 60, "all 100 intents to settle") { try Self.settled(sandbox, ids: ids) }
        // The store holds every outcome; the watchers have seen them once their logs show each one.
        let settled = try Dictionary(uniqueKeysWithValues: ids.map { id in (id, try #require(try sandbox.statusStore().status(id: id)).state) })
        try await eventually(timeout: 20, "both watchers to print every outcome the store holds") {
            let lines = everything.log.split(separator: "\n").filter { $0.hasPrefix("{") }
            let last = Dictionary(lines.compactMap { try? StatusEvent.decode(Array($0.utf8)) }.map { ($0.id, $0.state) }) { _, later in later }
            let failed = failures.log.split(separator: "\n").filter { $0.contains("OrderSoup  failure") }.count
            return settled.allSatisfy { last[$0.key] == $0.value } && failed == settled.values.filter { $0 == .failure }.count
        }
        everything.process.interrupt()
        failures.process.interrupt()
        #expect(try await everything.stop() == 0)
        #expect(try await failures.stop() == 0)

        var seen: [String: [StatusEvent]] = [:]
        for line in everything.log.split(separator: "\n") where line.hasPrefix("{") {
            let event = try StatusEvent.decode(Array(line.utf8))
            seen[event.id, default: []].append(event)
        }
        #expect(Set(seen.keys) == Set(ids))
        let store = try sandbox.statusStore()
        for id in ids {
            let events = seen[id] ?? []
            let stored = try #require(try store.status(id: id))
            // Started (or, for a run that ended within the worker's started-event delay, the
            // outcome alone, saying when its run started), then the outcome the store holds, never moving backwards.
            #expect(events.first?.state == .inProgress || events.first?.startedAt != nil, "\(id): \(events.map(\.state))")
            #expect(events.last?.state == stored.state, "\(id): \(events.map(\.state)) vs stored \(stored.state)")
            #expect(
                zip(events, events.dropFirst()).allSatisfy { $0.state.rank <= $1.state.rank && $0.at <= $1.at },
                "\(id): \(events.map(\.state))")
        }
        #expect(seen.values.filter { $0.last?.state == .success }.count == 80)
        #expect(seen.values.filter { $0.last?.state == .needsInput }.count == 10)
        let failureLines = failures.log.split(separator: "\n").filter { !$0.hasPrefix("intent-status:") }
        #expect(failureLines.count == 10, "\(failureLines)")
        #expect(failureLines.allSatisfy { $0.contains("OrderSoup  failure soupSoldOut") })
    }

    /// `watch` says "watching" once its queue is bound, not before: an event
    /// published the moment it says so is printed. Ten watchers, one event each.
    @Test func anEventPublishedOnceWatchSaysItWatchesIsPrinted() async throws {
        let sandbox = try await Sandbox("watch-ready")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker()  // declares the status exchange
        let owner = try BrokerURL(sandbox.brokerURL).user
        for round in 1...10 {
            let watcher = try await sandbox.startWatcher()
            let event = StatusEvent(id: "ready-\(round)", type: "SendMessage", state: .success, attempt: 1, owner: owner)
            try await publishRaw(
                url: sandbox.brokerURL, routingKey: event.routingKey, body: event.encoded(), messageID: event.id, exchange: "intents.status")
            try await eventually(timeout: 20, "the watcher to print ready-\(round)") { try watcher.events(of: event.id).count == 1 }
            watcher.process.interrupt()
            #expect(try await watcher.stop() == 0)
        }
        #expect(try await worker.stop() == 0)
    }

    /// `intent-status --wait` (local, then remote) returns the stored outcome
    /// after the terminal event, and prints how long after it exited: the
    /// figure the README quotes (woken by the event, not by a polling tick).
    /// Both ends come from clocks outside this busy test process: the event's
    /// own time (`at`, set by the worker just before it publishes) and bash's
    /// `$EPOCHREALTIME` right after the tool exits. The figure is printed, not
    /// asserted: a test holds on a busy machine.
    @Test(arguments: [false, true]) func waitLatencyAfterTheTerminalEvent(remote: Bool) async throws {
        let sandbox = try await Sandbox(remote ? "wait-remote" : "wait-local")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let id = "wait-\(remote)"
        let url = try BrokerURL(sandbox.brokerURL)
        let terminal = Mutex<StatusEvent?>(nil)
        let listening = Atomic<Bool>(false)
        let listener = Thread {
            do {
                let feed = try StatusFeed(url: url, bindings: [("intents.status", "*.BookAppointment.success")])
                defer { feed.close() }
                listening.store(true, ordering: .sequentiallyConsistent)
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    if let delivery = try feed.next(timeout: 0.1), delivery.messageID == id {
                        terminal.withLock { $0 = try? StatusEvent.decode(delivery.body) }
                        return
                    }
                }
            } catch {}
        }
        listener.start()
        try await eventually(timeout: 60, "the test's own listener") { listening.load(ordering: .sequentiallyConsistent) }

        // A 1.5 s call: the waiting tool is well into its wait when the event comes.
        let booked = try await sandbox.submit(["BookAppointment", "hairdresser=Alice", "time=3pm", "callSeconds=1.5", "--id", id])
        #expect(booked.exitCode == 0, "\(booked)")
        var environment = sandbox.environment
        if remote { environment["INTENT_STATUS_DB"] = sandbox.directory.appendingPathComponent("absent/status.sqlite").path }
        let tool = [Paths.tool("intent-status"), id, "--wait", "--json", "--timeout", "20"] + (remote ? ["--remote"] : [])
        let waited = try await run(
            "/bin/bash", ["-c", #""$@"; code=$?; echo "exited $EPOCHREALTIME" >&2; exit $code"#, "wait"] + tool,
            environment: environment, timeout: 30)
        #expect(waited.exitCode == 0, "\(waited)")
        #expect(waited.stdout.contains("\"state\":\"success\""))
        // The test's own listener reads its queue on a thread of its own: it may come after the tool.
        try await eventually(timeout: 20, "the test's listener to see the terminal event") { terminal.withLock { $0 != nil } }
        let event = try #require(terminal.withLock { $0 })
        let exited = try #require(waited.stderr.split(separator: "\n").last { $0.hasPrefix("exited ") }.flatMap { Double($0.dropFirst(7)) })
        let lag = exited - event.at
        print(
            "intent-status --wait\(remote ? " --remote" : ""): exited \(String(format: "%.1f", lag * 1000)) ms after the worker published the terminal event"
        )
        #expect(lag > 0, "the wait ended \(-lag * 1000) ms before the worker published the outcome it reported")
    }

    @Test func theMetricsFileParsesAndItsCountersMatchTheStore() async throws {
        let sandbox = try await Sandbox("metrics")
        defer { Task { await sandbox.tearDown() } }
        let metricsPath = sandbox.directory.appendingPathComponent("textfile/intentqueue.prom").path
        let worker = try await sandbox.startWorker(["--with-recorder", "--metrics-file", metricsPath, "--metrics-interval", "0.5"])
        let envelopes = Self.mixedRun(prefix: "metrics", count: 60)
        try await Self.submit(envelopes, url: sandbox.brokerURL)
        let ids = envelopes.map(\.id)
        try await eventually(timeout: 60, "all intents to settle") { try Self.settled(sandbox, ids: ids) }
        func sum(_ name: String, _ labels: [String: String] = [:], in samples: [PrometheusText.Sample]) -> Double {
            samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
                .map(\.value).reduce(0, +)
        }
        // The broker's figures come from a probe with timeouts of its own: waited for while the worker runs.
        try await eventually(timeout: 60, "the metrics file to show the broker up and the work queue's consumers") {
            guard let text = try? String(contentsOfFile: metricsPath, encoding: .utf8) else { return false }
            let samples = try PrometheusText.parse(text)
            return sum("intentqueue_broker_up", in: samples) == 1
                && samples.contains { $0.name == "intentqueue_queue_consumers" && $0.labels["queue"] == "intents.work" && $0.value >= 1 }
        }
        #expect(try await worker.stop() == 0)

        // The counters as the worker wrote them when it stopped.
        let samples = try PrometheusText.parse(try String(contentsOfFile: metricsPath, encoding: .utf8))
        func total(_ name: String, _ labels: [String: String] = [:]) -> Double { sum(name, labels, in: samples) }
        let counts = try sandbox.statusStore().counts()
        let stored = counts.values.reduce(0, +)
        #expect(stored == 60)
        #expect(total("intentqueue_intents_received_total") == Double(stored))
        #expect(total("intentqueue_intents_finished_total", ["state": "success"]) == Double(counts[.success] ?? 0))
        #expect(total("intentqueue_intents_finished_total", ["state": "failure"]) == Double(counts[.failure] ?? 0))
        #expect(total("intentqueue_intents_finished_total", ["state": "failure", "code": "soupSoldOut"]) == 6)
        #expect(total("intentqueue_intents_needs_input_total") == Double(counts[.needsInput] ?? 0))
        #expect(total("intentqueue_worker_handled_total") == 60)
        #expect(total("intentqueue_worker_handle_duration_seconds_count") == 60)
        #expect(total("intentqueue_worker_handle_duration_seconds_bucket", ["le": "+Inf"]) == 60)
        // Written by rename: no temporary file is left beside it.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: metricsPath).deletingLastPathComponent().path)
        #expect(leftovers == ["intentqueue.prom"])
    }

    /// An expired question and a cancel are decided by workers, like any
    /// outcome, and reach `watch` as their events: a question past its time to
    /// live is expired by the worker the recorder asks; a cancel sent while no
    /// worker runs shows `cancelRequested` and is decided when one starts.
    @Test func expiriesAndCancelsAreDecidedByWorkersAndReachWatch() async throws {
        let sandbox = try await Sandbox("announce")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker(["--with-recorder", "--question-ttl", "1"])
        let watch = try await sandbox.startWatcher()

        // Not --wait: the question lives 1 s, and a busy machine may read the store only once it expired.
        #expect(try await sandbox.submit(["SendMessage", "recipients=Jeff", "content=3pm?", "--id", "ask"]).exitCode == 0)
        try await eventually(timeout: 30, "the question to expire") { try sandbox.statusStore().status(id: "ask")?.state == .failure }
        #expect(try sandbox.statusStore().status(id: "ask")?.response?.code == FailureCode.expired)
        #expect(try await sandbox.status(["ask"]).exitCode == 1)
        try await eventually(timeout: 60, "the expiry on the stream") { try watch.events(of: "ask").contains { $0.state == .failure } }
        let expiry = try #require(try watch.events(of: "ask").first { $0.state == .failure })
        let asked = try watch.events(of: "ask").map(\.state)
        #expect((asked.firstIndex(of: .needsInput) ?? .max) < (asked.firstIndex(of: .failure) ?? .min), "asked, then expired: \(asked)")
        #expect(expiry.response?.code == FailureCode.expired)
        #expect(expiry.worker != "recorder", "a worker decided it: \(expiry.worker ?? "-")")

        #expect(try await worker.stop() == 0)
        try await sandbox.startWorker(["--recorder-only"], expectedConnections: 1)
        #expect(try await sandbox.submit(["SendMessage", "recipients=Alice", "content=hi", "--id", "drop"]).exitCode == 0)
        try await eventually(timeout: 60, "the submission to be recorded") { try sandbox.statusStore().status(id: "drop")?.state == .queued }
        let requested = try await sandbox.status(["cancel", "drop", "--timeout", "1"])
        #expect(requested.exitCode == 3, "no worker runs: requested, not decided: \(requested)")
        try await eventually(timeout: 60, "the request to be recorded") {
            try sandbox.statusStore().status(id: "drop")?.state == .cancelRequested
        }
        try await sandbox.startWorker([], expectedConnections: 1)
        try await eventually(timeout: 20, "the cancel on the stream") { try watch.events(of: "drop").contains { $0.state == .canceled } }
        try await eventually(timeout: 60, "the cancel in the store") { try sandbox.statusStore().status(id: "drop")?.state == .canceled }
        #expect(try sandbox.messageCount(intentID: "drop") == 0, "its handler never ran")
        #expect(try sandbox.statusStore().conflictCount() == 0)
        watch.process.interrupt()
        #expect(try await watch.stop() == 0)
    }

    /// Retry queues were classic queues before the cluster work: an empty one is
    /// replaced by its quorum queue; one still holding retries is kept and used
    /// (older workers may still fill it during a rolling upgrade), and the worker serves.
    @Test func classicRetryQueuesOfAnEarlierVersionAreReplacedWhenEmpty() async throws {
        let sandbox = try await Sandbox("upgrade")
        defer { Task { await sandbox.tearDown() } }
        let url = try BrokerURL(sandbox.brokerURL)
        let old = try AMQPConnection(url: url)
        for (queue, ttl) in [("intents.retry.1s", Int64(1_000)), ("intents.retry.256s", 256_000)] {
            try old.declareQueue(queue, arguments: [.integer("x-message-ttl", ttl), .string("x-dead-letter-exchange", "intents")])
        }
        // A retry waiting in the 256 s queue.
        try old.enableConfirms()
        #expect(
            try old.publishConfirmed(
                [OutgoingMessage(exchange: "", routingKey: "intents.retry.256s", body: Array("{}".utf8))], timeout: 30, context: "a retry") == 1)
        #expect(try old.inspectQueue("intents.retry.256s").messages == 1)
        old.close()

        try await sandbox.startWorker()
        func acceptsQuorum(_ queue: String, ttl: Int64) throws -> Bool {
            let check = try AMQPConnection(url: url)
            defer { check.close() }
            do {
                try check.declareQueue(
                    queue,
                    arguments: [
                        .string("x-queue-type", "quorum"), .integer("x-message-ttl", ttl), .string("x-dead-letter-exchange", "intents"),
                    ])
                return true
            } catch  where error.replyCode == 406 {
                return false
            }
        }
        #expect(try acceptsQuorum("intents.retry.1s", ttl: 1_000), "the empty classic queue was replaced")
        #expect(try !acceptsQuorum("intents.retry.256s", ttl: 256_000), "the classic queue holding a retry was kept")
        let booked = try await sandbox.submit([
            "BookAppointment", "hairdresser=Alice", "time=3pm", "callSeconds=0.1", "busyCalls=1", "--wait", "--timeout", "20",
        ])
        #expect(booked.exitCode == 0, "a retry goes through the new quorum queue: \(booked)")
    }

    @Test func retentionRemovesFinishedIntentsAndKeepsWaitingOnes() async throws {
        let sandbox = try await Sandbox("retention")
        defer { Task { await sandbox.tearDown() } }
        // Kept 10 s: long enough that a test paused by a busy machine still sees each one settled.
        try await sandbox.startWorker(["--with-recorder", "--retain", "10s"])
        let envelopes = Self.mixedRun(prefix: "retain", count: 40)
        try await Self.submit(envelopes, url: sandbox.brokerURL)
        let ids = envelopes.map(\.id)
        // Each counted once it is seen settled: on a busy machine the first may be gone before the last is recorded.
        // And the longest a finished one was seen kept: retention must wait for --retain, not take them at once.
        var seen: Set<String> = []
        var longestKept = 0.0
        func look() throws -> [IntentStatus] {
            let now = Date().timeIntervalSince1970
            let present = try sandbox.statusStore().list(limit: 100)
            for status in present {
                if let finished = status.finishedAt { longestKept = max(longestKept, now - finished) }
            }
            return present
        }
        try await eventually(timeout: 60, "every intent to be seen settled") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            for status in try look() where status.state.isTerminal || status.state == .needsInput { seen.insert(status.id) }
            return seen.count == ids.count
        }
        // Finished ones go about 10 s after they end; the 4 questions stay.
        try await eventually(timeout: 90, "retention to remove the finished intents") { try look().count == 4 }
        #expect(longestKept >= 5, "a finished intent was seen at most \(longestKept) s after it ended, with --retain 10s")
        let left = try sandbox.statusStore().list(limit: 100)
        #expect(left.allSatisfy { $0.state == .needsInput })
        #expect(try await sandbox.status(["retain-000"]).exitCode == 4)
    }

    /// A worker forgets, in the app's ledger, the intents decided longer ago than `--ledger-retain`, and only those:
    /// a copy of a forgotten intent's submission runs again (what a ledger that stops growing costs), and a copy of
    /// one decided within the retention only has its outcome published again.
    @Test func aLedgerForgetsDecisionsOlderThanItsRetentionAndOnlyThose() async throws {
        let sandbox = try await Sandbox("ledger-retention")
        defer { Task { await sandbox.tearDown() } }
        var worker = try await sandbox.startWorker(["--with-recorder"])
        for id in ["ledger-old", "ledger-new"] {
            let sent = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=hi", "--id", id, "--wait"])
            #expect(sent.exitCode == 0, "\(sent)")
        }
        try await eventually(timeout: 60, "both messages to be stored") {
            try sandbox.messageCount(intentID: "ledger-old") == 1 && sandbox.messageCount(intentID: "ledger-new") == 1
        }
        #expect(try await worker.stop() == 0)
        // Three days pass for one of them.
        let app = try Database(path: sandbox.appDatabasePath)
        try app.run("UPDATE intent_effect SET handled_at = handled_at - 259200 WHERE intent_id = 'ledger-old'")
        #expect(app.changes == 1)
        worker = try await sandbox.startWorker(["--with-recorder", "--retain", "1h", "--ledger-retain", "2d"])
        try await eventually(timeout: 60, "the worker to forget the old decision (log: \(worker.logPath))") {
            worker.log.contains("forgot 1 intents decided more than 172800 s ago")
        }
        let remembered = try app.queryFirst("SELECT count(*) FROM intent_effect WHERE intent_id LIKE 'ledger-%'") { $0.int(0) }
        #expect(remembered == 1, "the decision within the retention is kept")
        for id in ["ledger-new", "ledger-old"] {
            let again = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=hi", "--id", id])
            #expect(again.exitCode == 0, "\(again)")
        }
        try await eventually(timeout: 60, "the copy of the forgotten intent to run again") {
            try sandbox.messageCount(intentID: "ledger-old") == 2
        }
        try await eventually(timeout: 60, "the copy of the remembered intent to be answered from its ledger (log: \(worker.logPath))") {
            worker.log.split(separator: "\n").contains { $0.contains("already decided") && $0.contains("ledger-new") }
        }
        #expect(try sandbox.messageCount(intentID: "ledger-new") == 1, "the remembered intent did not run again")
    }
}

/// A reader of Prometheus' text exposition format, strict enough to catch a
/// malformed file: comment lines are HELP or TYPE, every sample belongs to a
/// declared family, histograms have ordered cumulative buckets ending at +Inf.
enum PrometheusText {
    struct Sample {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    static func parse(_ text: String) throws -> [Sample] {
        var types: [String: String] = [:]
        var samples: [Sample] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                let parts = line.split(separator: " ", maxSplits: 3)
                guard parts.count >= 3, ["HELP", "TYPE"].contains(parts[1]) else { throw Malformed(description: "bad comment: \(line)") }
                if parts[1] == "TYPE" {
                    guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                        throw Malformed(description: "bad TYPE: \(line)")
                    }
                    types[String(parts[2])] = String(parts[3])
                }
                continue
            }
            var rest = Substring(line)
            let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" || $0 == ":" }
            guard !name.isEmpty, !(name.first!.isNumber) else { throw Malformed(description: "bad metric name: \(line)") }
            rest = rest.dropFirst(name.count)
            var labels: [String: String] = [:]
            if rest.first == "{" {
                rest = rest.dropFirst()
                while rest.first != "}" {
                    let key = rest.prefix { $0 != "=" }
                    rest = rest.dropFirst(key.count)
                    guard rest.hasPrefix("=\"") else { throw Malformed(description: "bad label: \(line)") }
                    rest = rest.dropFirst(2)
                    var value = ""
                    while let character = rest.first, character != "\"" {
                        rest = rest.dropFirst()
                        if character == "\\", let escaped = rest.first {
                            rest = rest.dropFirst()
                            value.append(escaped == "n" ? "\n" : escaped)
                        } else {
                            value.append(character)
                        }
                    }
                    guard rest.first == "\"" else { throw Malformed(description: "unterminated label: \(line)") }
                    rest = rest.dropFirst()
                    labels[String(key)] = value
                    if rest.first == "," { rest = rest.dropFirst() }
                    guard !rest.isEmpty else { throw Malformed(description: "unterminated labels: \(line)") }
                }
                rest = rest.dropFirst()
            }
            guard rest.first == " ", let value = Double(rest.dropFirst().replacingOccurrences(of: "+Inf", with: "inf")) else {
                throw Malformed(description: "bad value: \(line)")
            }
            let family = ["_bucket", "_sum", "_count"].reduce(String(name)) { found, suffix in
                types[found] == nil && found.hasSuffix(suffix) ? String(found.dropLast(suffix.count)) : found
            }
            guard types[family] != nil else { throw Malformed(description: "sample of an undeclared family: \(line)") }
            samples.append(Sample(name: String(name), labels: labels, value: value))
        }
        // Histograms: cumulative buckets, +Inf equal to _count.
        for (family, type) in types where type == "histogram" {
            let buckets = samples.filter { $0.name == family + "_bucket" }
            for series in Set(buckets.map { $0.labels.filter { $0.key != "le" } }) {
                let ordered = buckets.filter { $0.labels.filter { $0.key != "le" } == series }
                    .sorted {
                        (Double($0.labels["le"]!.replacingOccurrences(of: "+Inf", with: "inf")) ?? 0)
                            < (Double($1.labels["le"]!.replacingOccurrences(of: "+Inf", with: "inf")) ?? 0)
                    }
                guard zip(ordered, ordered.dropFirst()).allSatisfy({ $0.value <= $1.value }), ordered.last?.labels["le"] == "+Inf" else {
                    throw Malformed(description: "\(family) buckets are not cumulative up to +Inf for \(series)")
                }
                let count = samples.first { $0.name == family + "_count" && $0.labels == series }?.value
                guard count == ordered.last?.value else { throw Malformed(description: "\(family)_count differs from its +Inf bucket") }
            }
        }
        return samples
    }
}
