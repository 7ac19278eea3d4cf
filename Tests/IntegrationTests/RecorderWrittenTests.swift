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

    /// A submission held for its outcome (`submissionHold`) is written once, in the outcome's transaction and before it.
    /// The hold here is longer than any test: without it, intents submitted one at a time reach the recorder one
    /// delivery at a time, and each `queued` is written alone. So is the worker's started-event delay: a run that
    /// outlasts it (a debug build on a busy machine can take over the default 20 ms) publishes `inProgress`, which
    /// its submission is then rightly written with, before the outcome.
    @Test func aSubmissionIsWrittenOnceWithItsOutcome() async throws {
        let sandbox = try await Sandbox("recorder-hold")
        defer { Task { await sandbox.tearDown() } }
        let binder = try await sandbox.startWorker(["--concurrency", "1"], expectedConnections: 1)
        #expect(try await binder.stop() == 0)

        // Each write the recorder reported, as "queued:<id>" and "<state>:<id>" in order.
        let writes = Mutex<[[String]]>([])
        var configuration = StatusRecorder.Configuration(brokerURL: try BrokerURL(sandbox.brokerURL), storePath: sandbox.statusStorePath)
        configuration.submissionHold = 600
        configuration.written = { updates in
            let names = updates.map { update -> String in
                switch update {
                case .queued: "queued:\(update.intentID)"
                case .event(let event): "\(event.state.rawValue):\(event.id)"
                default: "other:\(update.intentID)"
                }
            }
            writes.withLock { $0.append(names) }
        }
        let recorder = StatusRecorder(configuration: configuration, logger: .disabled())
        let running = Task { try await recorder.run() }
        defer { recorder.stop() }
        try await sandbox.startWorker(["--concurrency", "4", "--started-event-delay", "600"], expectedConnections: 1)

        let ids = (0..<4).map { "held-\($0)" }
        for id in ids {
            let result = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=\(id)", "--id", id, "--wait"])
            #expect(result.exitCode == 0, "\(result)")
        }
        recorder.stop()
        try await running.value

        let written = writes.withLock { $0 }
        for id in ids {
            let queuedIn = written.indices.filter { written[$0].contains("queued:\(id)") }
            let succeededIn = written.indices.filter { written[$0].contains("success:\(id)") }
            #expect(queuedIn.count == 1, "\(id)'s submission written once: \(written)")
            #expect(succeededIn.count == 1, "\(id)'s outcome written once: \(written)")
            #expect(queuedIn == succeededIn, "\(id)'s submission written with its outcome: \(written)")
            if let batch = succeededIn.first, let queued = written[batch].firstIndex(of: "queued:\(id)"),
                let succeeded = written[batch].firstIndex(of: "success:\(id)")
            {
                #expect(queued < succeeded, "\(id)'s submission written before its outcome: \(written)")
            }
            #expect(try sandbox.statusStore().status(id: id)?.state == .success)
        }
    }

    /// A held submission is in the store before the recorder answers a remote status request about it; while one is
    /// held, the recorder acks only the ledger deliveries before it (never a status request's tag, which its channel
    /// numbers too: acking that is a channel error, and the deliveries after the last ack come again); and none is
    /// lost when the recorder stops holding one.
    @Test func aHeldSubmissionIsAnsweredAckedRightAndNotLostAtStop() async throws {
        let sandbox = try await Sandbox("recorder-hold-stop")
        defer { Task { await sandbox.tearDown() } }
        let binder = try await sandbox.startWorker(["--concurrency", "1"], expectedConnections: 1)
        #expect(try await binder.stop() == 0)

        let writes = Mutex<[String]>([])
        func startRecorder(hold: Double) throws -> (StatusRecorder, Task<Void, any Error>) {
            var configuration = StatusRecorder.Configuration(brokerURL: try BrokerURL(sandbox.brokerURL), storePath: sandbox.statusStorePath)
            configuration.submissionHold = hold
            // Every write synced (and acked) on the recorder's next turn.
            configuration.syncInterval = 0
            configuration.written = { updates in writes.withLock { $0 += updates.map(\.intentID) } }
            let recorder = StatusRecorder(configuration: configuration, logger: .disabled())
            return (recorder, Task { try await recorder.run() })
        }
        /// Asks the recorder about `id` until it has read it (exit 4 before; 3, not terminal, after).
        func askRemotely(_ id: String) async throws -> ToolResult {
            let deadline = Date().addingTimeInterval(60)
            var answer = try await sandbox.status([id, "--remote", "--json"])
            while answer.exitCode == 4, Date() < deadline {
                try await Task.sleep(for: .milliseconds(50))
                answer = try await sandbox.status([id, "--remote", "--json"])
            }
            return answer
        }
        func submit(_ id: String, _ extra: [String] = []) async throws {
            let result = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=\(id)", "--id", id] + extra)
            #expect(result.exitCode == 0, "\(result)")
        }
        let (recorder, running) = try startRecorder(hold: 600)
        defer { recorder.stop() }
        // The recorder declares, binds and consumes its queue of status requests once connected; asked before, the
        // broker refuses the request (no exchange, or unroutable), which is not the answer this test is about.
        try await eventually(timeout: 60, "the recorder to consume its status request queue") {
            // A rabbitmqctl that fails on a busy machine is asked again.
            ((try? await queueConsumers("intents.status.requests", sandbox: sandbox)) ?? 0) > 0
        }

        // No worker: the submission stays queued. The recorder answers once it has read it, and then it is stored.
        try await submit("asked")
        let answer = try await askRemotely("asked")
        #expect(answer.exitCode == 3, "\(answer)")
        #expect(answer.stdout.contains("\"queued\""), "\(answer)")
        #expect(try sandbox.statusStore().status(id: "asked")?.state == .queued)

        // Held right after those requests; then a scheduled intent (never held) is written and synced while it is held.
        try await submit("held")
        try await submit("scheduled", ["--in", "1h"])
        #expect(try await askRemotely("scheduled").exitCode == 3)

        // Stopped with a submission it may hold: written at the stop, or never taken from the queue.
        try await submit("stopped")
        recorder.stop()
        try await running.value
        let (again, runningAgain) = try startRecorder(hold: 0)
        defer { again.stop() }
        let end = Date().addingTimeInterval(60)
        while try sandbox.statusStore().status(id: "stopped") == nil, Date() < end {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try sandbox.statusStore().status(id: "stopped")?.state == .queued)
        #expect(try sandbox.statusStore().status(id: "held")?.state == .queued)
        #expect(try sandbox.statusStore().status(id: "scheduled")?.state == .scheduled)
        #expect(try await settledDepth("intents.ledger", expected: 0, sandbox: sandbox) == 0)
        again.stop()
        try await runningAgain.value
        // Each delivery acked once written: none came again to be written a second time.
        let written = writes.withLock { $0 }
        for id in ["asked", "held", "scheduled", "stopped"] {
            #expect(written.filter { $0 == id }.count == 1, "\(id) written once: \(written)")
        }
    }

    /// Scheduled intents of a type no worker serves any more come back from the broker each time they are released
    /// (every 5 s). Each return was a warning of its own, and the store's due intents were read again every 50 ms
    /// meanwhile. Now the returns are told once a minute, with how many were not, and the intents stay scheduled.
    @Test func dueIntentsOfATypeNoWorkerServesWaitQuietly() async throws {
        let sandbox = try await Sandbox("recorder-unserved")
        defer { Task { await sandbox.tearDown() } }
        let binder = try await sandbox.startWorker(["--concurrency", "1"], expectedConnections: 1)
        #expect(try await binder.stop() == 0)
        do {
            let store = try StatusStore(path: sandbox.statusStorePath)
            for index in 0..<30 {
                var envelope = IntentEnvelope(id: "retired-\(index)", type: "Retired", parameters: [:], submittedAt: 1)
                envelope.dueAt = Date().timeIntervalSince1970 - 1
                try store.record([.queued(envelope, by: .init(user: "guest"))])
            }
        }
        let warnings = Mutex<[String]>([])
        let logger = Logger(label: "recorder", level: .warning) { record in
            if record.message.contains("no worker serves Retired") { warnings.withLock { $0.append(record.message) } }
        }
        let recorder = StatusRecorder(
            configuration: .init(brokerURL: try BrokerURL(sandbox.brokerURL), storePath: sandbox.statusStorePath), logger: logger)
        let running = Task { try await recorder.run() }
        defer { recorder.stop() }
        try await eventually(timeout: 150, "a minute of returns to be told in one line") {
            warnings.withLock { $0.contains { $0.contains("more such returns") } }
        }
        let told = warnings.withLock { $0 }
        #expect(told.count == 2, "\(told)")
        // Released again every 5 s for a minute, all 30: many more returns than lines.
        let kept = told.last.flatMap { $0.split(separator: "(").last?.split(separator: " ").first.flatMap { Int($0) } } ?? 0
        #expect(kept >= 30, "\(told)")
        for index in 0..<30 { #expect(try sandbox.statusStore().status(id: "retired-\(index)")?.state == .scheduled) }
        recorder.stop()
        try await running.value
    }

    /// A delivery that records nothing (a body no one can read) is acked with the next sync, like a write: it does not
    /// wait, unacked, for the next write, which on an idle system may never come before the broker's consumer timeout.
    /// Seen in the unacked count of the recorder's channel (read from the channel itself, not from statistics that
    /// lag): none once the sync, a minute later here, is done; left unacked, it would stay one.
    @Test func aDeliveryThatRecordsNothingIsAckedWhileNothingElseComes() async throws {
        let sandbox = try await Sandbox("recorder-skip")
        defer { Task { await sandbox.tearDown() } }
        let binder = try await sandbox.startWorker(["--concurrency", "1"], expectedConnections: 1)
        #expect(try await binder.stop() == 0)

        var configuration = StatusRecorder.Configuration(brokerURL: try BrokerURL(sandbox.brokerURL), storePath: sandbox.statusStorePath)
        configuration.syncInterval = 60
        let recorder = StatusRecorder(configuration: configuration, logger: .disabled())
        let running = Task { try await recorder.run() }
        defer { recorder.stop() }
        try await publishRaw(url: sandbox.brokerURL, routingKey: "SendMessage", body: Array("not an envelope".utf8), messageID: "unreadable")
        let vhost = String(sandbox.brokerURL.split(separator: "/").last ?? "")
        /// The unacked deliveries of the virtual host's channels (nil when rabbitmqctl, busy, did not answer).
        func unacked() async -> Int? {
            guard let listed = try? await TestBroker.shared.control(["list_channels", "-q", "vhost", "messages_unacknowledged"]) else { return nil }
            return listed.split(separator: "\n").reduce(0) { total, line in
                let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
                return fields.count == 2 && fields[0] == vhost ? total + (Int(fields[1]) ?? 0) : total
            }
        }
        // Read by the recorder: none left ready in the ledger queue (the broker's own count, not rabbitmqctl's, which
        // may answer only after the sync has acked it).
        try await eventually(timeout: 60, "the recorder to have read it") {
            let connection = try AMQPConnection(url: try BrokerURL(sandbox.brokerURL))
            defer { connection.close() }
            return try connection.inspectQueue(Topology().ledgerQueue).messages == 0
        }
        try await eventually(timeout: 180, "it to be acked with the next sync, though it recorded nothing") { await unacked() == 0 }
        recorder.stop()
        try await running.value
    }
}
