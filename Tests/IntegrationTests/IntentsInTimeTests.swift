import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
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
        try await sandbox.startRecorderWithNoWorker()

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

    /// Scheduled a few seconds out: each is `scheduled`, with its due time,
    /// until the recorder releases it; none starts before it is due; one
    /// canceled meanwhile ends `canceled` and never runs.
    @Test func scheduledIntentsRunWhenDueAndACanceledOneNever() async throws {
        let sandbox = try await Sandbox("schedule")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let start = Date()
        var due: [String: Double] = [:]
        for index in 0..<6 {
            let id = "later-\(index)"
            // Due 10 s out, so that a busy machine still submits each before its time;
            // the one to cancel is due long after the cancel, however slow this machine is.
            let seconds = index == 5 ? 600 : 10 + Double(index) * 0.25
            let when = start.addingTimeInterval(seconds)
            let time = index.isMultiple(of: 2) ? ["--at", Self.iso(when)] : ["--in", "\(seconds)s"]
            let submitted = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=later \(index)", "--id", id, "--json"] + time)
            #expect(submitted.exitCode == 0 && submitted.stdout.contains(#""state":"scheduled""#), "\(submitted)")
            due[id] = when.timeIntervalSince1970
        }
        try await eventually(timeout: 30, "the submissions to be recorded as scheduled") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            let store = try sandbox.statusStore()
            return try due.keys.allSatisfy { try store.status(id: $0) != nil }
        }
        let canceled = try await sandbox.status(["cancel", "later-5", "--timeout", "30"])
        #expect(canceled.exitCode == 0 && canceled.stdout.contains("canceled"), "\(canceled)")
        let listed = try await sandbox.status(["list", "--state", "scheduled", "--json"])
        for id in due.keys where id != "later-5" {
            // Still scheduled unless this machine was so slow that it is already due.
            let status = try #require(try sandbox.statusStore().status(id: id))
            #expect(status.state != .queued && status.dueAt != nil, "\(id): \(status.state)")
            if status.state == .scheduled { #expect(listed.stdout.contains(id), "\(listed)") }
        }

        let ids = Array(due.keys)
        try await eventually(timeout: 120, "every scheduled intent to end") {
            let store = try sandbox.statusStore()
            return try ids.allSatisfy { try store.status(id: $0)?.state.isTerminal ?? false }
        }
        var lateness: [Double] = []
        for id in ids.sorted() {
            let status = try #require(try sandbox.statusStore().status(id: id))
            if id == "later-5" {
                #expect(status.state == .canceled, "\(status)")
                #expect(try sandbox.messageCount(intentID: id) == 0, "a canceled scheduled intent never runs")
                continue
            }
            #expect(status.state == .success, "\(id): \(status.state)")
            #expect(try sandbox.messageCount(intentID: id) == 1, "\(id) sent once")
            let started = try #require(status.startedAt ?? status.finishedAt)
            let dueAt = try #require(status.dueAt)
            #expect(dueAt >= due[id]! - 0.001, "\(id): the due time given (to the millisecond, for --at)")
            // Its due time was computed on this machine's clock, as the worker's: never started early.
            #expect(started >= dueAt, "\(id) started \(dueAt - started) s before it was due")
            lateness.append(started - dueAt)
        }
        print("scheduled intents started after their due time by: \(lateness.map { String(format: "%.3f", $0) }.joined(separator: ", ")) s")
    }

    /// BookAppointment resolves at submission: booked with "Jeff" for later,
    /// it asks which Jeff at once; the answer is scheduled as that turn (a
    /// watcher sees `scheduled` with the due time), and the call is made only
    /// once it is due, with the Jeff chosen.
    @Test func aTypeResolvedAtSubmissionAsksAtOnceAndIsHandledWhenDue() async throws {
        let sandbox = try await Sandbox("ahead")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let watcher = try await sandbox.startWatcher(["--type", "BookAppointment"])

        let due = Date().addingTimeInterval(20)
        let asked = try await sandbox.submit(
            ["BookAppointment", "hairdresser=Jeff", "time=15:00", "--at", Self.iso(due), "--id", "ahead", "--wait"])
        #expect(asked.exitCode == 3 && asked.stdout.contains("Jeff Baker") && asked.stdout.contains("Jeff Chen"), "\(asked)")
        let answered = try await sandbox.submit(["--answer", "ahead", "hairdresser=Jeff Chen"])
        #expect(answered.exitCode == 0, "\(answered)")
        let answeredAt = Date()
        try await eventually(timeout: 60, "the answer to be recorded") {
            (try sandbox.statusStore().status(id: "ahead")?.turn ?? 0) == 1
        }
        if answeredAt < due {
            // Answered ahead of its time (as it is unless this machine took 20 s for the above): scheduled again.
            let status = try #require(try sandbox.statusStore().status(id: "ahead"))
            #expect([.scheduled, .inProgress, .success].contains(status.state), "\(status.state)")
            try await eventually(timeout: 30, "the watcher to show it scheduled as the answered turn") {
                watcher.log.contains("ahead  BookAppointment  scheduled  turn 1  due")
            }
        }
        try await eventually(timeout: 120, "the call to be booked") { try sandbox.statusStore().status(id: "ahead")?.state.isTerminal ?? false }
        let status = try #require(try sandbox.statusStore().status(id: "ahead"))
        #expect(status.state == .success, "\(status)")
        let app = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        let booked = try app.query("SELECT hairdresser, created_at FROM appointment WHERE intent_id = 'ahead'") { ($0.string(0), $0.double(1)) }
        #expect(booked.count == 1 && booked.first?.0 == "Jeff Chen", "\(booked)")
        #expect((booked.first?.1 ?? 0) >= due.timeIntervalSince1970, "the call was made only once it was due")
        watcher.process.interrupt()
        #expect(try await watcher.stop() == 0)
    }

    /// `--owner-rate BookAppointment=3/6s`: of Alice's nine calls no more
    /// than three start within any 6 s (each run's start in the status store),
    /// and Bob's, submitted behind them, do not wait for hers.
    @Test func anOwnerOverItsRateWaitsItsTurnAndOthersGoOn() async throws {
        let secure = try await SecureSandbox("owner-rate")
        defer { Task { await secure.tearDown() } }
        let (alices, bobs) = try await Self.bookAlicesThenBobs(
            on: secure, workerArguments: ["--owner-rate", "BookAppointment=3/6s"], alices: 9, label: "rated", callSeconds: 0)
        let sandbox = secure.sandbox
        let store = try sandbox.statusStore()
        let starts = try alices.map { try #require(try store.status(id: $0)?.startedAt) }.sorted()
        // Any four starts span at least the window (a start is counted by the worker's clock just before it
        // runs; the run's recorded start is later, by as much as a busy machine delays it: allow 4 s of it).
        // Without the rate, all nine would start together: spans of about 0.
        let spans = zip(starts, starts.dropFirst(3)).map { $1 - $0 }
        #expect(spans.allSatisfy { $0 >= 2 }, "four of Alice's starts within 2 s: \(spans)")
        print("owner rate 3/6s: any four of Alice's nine starts spanned \(spans.map { String(format: "%.2f", $0) }.joined(separator: ", ")) s")
        let bobsLast = try bobs.map { try #require(try store.status(id: $0)?.startedAt) }.max()!
        #expect(bobsLast < starts.last!, "Bob's calls did not wait behind Alice's")
        let app = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        #expect(try app.queryFirst("SELECT count(*) FROM appointment") { $0.int(0) } == 11, "each booked once")
    }

    /// The recorder is away when a worker sees the early copy (keeps it and
    /// acks it), and that worker is gone before its due time: the recorder,
    /// started after it, releases it to a worker elsewhere.
    @Test func aScheduledIntentWhoseWorkersAreGoneIsReleasedByTheRecorderAfterItsTime() async throws {
        let sandbox = try await Sandbox("schedule-late-recorder")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker(["--log-level", "debug"], expectedConnections: 1)
        let submitted = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=while away", "--id", "away", "--in", "40s"])
        #expect(submitted.exitCode == 0, "\(submitted)")
        let due = Date().addingTimeInterval(40)
        try await eventually(timeout: 60, "the worker to keep the early copy and ack it") { worker.log.contains("kept, and run then") }
        // The worker, and with it the only ledger that keeps the intent, is gone before it is due.
        #expect(try await worker.stop() == 0)
        try #require(Date() < due, "the worker took longer to stop than the 40 s the intent waits: this test needs it gone first")
        try await eventually(timeout: 60, "its due time to pass") { Date() > due }
        // A worker elsewhere (a ledger of its own), with the recorder: released as a fallback, a grace after its time.
        var elsewhere = sandbox.environment
        elsewhere["HAIRDRESSERS_DB"] = sandbox.directory.appendingPathComponent("elsewhere.sqlite").path
        let other = try WorkerProcess(
            arguments: ["--with-recorder"], environment: elsewhere, logPath: sandbox.directory.appendingPathComponent("elsewhere.log").path)
        defer { Task { _ = try? await other.stop() } }
        try await other.waitForConnections(2)
        try await eventually(timeout: 60, "the intent to run once the recorder has it") {
            FileManager.default.fileExists(atPath: sandbox.statusStorePath) && (try? sandbox.statusStore().status(id: "away")?.state) == .success
        }
        let database = try Database(path: elsewhere["HAIRDRESSERS_DB"]!, mode: .readOnly)
        #expect(try database.queryFirst("SELECT count(*) FROM message WHERE intent_id = 'away'") { $0.int(0) } == 1)
        #expect(try sandbox.messageCount(intentID: "away") == 0, "the first worker never ran it")
    }

    /// A year out: stored with its due time, listed, canceled.
    @Test func anIntentAYearOutIsStoredListedAndCanceled() async throws {
        let sandbox = try await Sandbox("schedule-year")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let when = Date().addingTimeInterval(365 * 86_400)
        let submitted = try await sandbox.submit([
            "SendMessage", "recipients=Alice", "content=happy new year", "--id", "next-year", "--at", Self.iso(when),
        ])
        #expect(submitted.exitCode == 0, "\(submitted)")
        try await eventually(timeout: 30, "the submission to be recorded") {
            FileManager.default.fileExists(atPath: sandbox.statusStorePath) && (try? sandbox.statusStore().status(id: "next-year")) != nil
        }
        let status = try #require(try sandbox.statusStore().status(id: "next-year"))
        #expect(status.state == .scheduled)
        #expect(abs((status.dueAt ?? 0) - when.timeIntervalSince1970) < 0.001)
        let shown = try await sandbox.status(["next-year"])
        #expect(shown.exitCode == 3 && shown.stdout.contains("scheduled") && shown.stdout.contains("due:"), "\(shown)")
        let listed = try await sandbox.status(["list", "--state", "scheduled"])
        #expect(listed.stdout.contains("next-year"), "\(listed)")
        let canceled = try await sandbox.status(["cancel", "next-year", "--timeout", "30"])
        #expect(canceled.exitCode == 0 && canceled.stdout.contains("canceled"), "\(canceled)")
        #expect(try sandbox.statusStore().status(id: "next-year")?.state == .canceled)
    }

    /// 100 submitters at once with one deduplication key: one intent, one
    /// effect, and each of them told its id; past the window, the key makes a new one.
    @Test func aHundredSubmissionsOfOneKeyMakeOneIntentAndAreAllToldItsID() async throws {
        let sandbox = try await Sandbox("dedupe")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let started = Date()
        var told: [String] = []
        for wave in 0..<5 {
            let results = try await withThrowingTaskGroup(of: ToolResult.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await sandbox.submit([
                            "SendMessage", "recipients=Alice", "content=the oven is on (\(wave * 20 + index))", "--dedupe-key", "oven-alert",
                            "--dedupe-for", "10m", "--json",
                        ])
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for result in results {
                #expect(result.exitCode == 0, "\(result)")
                let id = try #require(try JSONValue.parse(Array(result.stdout.utf8))["id"]?.stringValue, "\(result)")
                told.append(id)
            }
        }
        #expect(told.count == 100)
        #expect(Set(told).count == 1, "every submitter was told the same id: \(Set(told))")
        let id = try #require(told.first)
        let status = try await sandbox.status([id, "--wait", "--timeout", "60"])
        #expect(status.exitCode == 0, "\(status)")
        try await eventually(timeout: 60, "the duplicates to pass the worker") {
            // Each submission was published under that id: all 100 reach a worker, which runs one.
            (try? sandbox.statusStore().status(id: id)?.state) == .success
        }
        #expect(try sandbox.messageCount(intentID: id) == 1, "one effect")
        let intents = try sandbox.statusStore().list(state: nil, type: "SendMessage", owner: nil, limit: 1_000)
        #expect(intents.count == 1, "one intent: \(intents.map(\.id))")
        print("dedupe: \(told.count) submissions in \(String(format: "%.1f", Date().timeIntervalSince(started))) s, one intent \(id)")

        // Past its window, the key stands for a new intent.
        // Before the first claim, so that a second one back before it ends was surely within the window.
        let window = Date().addingTimeInterval(1)
        let short = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=a", "--dedupe-key", "short", "--dedupe-for", "1s"])
        let within = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=b", "--dedupe-key", "short", "--dedupe-for", "1s"])
        if Date() < window {
            #expect(within.stdout == short.stdout && within.stderr.contains("its intent is"), "\(within)")
        }
        let claimed = Date()
        try await eventually(timeout: 30, "the 1 s window to pass") { Date() > claimed.addingTimeInterval(1) }
        let after = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=c", "--dedupe-key", "short", "--dedupe-for", "1s"])
        #expect(after.exitCode == 0 && after.stdout != short.stdout && !after.stderr.contains("its intent is"), "\(after)")
    }

    /// A deduplicated submission that waits for its outcome is published once: with `--wait`, the tool used to
    /// publish it a second time. With no worker running, what it published stays in the work queue to be counted.
    @Test func aDeduplicatedSubmissionThatWaitsIsPublishedOnce() async throws {
        let sandbox = try await Sandbox("dedupe-wait")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startRecorderWithNoWorker()
        let result = try await sandbox.submit([
            "SendMessage", "recipients=Alice", "content=once", "--id", "once-1", "--dedupe-key", "once", "--wait", "--timeout", "1",
        ])
        #expect(result.exitCode == 3 && result.stdout.contains("once-1"), "no worker: not ended in time \(result)")
        let url = try BrokerURL(sandbox.brokerURL)
        let published = Mutex<[String]>([])
        try await Self.onThread {
            let connection = try AMQPConnection(url: url)
            defer { connection.close() }
            // Every confirmed publish is in the queue: read them all (closing the connection puts them back).
            var ids: [String] = []
            while let message = try connection.get(Topology().workQueue) { ids.append(message.messageID ?? "") }
            published.withLock { $0 = ids }
        }
        #expect(published.withLock { $0 } == ["once-1"])
    }

    /// Twenty high-priority intents, one after another, each submitted behind
    /// a backlog of normal ones (20,000 queued before the worker started):
    /// each starts at the worker's next free slot, not after the backlog.
    @Test func highPriorityIntentsGoAheadOfTwentyThousandQueuedOnes() async throws {
        let sandbox = try await Sandbox("priority")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startRecorderWithNoWorker()
        let url = try BrokerURL(sandbox.brokerURL)
        let bulk = (0..<20_000).map { index in
            IntentEnvelope(
                id: "bulk-\(index)", type: "SendMessage", parameters: ["recipients": ["Alice Smith"], "content": .string("batch \(index)")],
                submittedAt: Date().timeIntervalSince1970)
        }
        try await Self.onThread {
            let publisher = try IntentPublisher(url: url)
            defer { publisher.close() }
            try publisher.submit(bulk, window: 256)
        }
        try await sandbox.startWorker(["--concurrency", "8"], expectedConnections: 1)
        let store = try Database(path: sandbox.statusStorePath, mode: .readOnly)
        func bulkStarted(from: Double, to: Double) throws -> Int {
            try store.queryFirst(
                "SELECT count(*) FROM intent_status WHERE id LIKE 'bulk-%' AND started_at > ? AND started_at < ?", [.real(from), .real(to)]
            ) { $0.int(0) } ?? 0
        }
        func bulkDone() throws -> Int {
            try store.queryFirst("SELECT count(*) FROM intent_status WHERE id LIKE 'bulk-%' AND rank = 3") { $0.int(0) } ?? 0
        }
        var waits: [Double] = []
        var checked = 0
        for probe in 0..<20 {
            // Probed only while much of the backlog waits: more than 2,000 still to run.
            guard try bulkDone() < 18_000 else { break }
            let id = "urgent-\(probe)"
            var envelope = IntentEnvelope(
                id: id, type: "SendMessage", parameters: ["recipients": ["Bob Jones"], "content": "now"], submittedAt: Date().timeIntervalSince1970)
            envelope.priority = .high
            let submitted = envelope
            // Counted from the broker's confirm, not from the envelope's stamp: from then on it is surely queued,
            // however long a busy machine took to connect and publish (if it started sooner, nothing is counted).
            let confirmed = Mutex(0.0)
            try await Self.onThread {
                let publisher = try IntentPublisher(url: url)
                defer { publisher.close() }
                try publisher.submit(submitted)
                confirmed.withLock { $0 = Date().timeIntervalSince1970 }
            }
            // What still waited once it was queued: without the priority lane, it would wait for all of them.
            let waiting = 20_000 - (try bulkDone())
            try await eventually(timeout: 120, "\(id) to end") { (try? sandbox.statusStore().status(id: id)?.state) == .success }
            let status = try #require(try sandbox.statusStore().status(id: id))
            let started = try #require(status.startedAt)
            let overtaking = try bulkStarted(from: confirmed.withLock { $0 }, to: started)
            // Without the priority lane it would wait for every one queued ahead of it (thousands). Checked only
            // while thousands waited: a publish a busy machine held up may find the backlog nearly run.
            if waiting >= 2_000 {
                checked += 1
                #expect(overtaking < 1_000, "\(id): \(overtaking) normal intents started between its confirm and its start")
            }
            waits.append(started - envelope.submittedAt)
        }
        #expect(waits.count >= 5, "the backlog lasted for at least five probes")
        #expect(checked >= 1, "at least one probe was checked while thousands waited")
        let sorted = waits.sorted()
        print(
            "priority: \(waits.count) high-priority intents behind a backlog of 20,000 started after p50 \(String(format: "%.1f", sorted[sorted.count / 2] * 1000)) ms, p99 \(String(format: "%.1f", sorted[min(sorted.count - 1, sorted.count * 99 / 100)] * 1000)) ms, max \(String(format: "%.1f", sorted.last! * 1000)) ms (debug build)"
        )
    }

    /// `--owner-limit BookAppointment=2`: Alice's twelve calls run two at a
    /// time (measured from the worker's own times: each run's start in the
    /// status store, its booking's time in the app's database), and Bob's two,
    /// submitted behind them, do not wait for Alice's.
    @Test func anOwnerOverTheLimitWaitsItsTurnAndOthersGoOn() async throws {
        let secure = try await SecureSandbox("owner-limit")
        defer { Task { await secure.tearDown() } }
        let (alices, bobs) = try await Self.bookAlicesThenBobs(
            on: secure, workerArguments: ["--owner-limit", "BookAppointment=2"], alices: 12, label: "call", callSeconds: 0.4)
        let sandbox = secure.sandbox
        let store = try sandbox.statusStore()
        let app = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        func interval(_ id: String) throws -> (start: Double, end: Double) {
            let started = try #require(try store.status(id: id)?.startedAt)
            let booked = try #require(
                try app.queryFirst("SELECT created_at FROM appointment WHERE intent_id = ?", [.text(id)]) { $0.double(0) })
            return (started, booked)
        }
        func mostAtOnce(_ intervals: [(start: Double, end: Double)]) -> Int {
            intervals.map { probe in intervals.filter { $0.start <= probe.start && probe.start < $0.end }.count }.max() ?? 0
        }
        let alice = try alices.map(interval)
        let bob = try bobs.map(interval)
        #expect((1...2).contains(mostAtOnce(alice)), "Alice's calls ran at most two at a time")
        let alicesLast = alice.map(\.start).max()!
        #expect(bob.allSatisfy { $0.start < alicesLast }, "Bob's calls did not queue behind Alice's")
        #expect(try app.queryFirst("SELECT count(*) FROM appointment") { $0.int(0) } == 14, "each booked once")
    }

    /// A schedule every 2 s, two schedulers, one of them killed (kill -9) and
    /// started again: every due time is submitted, and once — one intent and
    /// one message per due time, whose ids follow 2 s apart without a gap.
    @Test func aRecurringScheduleWithTwoSchedulersSubmitsEachDueTimeOnce() async throws {
        let sandbox = try await Sandbox("recurring")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let first = try await sandbox.startWorker(["--scheduler-only"], expectedConnections: 0)
        try await sandbox.startWorker(["--scheduler-only"], expectedConnections: 0)
        let starting = Self.iso(Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3).rounded()))
        let made = try await sandbox.status([
            "schedule", "tick", "--every", "2s", "--starting", starting, "SendMessage", "recipients=Alice Smith", "content=tick",
        ])
        #expect(made.exitCode == 0 && made.stdout.contains("tick: SendMessage every 2 s"), "\(made)")
        func ticks() throws -> [String] {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return [] }
            return try sandbox.statusStore().list(type: "SendMessage", limit: 1_000).map(\.id).filter { $0.hasPrefix("tick@") }.sorted()
        }
        try await eventually(timeout: 60, "two due times to be submitted") { try ticks().count >= 2 }
        kill(first.pid, SIGKILL)
        _ = try await sandbox.startWorker(["--scheduler-only"], expectedConnections: 0)
        try await eventually(timeout: 60, "four more due times") { try ticks().count >= 6 }

        let paused = try await sandbox.status(["pause", "tick"])
        #expect(paused.exitCode == 0 && paused.stdout.contains("tick: paused"), "\(paused)")
        let listed = try await sandbox.status(["schedules", "--json"])
        #expect(listed.stdout.contains(#""paused":true"#), "\(listed)")
        let removed = try await sandbox.status(["unschedule", "tick"])
        #expect(removed.exitCode == 0, "\(removed)")
        #expect(try await sandbox.status(["schedules"]).stdout.contains("no schedules"))

        // The ids as they stood when every one was sent: a scheduler may still hold the schedule until its next
        // refresh, and a tick it submits after that look is not yet sent.
        var ids: [String] = []
        try await eventually(timeout: 60, "every submitted tick to be sent") {
            let store = try sandbox.statusStore()
            ids = try ticks()
            return try ids.allSatisfy { try store.status(id: $0)?.state == .success }
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let times = ids.compactMap { formatter.date(from: String($0.dropFirst("tick@".count)))?.timeIntervalSince1970 }
        #expect(times.count == ids.count && times.count >= 6, "\(ids)")
        #expect(times.first == formatter.date(from: starting)?.timeIntervalSince1970, "the first due time is the start: \(ids)")
        for (earlier, later) in zip(times, times.dropFirst()) {
            #expect(abs(later - earlier - 2) < 0.001, "consecutive due times, none missed: \(ids)")
        }
        for id in ids { #expect(try sandbox.messageCount(intentID: id) == 1, "\(id) sent once") }
    }

    /// A paused schedule skips its due times: resumed, it goes on from then, and does not catch up on those of
    /// the pause (a scheduler catches up only on what it missed while it was not running).
    @Test func aResumedScheduleSkipsTheDueTimesOfItsPause() async throws {
        let sandbox = try await Sandbox("resumed")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        try await sandbox.startWorker(["--scheduler-only"], expectedConnections: 0)
        let made = try await sandbox.status(["schedule", "beat", "--every", "1s", "SendMessage", "recipients=Alice Smith", "content=beat"])
        #expect(made.exitCode == 0, "\(made)")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func beats() throws -> [Double] {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return [] }
            return try sandbox.statusStore().list(type: "SendMessage", limit: 1_000).map(\.id).filter { $0.hasPrefix("beat@") }
                .compactMap { formatter.date(from: String($0.dropFirst("beat@".count)))?.timeIntervalSince1970 }.sorted()
        }
        try await eventually(timeout: 60, "two due times to be submitted") { try beats().count >= 2 }
        #expect(try await sandbox.status(["pause", "beat"]).exitCode == 0)
        let pausedAt = Date().timeIntervalSince1970
        // The pause spans several due times (the scenario itself, not a wait for the system): the scheduler sees
        // the pause at its next reading, every 2 s, each read given up to 5 s (7 s here, for a busy machine), and
        // at least four due times pass after that while it is paused.
        try await eventually(timeout: 60, "twelve seconds of due times to pass while it is paused") {
            Date().timeIntervalSince1970 >= pausedAt + 12
        }
        // The resume holds from when the recorder reads it, which is after the tool starts and before it returns: a
        // due time between the two is the resumed schedule's. So the pause is counted up to the tool's start.
        let resuming = Date().timeIntervalSince1970
        #expect(try await sandbox.status(["resume", "beat"]).exitCode == 0)
        let resumedAt = Date().timeIntervalSince1970
        try await eventually(timeout: 60, "a due time after the resume to be submitted") { try beats().contains { $0 > resumedAt } }
        let inPause = try beats().filter { $0 > pausedAt + 7 && $0 < resuming }
        #expect(inPause.isEmpty, "due times of the pause submitted: \(inPause.map { $0 - pausedAt })")
    }

    static func onThread(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// `count` calls of Alice's and two of Bob's behind them, all waiting in the queue before a worker with
    /// `workerArguments` (and a concurrency of 8) starts, so that the order they run in is the worker's, not how
    /// fast they were submitted; waited for until each is booked: their ids.
    static func bookAlicesThenBobs(
        on secure: SecureSandbox, workerArguments: [String], alices count: Int, label: String, callSeconds: Double
    ) async throws -> (alices: [String], bobs: [String]) {
        let arguments = workerArguments + ["--concurrency", "8"]
        // A first worker declares the queues and stops.
        let first = try await secure.startServices(workerArguments: arguments)
        #expect(try await first.stop() == 0, "\(first.log)")
        let alices = try await book(count, on: secure, as: secure.alice, with: "Alice", label: label, hour: 9, callSeconds: callSeconds)
        let bobs = try await book(2, on: secure, as: secure.bob, with: "Bob", label: label, hour: 10, callSeconds: callSeconds)
        try await secure.startWorker(arguments)
        let sandbox = secure.sandbox
        try await eventually(timeout: 120, "every call to be booked") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            let store = try sandbox.statusStore()
            return try (alices + bobs).allSatisfy { try store.status(id: $0)?.state == .success }
        }
        return (alices, bobs)
    }

    /// `count` calls of `user`'s to `hairdresser` (ids `<hairdresser>-<label>-<n>`), each at its own time; their ids.
    static func book(
        _ count: Int, on secure: SecureSandbox, as user: String, with hairdresser: String, label: String, hour: Int, callSeconds: Double
    ) async throws -> [String] {
        var ids: [String] = []
        for index in 0..<count {
            let id = "\(hairdresser.lowercased())-\(label)-\(index)"
            let submitted = try await secure.submit(
                as: user,
                ["BookAppointment", "hairdresser=\(hairdresser)", "time=\(hour):\(10 + index)", "callSeconds=\(callSeconds)", "--id", id])
            #expect(submitted.exitCode == 0, "\(submitted)")
            ids.append(id)
        }
        return ids
    }

    static func iso(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
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
