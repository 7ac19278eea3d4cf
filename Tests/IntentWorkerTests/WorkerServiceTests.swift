import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

@testable import IntentWorker

/// `WorkerService` on an in-memory transport, with its handler, pipeline and a
/// real SQLite ledger: what it publishes and acks for each kind of delivery.
@Suite(.timeLimit(.minutes(10)))
struct WorkerServiceTests {
    /// "Note this down", written once to the test's database.
    struct Note: Intent {
        static let typeName = "Note"
        @Parameter("What should I note?") var text: String
        /// The handler's database fails this way: "full" (disk full) or nothing.
        @Parameter var storage: String?
    }

    struct NoteHandler: IntentHandler {
        let database: DatabaseQueue
        let ledger: (any OutcomeLedger)?
        var canceled: Canceled? = nil

        func handle(_ intent: Note, context: IntentContext) async throws -> IntentResponse {
            canceled?.note(context.intentID)
            if intent.storage == "full" { throw DatabaseError(code: 13, message: "database or disk is full", context: "writing") }
            return try await Self.write(intent.text, into: database, context: context)
        }

        static func write(_ text: String, into database: DatabaseQueue, context: IntentContext) async throws -> IntentResponse {
            try await database.write { db in
                try OnceOnly.perform(in: db, context: context) { db in
                    try db.run("INSERT INTO note(text, intent_id) VALUES (?, ?)", [.text(text), .text(context.intentID)])
                    return .success("noted")
                }
            }
        }
    }

    /// A note that is written only once the test opens its gate, whatever its
    /// task is told: a call that cannot be hung up, under the harness's time limit for it.
    struct LateNote: Intent {
        static let typeName = "LateNote"
        @Parameter("What should I note?") var text: String
    }

    struct LateNoteHandler: IntentHandler {
        let database: DatabaseQueue
        let ledger: (any OutcomeLedger)?
        let gate: Gate
        let timeLimit: Double?

        var canceled: Canceled? = nil

        static func render(_ view: IntentView) -> String? {
            "note: \(view.parameters["text"]?.stringValue ?? "?")"
        }

        func handle(_ intent: LateNote, context: IntentContext) async throws -> IntentResponse {
            await gate.wait()
            canceled?.note(context.intentID)
            return try await NoteHandler.write(intent.text, into: database, context: context)
        }
    }

    /// "Book it for then": resolved and confirmed as soon as it is submitted
    /// (its type resolves `atSubmission`), handled when it is due.
    struct Booking: Intent {
        static let typeName = "Booking"
        @Parameter("At what time?") var time: String
    }

    struct BookingHandler: IntentHandler {
        let database: DatabaseQueue
        let ledger: (any OutcomeLedger)?

        var resolutionTime: ResolutionTime { .atSubmission }

        func resolve(_ intent: Booking, context: IntentContext) async throws {
            if intent.time.isEmpty { throw intent.$time.needsValue() }
            if intent.time == "never" { throw IntentFailure(code: "noSuchTime", message: "the salon has no such time") }
        }

        func confirm(_ intent: Booking, context: IntentContext) async throws {
            try context.requestConfirmation("Book it at \(intent.time)?")
        }

        func handle(_ intent: Booking, context: IntentContext) async throws -> IntentResponse {
            try await NoteHandler.write(intent.time, into: database, context: context)
        }
    }

    /// A ping of which each owner may start two an hour.
    struct Ping: Intent {
        static let typeName = "Ping"
        @Parameter var text: String?
    }

    struct PingHandler: IntentHandler {
        let database: DatabaseQueue
        let ledger: (any OutcomeLedger)?

        var rateLimit: RateLimit? { RateLimit(2, per: 3_600) }

        func handle(_ intent: Ping, context: IntentContext) async throws -> IntentResponse {
            try await NoteHandler.write(intent.text ?? "ping", into: database, context: context)
        }
    }

    /// Whether each handler's task was canceled when it looked (by intent id).
    final class Canceled: Sendable {
        private let seen = Mutex<[String: Bool]>([:])

        func note(_ id: String) {
            let canceled = Task.isCancelled
            seen.withLock { $0[id] = canceled }
        }

        subscript(_ id: String) -> Bool? { seen.withLock { $0[id] } }
    }

    /// Closed until `open()`; whoever waits on it goes on only then.
    final class Gate: Sendable {
        private let state = Mutex<(isOpen: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let isOpen = state.withLock { state in
                    if !state.isOpen { state.waiting.append(continuation) }
                    return state.isOpen
                }
                if isOpen { continuation.resume() }
            }
        }

        /// How many wait for it now.
        var waiting: Int { state.withLock { $0.waiting.count } }

        func open() {
            let waiting = state.withLock { state in
                state.isOpen = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// A worker on an in-memory transport, its database in a temporary folder.
    final class Harness: Sendable {
        let directory: URL
        let database: DatabaseQueue
        let transport: InMemoryTransport
        let worker: WorkerService
        let running: Task<Void, any Error>
        /// Holds every `LateNote` handler until the test opens it.
        let late: Gate
        /// Whether the `Note` and `LateNote` handlers' tasks were canceled when they ran (a late one's, once let go).
        let canceled = Canceled()

        /// With `losingFirstKeptPublish`, what the first kept intent's run publishes is reported lost, as when the
        /// broker connection ends before its confirm.
        /// `lateTimeLimit` is how long a `LateNote` handler may run: an hour unless a test of the time limit
        /// makes it short, so that a test opening the gate itself passes however late a busy machine lets it.
        init(
            concurrency: Int = 4, losingFirstKeptPublish: Bool = false, startedEventDelay: Double = 0, lateTimeLimit: Double = 3_600,
            ledgerRetention: Double? = WorkerConfiguration.defaultLedgerRetention
        ) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("iq-worker-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let database = try DatabaseQueue(path: directory.appendingPathComponent("notes.sqlite").path)
            try database.sync { db in try db.execute("CREATE TABLE note(text TEXT NOT NULL, intent_id TEXT NOT NULL)") }
            self.database = database
            let late = Gate()
            self.late = late
            var registry = IntentRegistry()
            let ledger = try DatabaseOutcomeLedger(queue: database)
            try registry.register(NoteHandler(database: database, ledger: ledger, canceled: canceled))
            try registry.register(
                LateNoteHandler(database: database, ledger: ledger, gate: late, timeLimit: lateTimeLimit, canceled: canceled))
            try registry.register(BookingHandler(database: database, ledger: ledger))
            try registry.register(PingHandler(database: database, ledger: ledger))
            var configuration = WorkerConfiguration(brokerURL: try BrokerURL("amqp://guest:guest@127.0.0.1:1/%2f"), concurrency: concurrency)
            configuration.workerName = "test-worker"
            configuration.startedEventDelay = startedEventDelay
            configuration.ledgerRetention = ledgerRetention
            configuration.ledgerForgetPause = 0.05
            let topology = configuration.topology
            var made: InMemoryTransport?
            worker = try WorkerService(registry: registry, configuration: configuration, logger: .disabled()) { loop, _ in
                var loop = loop
                if losingFirstKeptPublish {
                    let settle = loop.onLocalSettled
                    let lost = Mutex(false)
                    loop.onLocalSettled = { number, done in
                        let losing = lost.withLock { lost in
                            defer { lost = true }
                            return !lost
                        }
                        settle(number, losing ? false : done)
                    }
                }
                let transport = InMemoryTransport(configuration: loop, loopback: [topology.cancelExchange])
                made = transport
                return transport
            }
            transport = made!
            running = Task { [worker] in try await worker.run() }
        }

        func stop() async {
            worker.stop()
            _ = await running.result
            try? FileManager.default.removeItem(at: directory)
        }

        @discardableResult
        func deliver(_ envelope: IntentEnvelope, headers: [String: HeaderValue] = [:], userID: String? = nil, deliveryCount: Int? = nil) -> UInt64 {
            transport.deliver(
                body: envelope.encoded(), routingKey: envelope.type, messageID: envelope.id, type: envelope.type, userID: userID, headers: headers,
                deliveryCount: deliveryCount)
        }

        func acked(_ tag: UInt64) async -> Bool {
            await transport.wait { $0.acked.contains(tag) }
        }

        /// The status events published for an intent, in order.
        func events(_ id: String) throws -> [StatusEvent] {
            try transport.published.filter { $0.exchange == "intents.status" && $0.messageID == id }.map { try StatusEvent.decode($0.body) }
        }

        /// Makes every kept intent due now in the ledger (as time passing would, without a test waiting for it).
        func makeKeptDue() throws {
            try database.sync { db in try db.run("UPDATE intent_kept SET due_at = 0") }
        }

        /// How many intents the ledger keeps to run when due.
        func kept() throws -> Int {
            try database.sync { db in try db.queryFirst("SELECT count(*) FROM intent_kept") { $0.int(0) } ?? -1 }
        }

        /// Whether the ledger holds a decided outcome of the intent.
        func decided(_ id: String) throws -> Bool {
            try database.sync { db in try db.queryFirst("SELECT count(*) FROM intent_effect WHERE intent_id = ?", [.text(id)]) { $0.int(0) } == 1 }
        }

        func notes(_ id: String) throws -> Int {
            try database.sync { db in try db.queryFirst("SELECT count(*) FROM note WHERE intent_id = ?", [.text(id)]) { $0.int(0) } ?? -1 }
        }
    }

    static func note(
        _ id: String, _ text: String? = "milk", storage: String? = nil, turn: Int = 0, expiresAt: Double? = nil, dueAt: Double? = nil
    ) -> IntentEnvelope {
        var parameters: [String: JSONValue] = [:]
        if let text { parameters["text"] = .string(text) }
        if let storage { parameters["storage"] = .string(storage) }
        return IntentEnvelope(
            id: id, type: Note.typeName, parameters: parameters, submittedAt: 0, turn: turn, expiresAt: expiresAt, dueAt: dueAt)
    }

    @Test func aRunThatEndsWithinTheDelayPublishesItsOutcomeAloneAndALongerOneItsStartFirst() async throws {
        // A delay no run here outlasts, however busy the machine: the outcome always comes first.
        let patient = try Harness(startedEventDelay: 3_600)
        let quick = patient.deliver(Self.note("quick"))
        #expect(await patient.acked(quick))
        let alone = try patient.events("quick")
        #expect(alone.map(\.state) == [.success], "superseded by its outcome")
        #expect(alone.first?.startedAt != nil, "the outcome says when the run started")
        await patient.stop()

        let harness = try Harness(startedEventDelay: 0.02)
        let slow = harness.deliver(IntentEnvelope(id: "slow", type: LateNote.typeName, parameters: ["text": "milk"], submittedAt: 0))
        // Still running past the delay: its start is published while it runs.
        #expect(
            await harness.transport.wait { published in
                published.published.contains { $0.messageID == "slow" && (try? StatusEvent.decode($0.body))?.state == .inProgress }
            })
        harness.late.open()
        #expect(await harness.acked(slow))
        #expect(try harness.events("slow").map(\.state) == [.inProgress, .success])
        await harness.stop()
    }

    @Test func deliveriesHeldWhenTheWorkerStopsAreRunBeforeItReturnsAndLaterOnesAreNotTaken() async throws {
        // One runner, held by a late note: the two notes after it wait in the lanes when the worker is told to stop.
        let harness = try Harness(concurrency: 1)
        let late = harness.deliver(IntentEnvelope(id: "late", type: LateNote.typeName, parameters: ["text": "milk"], submittedAt: 0))
        let held = [harness.deliver(Self.note("held-1")), harness.deliver(Self.note("held-2"))]
        harness.worker.stop()
        let after = harness.deliver(Self.note("after"))
        harness.late.open()
        _ = await harness.running.result
        // Returned: everything it held was run and acked, nothing handed over after the stop was taken.
        #expect(harness.transport.acked.contains(late))
        for tag in held { #expect(harness.transport.acked.contains(tag)) }
        #expect(try harness.notes("held-1") == 1)
        #expect(try harness.notes("held-2") == 1)
        #expect(!harness.transport.acked.contains(after))
        #expect(try harness.notes("after") == 0)
        #expect(try harness.events("after").isEmpty)
        try? FileManager.default.removeItem(at: harness.directory)
    }

    @Test func cancelingTheTaskThatRunsTheWorkerStopsItAsStopDoes() async throws {
        // A cancel stops consuming: what the worker holds is run, and nothing handed over after is taken.
        let harness = try Harness(concurrency: 1)
        let late = harness.deliver(IntentEnvelope(id: "late", type: LateNote.typeName, parameters: ["text": "milk"], submittedAt: 0))
        let held = harness.deliver(Self.note("held"))
        harness.running.cancel()
        // The cancel stops consuming while the late note still runs (not only once the worker has returned).
        #expect(await harness.transport.wait { !$0.isConsuming })
        let after = harness.deliver(Self.note("after"))
        harness.late.open()
        _ = await harness.running.result
        #expect(harness.transport.acked.contains(late))
        #expect(harness.transport.acked.contains(held))
        #expect(try harness.notes("held") == 1)
        #expect(!harness.transport.acked.contains(after))
        #expect(try harness.notes("after") == 0)
        try? FileManager.default.removeItem(at: harness.directory)
    }

    @Test func anIntentIsStartedHandledOnceAndAckedAfterItsOutcome() async throws {
        let harness = try Harness()
        let tag = harness.deliver(Self.note("a"))
        #expect(await harness.acked(tag))
        #expect(try harness.events("a").map(\.state) == [.inProgress, .success])
        #expect(try harness.events("a").last?.response?.message == "noted")
        #expect(try harness.notes("a") == 1)
        await harness.stop()
    }

    @Test func aDecidedIntentOnlyHasItsOutcomePublishedAgain() async throws {
        let harness = try Harness()
        #expect(await harness.acked(harness.deliver(Self.note("b"))))
        #expect(await harness.acked(harness.deliver(Self.note("b"))))
        #expect(try harness.events("b").map(\.state) == [.inProgress, .success, .success], "no second inProgress")
        #expect(try harness.notes("b") == 1)
        await harness.stop()
    }

    /// A worker's retry names its sender in a header, and is published by the worker, a trusted user. The sender
    /// named comes back trusted only when it was: a producer's expiry of another's question, retried before it was
    /// admitted (the ledger was busy, say), once came back as a trusted sender's, and expired the question.
    @Test func aRetriedRequestComesBackAsTrustedOnlyWhenItsSenderWas() async throws {
        let harness = try Harness()
        #expect(await harness.acked(harness.deliver(Self.note("q", nil), userID: "alice")))
        #expect(try harness.events("q").last?.state == .needsInput)
        let retried: [String: HeaderValue] = [Topology.ownerHeader: .string("mallory"), Topology.storageRetriesHeader: .integer(1)]
        let malloryExpires = harness.deliver(.request(.expire, id: "q", type: Note.typeName, turn: 1), headers: retried, userID: "guest")
        #expect(await harness.acked(malloryExpires))
        let afterMallory = try harness.events("q").filter { $0.refused != true }
        #expect(afterMallory.last?.state == .needsInput, "mallory's expiry was refused: \(afterMallory.map(\.state))")

        // The recorder's own expiry, retried, still counts: its sender was trusted, and the retry says so.
        var fromRecorder = retried
        fromRecorder[Topology.ownerHeader] = .string("alice")
        fromRecorder[Topology.trustedSenderHeader] = .integer(1)
        let recorderExpires = harness.deliver(.request(.expire, id: "q", type: Note.typeName, turn: 1), headers: fromRecorder, userID: "guest")
        #expect(await harness.acked(recorderExpires))
        #expect(try harness.events("q").last?.state == .failure)
        #expect(try harness.events("q").last?.response?.code == FailureCode.expired)
        await harness.stop()
    }

    /// The broker dead-lettered an answer: the recorder asks the workers to end its question (`abandon`), decided
    /// in the ledger as an expiry is: the intent fails `deadLettered` while the question still waits, and the request
    /// loses to an outcome already decided (the answer was taken after all). Only a trusted sender may ask it.
    @Test func aLostAnswersQuestionIsEndedInTheLedgerOnlyWhileItWaits() async throws {
        let harness = try Harness()
        #expect(await harness.acked(harness.deliver(Self.note("q", nil), userID: "alice")))
        #expect(try harness.events("q").last?.state == .needsInput)
        #expect(await harness.acked(harness.deliver(.request(.abandon, id: "q", type: Note.typeName, turn: 1), userID: "alice")))
        #expect(try harness.events("q").filter { $0.refused != true }.last?.state == .needsInput, "its owner may not ask it")
        #expect(await harness.acked(harness.deliver(.request(.abandon, id: "q", type: Note.typeName, turn: 1), userID: "guest")))
        let ended = try #require(try harness.events("q").last)
        #expect(ended.state == .failure && ended.response?.code == FailureCode.deadLettered, "\(ended)")
        #expect(try harness.notes("q") == 0)

        #expect(await harness.acked(harness.deliver(Self.note("r", nil), userID: "alice")))
        #expect(await harness.acked(harness.deliver(Self.note("r", "milk", turn: 1), userID: "alice")))
        #expect(try harness.events("r").last?.state == .success)
        #expect(await harness.acked(harness.deliver(.request(.abandon, id: "r", type: Note.typeName, turn: 1), userID: "guest")))
        #expect(try harness.events("r").last?.state == .success, "the answer taken stands")
        #expect(try harness.notes("r") == 1)
        await harness.stop()
    }

    /// A message without a `user_id` is anonymous. Retried by a worker (a trusted user), it used to come back
    /// naming no owner, so it acted as the worker itself: trusted, it could expire another's question.
    @Test func anAnonymousSendersRetryComesBackAsNoOneNotAsTheWorker() async throws {
        let harness = try Harness()
        #expect(await harness.acked(harness.deliver(Self.note("anon", storage: "full"))))
        let again = try #require(harness.transport.published.last { $0.exchange == "intents.retry" })
        #expect(again.headers[Topology.anonymousSenderHeader] == .integer(1), "\(again.headers)")
        #expect(again.headers[Topology.ownerHeader] == nil)

        #expect(await harness.acked(harness.deliver(Self.note("q", nil), userID: "alice")))
        #expect(try harness.events("q").last?.state == .needsInput)
        let expiry = harness.deliver(.request(.expire, id: "q", type: Note.typeName, turn: 1), headers: again.headers, userID: "guest")
        #expect(await harness.acked(expiry))
        let afterRetry = try harness.events("q").filter { $0.refused != true }
        #expect(afterRetry.last?.state == .needsInput, "the anonymous expiry was refused: \(afterRetry.map(\.state))")

        // Run as no one: its events name no owner (not the worker's user).
        #expect(await harness.acked(harness.deliver(Self.note("anon2"), headers: again.headers, userID: "guest")))
        let ran = try #require(try harness.events("anon2").last)
        #expect(ran.state == .success && ran.owner == nil, "\(ran.state) owned by \(ran.owner ?? "no one")")
        await harness.stop()
    }

    /// A schedule's run has an id anyone can work out (`<name>@<due time>`). Taken first by a producer, the run due
    /// then found it in use, or (taken anonymously) an outcome it did not decide. Only a trusted publisher submits
    /// under such an id; an answer or a cancel of the run by its owner is not a submission, and goes on.
    @Test func aScheduledRunsIDIsTakenOnlyByTheScheduler() async throws {
        let harness = try Harness()
        let id = "tick@2026-12-07T09:00:00.000Z"
        for user in ["mallory", nil] as [String?] {
            #expect(await harness.acked(harness.deliver(Self.note(id, "mallory's"), userID: user)))
            let refused = try #require(try harness.events(id).last)
            #expect(refused.refused == true && refused.response?.code == FailureCode.idInUse, "\(refused)")
            // Nor by a body that does not decode, under that id: its failure is the sender's, not decided under the id.
            let unreadable = harness.transport.deliver(
                body: Array(#"{"id":"\#(id)"}"#.utf8), routingKey: Note.typeName, messageID: id, type: Note.typeName, userID: user)
            #expect(await harness.acked(unreadable))
            #expect(try harness.events(id).last?.refused == true)
        }
        #expect(try harness.notes(id) == 0)
        let scheduler: [String: HeaderValue] = [Topology.ownerHeader: .string("alice")]
        #expect(await harness.acked(harness.deliver(Self.note(id, "alice's"), headers: scheduler, userID: "guest")))
        #expect(try harness.events(id).last?.state == .success)
        let texts = try harness.database.sync { db in try db.query("SELECT text FROM note WHERE intent_id = ?", [.text(id)]) { $0.string(0) } }
        #expect(texts == ["alice's"])
        // Ids that only look alike are anyone's.
        for other in [
            "tick@2026-12-07T09:00:00Z", "tick@2026-12-07 09:00:00.000Z", "@2026-12-07T09:00:00.000Z",
            "alice@example.com@2026-12-07T09:00:00.000Z", "order/17@2026-12-07T09:00:00.000Z",
        ] {
            #expect(!IntentEnvelope.isScheduledRunID(other), "\(other)")
        }
        #expect(IntentEnvelope.isScheduledRunID(id))
        await harness.stop()
    }

    /// A confirmation is of the values the user saw. Given at one turn, it used to stand through a later answer that
    /// changed them: a booking confirmed at 10:00 that then asked for its time again was booked at the answer's time
    /// with no second confirmation.
    @Test func anAnswerThatChangesValuesTakesBackAnEarlierConfirmation() async throws {
        let harness = try Harness()
        let asked = IntentEnvelope(id: "b", type: Booking.typeName, parameters: ["time": "10:00"], submittedAt: 0)
        #expect(await harness.acked(harness.deliver(asked, userID: "alice")))
        #expect(try harness.events("b").last?.state == .needsInput, "asks to confirm 10:00")
        // Confirmed, in a turn whose time is gone: the booking asks for a time.
        let confirmed = IntentEnvelope(
            id: "b", type: Booking.typeName, parameters: ["time": ""], submittedAt: 0, turn: 1, confirmed: [IntentPipeline.wholeIntent])
        #expect(await harness.acked(harness.deliver(confirmed, userID: "alice")))
        let question = try #require(try harness.events("b").last)
        #expect(question.state == .needsInput && question.resolutions?.first?.parameter == "time", "\(question)")
        // The answer gives another time: that booking is asked to be confirmed, not made.
        let answered = IntentEnvelope.answering(
            id: "b", type: Booking.typeName, parameters: ["time": ""], turn: 1, answers: ["time": "23:00"], confirmed: [IntentPipeline.wholeIntent])
        #expect(await harness.acked(harness.deliver(answered, userID: "alice")))
        let last = try #require(try harness.events("b").last)
        #expect(last.state == .needsInput && last.resolutions?.contains { $0.parameter == IntentPipeline.wholeIntent } == true, "\(last)")
        #expect(try harness.notes("b") == 0, "nothing booked without a confirmation of 23:00")
        await harness.stop()
    }

    /// A second submission under the id of an intent kept to run when due (what a deduplication key's second
    /// submitter publishes, its own parameters and no due time) neither runs now nor replaces the kept one: the
    /// intent runs when due, as first submitted, which is what the store says.
    @Test func aSecondSubmissionOfAKeptIntentNeitherRunsNowNorReplacesIt() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.note("k", "first", dueAt: due), userID: "alice")))
        #expect(try harness.kept() == 1)
        #expect(await harness.acked(harness.deliver(Self.note("k", "second"), userID: "alice")))
        #expect(await harness.acked(harness.deliver(Self.note("k", "third", dueAt: due + 600), userID: "alice")))
        #expect(try harness.notes("k") == 0, "nothing ran before it was due")
        let states = try harness.events("k").map(\.state)
        #expect(states == [.scheduled], "\(states)")
        try harness.makeKeptDue()
        #expect(await harness.transport.wait { _ in (try? harness.notes("k")) == 1 })
        let texts = try harness.database.sync { db in try db.query("SELECT text FROM note WHERE intent_id = 'k'") { $0.string(0) } }
        #expect(texts == ["first"], "run as first submitted")
        await harness.stop()
    }

    @Test func aCancelWinsOverAWaitingIntentAndItsLateAnswerAndLosesToAHandledOne() async throws {
        let harness = try Harness()
        #expect(await harness.acked(harness.deliver(Self.note("q", nil))))
        #expect(try harness.events("q").last?.state == .needsInput)
        #expect(await harness.acked(harness.deliver(.request(.cancel, id: "q", type: Note.typeName))))
        #expect(try harness.events("q").last?.state == .canceled)
        #expect(await harness.acked(harness.deliver(Self.note("q", "eggs", turn: 1))))
        #expect(try harness.events("q").last?.state == .canceled, "the late answer finds the cancel decided")
        #expect(try harness.notes("q") == 0)

        #expect(await harness.acked(harness.deliver(Self.note("done"))))
        #expect(await harness.acked(harness.deliver(.request(.cancel, id: "done", type: Note.typeName))))
        #expect(try harness.events("done").map(\.state) == [.inProgress, .success, .success], "the cancel came too late")
        #expect(try harness.notes("done") == 1)
        await harness.stop()
    }

    /// The worker forgets what its ledger decided longer ago than its retention, and nothing else: a copy of a
    /// forgotten intent's submission runs as a new intent, and a question that waited all along is still answered.
    @Test func theWorkerForgetsOldDecisionsAndNothingThatWaits() async throws {
        let harness = try Harness(ledgerRetention: 3_600)
        #expect(await harness.acked(harness.deliver(Self.note("old"))))
        #expect(await harness.acked(harness.deliver(Self.note("recent"))))
        #expect(await harness.acked(harness.deliver(Self.note("waiting", nil))))
        #expect(try harness.events("waiting").last?.state == .needsInput)
        // Three hours pass for "old" and for the question: more than the retention, which is kept to an hour more
        // than the longest time limit (LateNote's hour).
        try harness.database.sync { db in
            try db.run("UPDATE intent_effect SET handled_at = handled_at - 10800 WHERE intent_id = 'old'")
            try db.run("UPDATE intent_pending SET updated_at = updated_at - 10800")
            try db.run("UPDATE intent_owner SET since = since - 10800")
        }
        // A pass comes every 50 ms.
        #expect(await harness.transport.wait { _ in (try? harness.decided("old")) == false }, "the old decision was forgotten")
        #expect(try harness.decided("recent"), "a decision within the retention is kept")
        #expect(await harness.acked(harness.deliver(Self.note("recent"))))
        #expect(try harness.notes("recent") == 1, "a copy of a remembered intent only has its outcome published again")
        #expect(await harness.acked(harness.deliver(Self.note("old"))))
        #expect(try harness.notes("old") == 2, "a copy of a forgotten one runs as a new intent")
        #expect(await harness.acked(harness.deliver(Self.note("waiting", "eggs", turn: 1))))
        #expect(try harness.events("waiting").last?.state == .success, "the waiting question was kept, and its answer ran")
        #expect(try harness.notes("waiting") == 1)
        await harness.stop()
    }

    /// Two answers to one question, both run at once: one commits its effect, and the other's run finds it decided.
    /// Only the winner's event says what was answered (and carries its resolutions and view); the other publishes
    /// the outcome as it stands, with nothing of its own, so the store cannot show the losing answer as the one that
    /// reached it.
    @Test func ofTwoAnswersRunAtOnceOnlyTheOneThatDecidedSaysItWasTheAnswer() async throws {
        let harness = try Harness()
        #expect(await harness.acked(harness.deliver(IntentEnvelope(id: "q", type: LateNote.typeName, parameters: [:], submittedAt: 0))))
        #expect(try harness.events("q").last?.state == .needsInput)
        let tags = ["eggs", "milk"].map { text in
            harness.deliver(
                IntentEnvelope(
                    id: "q", type: LateNote.typeName, parameters: ["text": .string(text)], submittedAt: 0, turn: 1,
                    answers: ["text": .string(text)]))
        }
        #expect(await harness.transport.wait { _ in harness.late.waiting == 2 }, "both answers' runs are in their handler at once")
        harness.late.open()
        for tag in tags { #expect(await harness.acked(tag)) }
        let written = try harness.database.sync { db in try db.query("SELECT text FROM note WHERE intent_id = 'q'") { $0.string(0) } }
        #expect(written.count == 1, "one effect: \(written)")
        let outcomes = try harness.events("q").filter { $0.turn == 1 && $0.state == .success }
        #expect(outcomes.count == 2)
        let winners = outcomes.filter { $0.answered != nil }
        #expect(winners.count == 1, "\(outcomes)")
        #expect(winners.first?.answered?.answer == ["text": .string(written.first ?? "")], "the answer that was written")
        #expect(winners.first?.answered?.parameters?["text"] == .string(written.first ?? ""))
        #expect(winners.first?.view == "note: \(written.first ?? "")")
        let loser = outcomes.first { $0.answered == nil }
        #expect(loser?.view == nil && loser?.resolutions == nil, "the other run's outcome carries nothing of its own")
        await harness.stop()
    }

    /// A retry's counters are a worker's: from a producer they count for nothing (its first transient failure would
    /// otherwise be its last), from a trusted publisher (a worker's retry) they do.
    @Test func retryCountersAreBelievedFromATrustedPublisherOnly() async throws {
        let harness = try Harness()
        let headers: [String: HeaderValue] = [Topology.retriesHeader: .integer(40)]
        #expect(await harness.acked(harness.deliver(Self.note("forged"), headers: headers, userID: "mallory")))
        #expect(try harness.events("forged").last?.attempt == 1)
        #expect(await harness.acked(harness.deliver(Self.note("retried"), headers: headers, userID: "guest")))
        #expect(try harness.events("retried").last?.attempt == 41)
        await harness.stop()
    }

    /// Two answers whose runs both pass their time limit reach equal outcomes (`timedOut`, the same message): only the
    /// run whose decision the ledger recorded says it was the answer.
    @Test func ofTwoAnswersThatBothTimeOutOnlyTheOneRecordedSaysItWasTheAnswer() async throws {
        let harness = try Harness(lateTimeLimit: 0.3)
        #expect(await harness.acked(harness.deliver(IntentEnvelope(id: "t", type: LateNote.typeName, parameters: [:], submittedAt: 0))))
        let tags = ["eggs", "milk"].map { text in
            harness.deliver(
                IntentEnvelope(
                    id: "t", type: LateNote.typeName, parameters: ["text": .string(text)], submittedAt: 0, turn: 1,
                    answers: ["text": .string(text)]))
        }
        for tag in tags { #expect(await harness.acked(tag)) }
        let outcomes = try harness.events("t").filter { $0.turn == 1 && $0.state.isTerminal }
        #expect(outcomes.count == 2)
        #expect(outcomes.allSatisfy { $0.response?.code == FailureCode.timedOut }, "\(outcomes)")
        #expect(outcomes.filter { $0.answered != nil }.count == 1, "\(outcomes)")
        harness.late.open()  // the handlers still waiting end, and write nothing: the intent timed out
        await harness.stop()
        #expect(try harness.notes("t") == 0)
    }

    @Test func aCancelHintSkipsAQueuedIntentWithoutRunningIt() async throws {
        let harness = try Harness()
        harness.transport.send(
            .publish(
                [
                    OutgoingMessage(
                        exchange: "intents.cancel", routingKey: "",
                        body: JSONValue.object(["id": "hinted", "at": .number(Date().timeIntervalSince1970)]).serialized())
                ], thenAck: nil))
        #expect(await harness.acked(harness.deliver(Self.note("hinted"))))
        #expect(try harness.events("hinted").map(\.state) == [.canceled])
        #expect(try harness.notes("hinted") == 0)
        await harness.stop()
    }

    @Test func aDenialOfAnOlderQuestionIsMootAndAcked() async throws {
        let harness = try Harness()
        #expect(await harness.acked(harness.deliver(Self.note("d", nil))))
        #expect(await harness.acked(harness.deliver(Self.note("d", nil, turn: 1))), "asked again at turn 1")
        let before = try harness.events("d").count
        #expect(await harness.acked(harness.deliver(.request(.deny, id: "d", type: Note.typeName, turn: 1))))
        #expect(try harness.events("d").count == before, "a denial of turn 0's question decides nothing")
        #expect(await harness.acked(harness.deliver(.request(.deny, id: "d", type: Note.typeName, turn: 2))))
        #expect(try harness.events("d").last?.response?.code == FailureCode.denied)
        await harness.stop()
    }

    @Test func aHandlerPastItsLimitIsReportedAtTheDeadlineAndWritesNothing() async throws {
        // The handler waits for the gate, opened only once timedOut is acked: the limit always fires first.
        let harness = try Harness(concurrency: 1, lateTimeLimit: 0.2)
        let tag = harness.deliver(IntentEnvelope(id: "slow", type: LateNote.typeName, parameters: ["text": "milk"], submittedAt: 0))
        let next = harness.deliver(Self.note("next"))
        #expect(await harness.acked(tag))
        #expect(try harness.events("slow").last?.response?.code == FailureCode.timedOut)
        #expect(!harness.transport.acked.contains(next), "the one slot is still the late handler's")
        harness.late.open()
        #expect(await harness.acked(next))
        #expect(try harness.notes("slow") == 0, "its write found timedOut decided")
        #expect(try harness.notes("next") == 1)
        // The late handler ran in its runner's task and was canceled there; the deliveries after it are not.
        #expect(harness.canceled["slow"] == true, "the late handler was told its time was up")
        #expect(harness.canceled["next"] == false, "the next delivery on the one runner starts uncanceled")
        #expect(await harness.acked(harness.deliver(Self.note("after"))))
        #expect(harness.canceled["after"] == false)
        await harness.stop()
    }

    /// Workers serving other types may share the ledger: a kept intent of a type this worker does not serve is left
    /// for the worker that does (before, this one took it when due, refused it as `unknownIntentType` and forgot it).
    @Test func aKeptIntentOfATypeTheWorkerDoesNotServeIsLeftInTheLedger() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.note("mine", dueAt: due), userID: "alice")))
        let ledger = try DatabaseOutcomeLedger(queue: harness.database)
        let soup = IntentEnvelope(id: "theirs", type: "OrderSoup", parameters: ["soup": "tomato"], submittedAt: 0, dueAt: due)
        #expect(try await ledger.keep(KeptIntent(id: "theirs", turn: 0, dueAt: due, body: soup.encoded(), owner: "alice")))
        try harness.makeKeptDue()
        // Both are due, and one look at the ledger finds both: once the served one has run, the other was passed over.
        #expect(await harness.transport.wait { _ in (try? harness.events("mine").last?.state) == .success })
        #expect(try harness.events("theirs").isEmpty, "nothing said of it, no refusal")
        let untaken = try harness.database.sync { db in
            try db.queryFirst("SELECT taken_by IS NULL FROM intent_kept WHERE intent_id = 'theirs'") { $0.int(0) }
        }
        #expect(untaken == 1, "still kept, and free for the worker that serves it")
        await harness.stop()
    }

    /// A worker that kept a scheduled intent and died (or lost its connection) before its `scheduled` event was
    /// confirmed: the broker delivers the submission again, and the ledger already keeps it. The event is published
    /// again, saying a worker keeps it, so that the recorder waits for the worker's run instead of releasing it at its
    /// due time as well. A second submission under the kept one's id (first delivered) is only acked, as before.
    @Test func aKeptSubmissionDeliveredAgainSaysAgainThatItIsKept() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.note("again", dueAt: due), userID: "alice")))
        // The first event's confirm never reached the broker's side of things: as far as the store knows, nothing.
        #expect(try harness.events("again").count == 1 && harness.kept() == 1)
        #expect(await harness.acked(harness.deliver(Self.note("again", dueAt: due), userID: "alice", deliveryCount: 1)))
        let events = try harness.events("again")
        #expect(events.map(\.state) == [.scheduled, .scheduled], "\(events.map(\.state))")
        #expect(events.last?.kept == true && events.last?.dueAt == due && events.last?.owner == "alice")
        #expect(await harness.acked(harness.deliver(Self.note("again", "other", dueAt: due), userID: "alice")))
        #expect(try harness.events("again").count == 2, "a second submission says nothing")
        // Nor does a second submission delivered again (its ack lost): it is not the kept one, whose due time the
        // store holds, and an event with its own due time would move the release.
        #expect(await harness.acked(harness.deliver(Self.note("again", "other", dueAt: due - 1_800), userID: "alice", deliveryCount: 1)))
        #expect(try harness.events("again").count == 2, "a second submission delivered again says nothing either")
        #expect(try harness.kept() == 1 && harness.notes("again") == 0, "kept once, and not run before it is due")
        await harness.stop()
    }

    @Test func aScheduledIntentSeenBeforeItIsDueIsAckedWithoutRunningAndRunsWhenTheRecorderReleasesIt() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.note("later", dueAt: due), userID: "alice")))
        #expect(try harness.events("later").map(\.state) == [.scheduled], "only its scheduled event, for watchers")
        #expect(try harness.events("later").first?.dueAt == due)
        #expect(try harness.notes("later") == 0)
        // A producer cannot release it early: the release header counts only from a trusted user.
        let forged: [String: HeaderValue] = [Topology.releasedHeader: .string("1")]
        #expect(await harness.acked(harness.deliver(Self.note("later", dueAt: due), headers: forged, userID: "alice")))
        #expect(try harness.notes("later") == 0)
        // The recorder's release (its user is trusted; it names the owner): run, whatever the clocks say.
        let release: [String: HeaderValue] = [Topology.releasedHeader: .string("\(due)"), Topology.ownerHeader: .string("alice")]
        #expect(await harness.acked(harness.deliver(Self.note("later", dueAt: due), headers: release, userID: "guest")))
        #expect(try harness.events("later").last?.state == .success)
        #expect(try harness.events("later").last?.owner == "alice", "it runs as its owner's")
        #expect(try harness.notes("later") == 1)
        // A copy seen after its due time runs at once; a second release only has the outcome published again.
        #expect(await harness.acked(harness.deliver(Self.note("past", dueAt: 1))))
        #expect(try harness.notes("past") == 1)
        #expect(await harness.acked(harness.deliver(Self.note("later", dueAt: due), headers: release, userID: "guest")))
        #expect(try harness.notes("later") == 1)
        await harness.stop()
    }

    @Test func aScheduledIntentSeenBeforeItIsDueIsKeptAndRunByTheWorkerWhenDueWithNoRelease() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        let tag = harness.deliver(Self.note("soon", dueAt: due), userID: "alice")
        #expect(await harness.acked(tag))
        let scheduled = try #require(try harness.events("soon").first)
        #expect(scheduled.state == .scheduled && scheduled.kept == true, "the recorder is told a worker keeps it")
        #expect(try harness.kept() == 1 && harness.notes("soon") == 0)
        // No release comes: the worker takes it from its ledger when it is due.
        try harness.makeKeptDue()
        #expect(await harness.transport.wait { _ in (try? harness.notes("soon")) == 1 })
        #expect(await harness.transport.wait { _ in (try? harness.events("soon").last?.state) == .success })
        let outcome = try #require(try harness.events("soon").last)
        #expect(outcome.owner == "alice", "it runs as its owner's")
        #expect(outcome.startedAt != nil)
        #expect(harness.transport.acked == [tag], "a kept intent's run has no delivery to ack")
        #expect(await harness.transport.wait { _ in (try? harness.kept()) == 0 }, "forgotten once what it published was confirmed")
        // The recorder's release, should it come too: the outcome published again, nothing done twice.
        let release: [String: HeaderValue] = [Topology.releasedHeader: .string("\(due)"), Topology.ownerHeader: .string("alice")]
        #expect(await harness.acked(harness.deliver(Self.note("soon", dueAt: due), headers: release, userID: "guest")))
        #expect(try harness.notes("soon") == 1)
        #expect(try harness.events("soon").map(\.state) == [.scheduled, .inProgress, .success, .success])
        await harness.stop()
    }

    @Test func aKeptIntentWhoseOutcomeWasLostWithTheConnectionIsTakenAgainAndItsOutcomePublishedOnceMore() async throws {
        let harness = try Harness(losingFirstKeptPublish: true)
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.note("lost", dueAt: due), userID: "alice")))
        try harness.makeKeptDue()
        #expect(await harness.transport.wait { _ in (try? harness.kept()) == 0 }, "forgotten once an outcome was confirmed")
        #expect(try harness.events("lost").map(\.state) == [.scheduled, .inProgress, .success, .success], "run, then its outcome again")
        #expect(try harness.notes("lost") == 1, "its effects once")
        let starts = try harness.events("lost").filter { $0.state == .success }.map(\.startedAt)
        #expect(starts.count == 2 && starts[0] != nil && starts[1] == nil, "said again, the outcome claims no start of its own")
        await harness.stop()
    }

    @Test func aKeptIntentTheRecorderReleasesOrACancelEndsIsForgotten() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.note("r", dueAt: due), userID: "alice")))
        #expect(try harness.kept() == 1)
        let release: [String: HeaderValue] = [Topology.releasedHeader: .string("\(due)"), Topology.ownerHeader: .string("alice")]
        #expect(await harness.acked(harness.deliver(Self.note("r", dueAt: due), headers: release, userID: "guest")))
        #expect(try harness.notes("r") == 1)
        #expect(try harness.kept() == 0, "released: no worker is to take it from the ledger as well")

        // Canceled while kept: forgotten at once, however far off its time.
        #expect(await harness.acked(harness.deliver(Self.note("c", dueAt: due), userID: "alice")))
        #expect(try harness.kept() == 1)
        #expect(await harness.acked(harness.deliver(.request(.cancel, id: "c", type: Note.typeName), userID: "alice")))
        #expect(try harness.kept() == 0, "nothing left to run")
        #expect(try harness.events("c").map(\.state) == [.scheduled, .canceled])
        #expect(try harness.notes("c") == 0)
        await harness.stop()
    }

    static func booking(_ id: String, _ time: String, turn: Int = 0, confirmed: [String]? = nil, dueAt: Double) -> IntentEnvelope {
        IntentEnvelope(
            id: id, type: Booking.typeName, parameters: ["time": .string(time)], submittedAt: 0, turn: turn, confirmed: confirmed,
            dueAt: dueAt)
    }

    @Test func aTypeResolvedAtSubmissionAsksAheadOfItsDueTimeAndIsHandledOnlyWhenReleased() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.booking("b", "", dueAt: due), userID: "alice")))
        #expect(try harness.events("b").map(\.state) == [.needsInput], "asked at once, with no inProgress: nothing runs yet")
        #expect(try harness.events("b").last?.resolutions?.first?.prompt?.full == "At what time?")
        // The answer, still ahead of the due time, is resolved and then asks for the confirmation.
        #expect(await harness.acked(harness.deliver(Self.booking("b", "15:00", turn: 1, dueAt: due), userID: "alice")))
        #expect(try harness.events("b").last?.state == .needsInput)
        #expect(try harness.events("b").last?.resolutions?.last?.parameter == IntentPipeline.wholeIntent)
        // Confirmed: scheduled with what it resolved to, and still not handled.
        #expect(await harness.acked(harness.deliver(Self.booking("b", "15:00", turn: 2, confirmed: ["intent"], dueAt: due), userID: "alice")))
        let scheduled = try #require(try harness.events("b").last)
        #expect(scheduled.state == .scheduled && scheduled.turn == 2 && scheduled.dueAt == due)
        #expect(scheduled.resolutions?.contains { $0.parameter == "time" } == true)
        #expect(try harness.notes("b") == 0)
        // Released when due (the recorder releases the answering turn): handled, once.
        let release: [String: HeaderValue] = [Topology.releasedHeader: .string("\(due)"), Topology.ownerHeader: .string("alice")]
        let released = Self.booking("b", "15:00", turn: 2, confirmed: ["intent"], dueAt: due)
        #expect(await harness.acked(harness.deliver(released, headers: release, userID: "guest")))
        #expect(try harness.events("b").last?.state == .success)
        #expect(try harness.notes("b") == 1)
        #expect(await harness.acked(harness.deliver(released, headers: release, userID: "guest")))
        #expect(try harness.notes("b") == 1, "a second release only has the outcome published again")
        await harness.stop()
    }

    @Test func aTypeResolvedAtSubmissionFailsAtSubmissionAndItsReleaseDoesNothing() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.booking("n", "never", dueAt: due))))
        #expect(try harness.events("n").map(\.state) == [.failure])
        #expect(try harness.events("n").last?.response?.code == "noSuchTime")
        let release: [String: HeaderValue] = [Topology.releasedHeader: .string("\(due)")]
        #expect(await harness.acked(harness.deliver(Self.booking("n", "never", dueAt: due), headers: release, userID: "guest")))
        #expect(try harness.events("n").map(\.response?.code) == ["noSuchTime", "noSuchTime"])
        #expect(try harness.notes("n") == 0)
        await harness.stop()
    }

    @Test func anOwnerOverItsRateWaitsInTheRetryQueueAndOthersGoOn() async throws {
        let harness = try Harness()
        func ping(_ id: String) -> IntentEnvelope { IntentEnvelope(id: id, type: Ping.typeName, parameters: [:], submittedAt: 0) }
        for id in ["a1", "a2"] {
            #expect(await harness.acked(harness.deliver(ping(id), userID: "alice")))
            #expect(try harness.notes(id) == 1)
        }
        #expect(await harness.acked(harness.deliver(ping("a3"), userID: "alice")))
        let again = try #require(harness.transport.published.last)
        #expect(again.exchange == "intents.retry" && again.messageID == "a3", "the third within the hour waits")
        #expect(again.headers[Topology.retriesHeader] == .integer(0), "waiting for the rate does not count against the retry policy")
        #expect(try harness.events("a3").isEmpty && harness.notes("a3") == 0)
        #expect(await harness.acked(harness.deliver(ping("b1"), userID: "bob")))
        #expect(try harness.notes("b1") == 1, "another owner's rate is its own")
        await harness.stop()
    }

    @Test func aScheduledIntentCanceledBeforeItIsDueEndsCanceledAndItsReleaseDoesNothing() async throws {
        let harness = try Harness()
        let due = Date().timeIntervalSince1970 + 3_600
        #expect(await harness.acked(harness.deliver(Self.note("s", dueAt: due))))
        #expect(await harness.acked(harness.deliver(.request(.cancel, id: "s", type: Note.typeName))))
        #expect(try harness.events("s").last?.state == .canceled)
        let release: [String: HeaderValue] = [Topology.releasedHeader: .string("\(due)")]
        #expect(await harness.acked(harness.deliver(Self.note("s", dueAt: due), headers: release, userID: "guest")))
        #expect(try harness.events("s").last?.state == .canceled)
        #expect(try harness.notes("s") == 0)
        await harness.stop()
    }

    @Test func aScheduledIntentReleasedAfterItsExpiryEndsExpiredWithoutRunning() async throws {
        let harness = try Harness()
        let release: [String: HeaderValue] = [Topology.releasedHeader: .string("1")]
        let now = Date().timeIntervalSince1970
        #expect(await harness.acked(harness.deliver(Self.note("e", expiresAt: now - 1, dueAt: now + 3_600), userID: "guest")))
        #expect(await harness.acked(harness.deliver(Self.note("e", expiresAt: now - 1, dueAt: now + 3_600), headers: release, userID: "guest")))
        #expect(try harness.events("e").last?.response?.code == FailureCode.expired)
        #expect(try harness.notes("e") == 0)
        await harness.stop()
    }

    @Test func anIntentTakenAfterItsExpiryEndsExpiredWithoutRunning() async throws {
        let harness = try Harness()
        let now = Date().timeIntervalSince1970
        #expect(await harness.acked(harness.deliver(Self.note("stale", expiresAt: now - 1))))
        #expect(try harness.events("stale").map(\.state) == [.failure], "no inProgress: it never started")
        #expect(try harness.events("stale").last?.response?.code == FailureCode.expired)
        #expect(try harness.notes("stale") == 0)
        #expect(await harness.acked(harness.deliver(Self.note("fresh", expiresAt: now + 3_600))))
        #expect(try harness.events("fresh").last?.state == .success)
        #expect(try harness.notes("fresh") == 1)
        // Delivered again, the expired one has its outcome published again, and still nothing runs.
        #expect(await harness.acked(harness.deliver(Self.note("stale", expiresAt: now - 1))))
        #expect(try harness.events("stale").map(\.response?.code) == [FailureCode.expired, FailureCode.expired])
        #expect(try harness.notes("stale") == 0)
        await harness.stop()
    }

    @Test func anIntentAWorkerHasBegunIsNeverExpired() async throws {
        let harness = try Harness()
        // Begun: admitted in the ledger, then sent to wait for storage.
        #expect(await harness.acked(harness.deliver(Self.note("begun", storage: "full"))))
        // Back later, past an expiry it carries now: it runs on.
        #expect(await harness.acked(harness.deliver(Self.note("begun", expiresAt: Date().timeIntervalSince1970 - 1))))
        #expect(try harness.events("begun").last?.state == .success)
        #expect(try harness.notes("begun") == 1)
        // So does an answer to a question, whatever its time.
        #expect(await harness.acked(harness.deliver(Self.note("asked", nil))))
        #expect(try harness.events("asked").last?.state == .needsInput)
        #expect(await harness.acked(harness.deliver(Self.note("asked", "eggs", turn: 1, expiresAt: 0))))
        #expect(try harness.events("asked").last?.state == .success)
        await harness.stop()
    }

    @Test func aFullDiskSendsTheIntentToWaitInARetryQueueWithoutDecidingAnything() async throws {
        let harness = try Harness()
        // Back from its second wait: a worker's retry, published as the worker's user.
        let tag = harness.deliver(Self.note("full", storage: "full"), headers: [Topology.storageRetriesHeader: .integer(2)], userID: "guest")
        #expect(await harness.acked(tag))
        let again = try #require(harness.transport.published.last)
        #expect(again.exchange == "intents.retry")
        #expect(again.headers[Topology.storageRetriesHeader] == .integer(3))
        #expect(again.headers[Topology.retriesHeader] == .integer(0), "storage waits do not count against the retry policy")
        #expect(try harness.events("full").map(\.state) == [.inProgress], "no outcome: nothing was decided")
        await harness.stop()
    }
    /// Through the real worker and ledger: two answers to the first question, one of which leaves the text out (its
    /// run asks again); the user answers that, but the other answer's run decides first, writing its note. The
    /// worker's events, fed to a store in the order the recorder may read them, show the parameters and answer of the
    /// run that wrote the note, not those of the newer answer, which no run used.
    @Test func anAnswerToAnOlderQuestionThatDecidesIsShownWithTheParametersItRanWith() async throws {
        let harness = try Harness()
        let store = try StatusStore(path: harness.directory.appendingPathComponent("status.sqlite").path)
        let alice = StatusStore.Submitter(user: "alice")
        let submission = Self.note("x", nil)
        #expect(await harness.acked(harness.deliver(submission, userID: "alice")))
        // Two answers to the question of turn 0: one leaves the text out (the run asks again, at turn 1), one gives it.
        let vague = IntentEnvelope.answering(
            id: "x", type: Note.typeName, parameters: [:], turn: 0, answers: ["storage": "none"], confirmed: [], submittedAt: 0)
        let eggs = IntentEnvelope.answering(
            id: "x", type: Note.typeName, parameters: [:], turn: 0, answers: ["text": "eggs"], confirmed: [], submittedAt: 0)
        #expect(await harness.acked(harness.deliver(vague, userID: "alice")))
        let asked = try #require(try harness.events("x").last)
        #expect(asked.state == .needsInput && asked.turn == 1, "\(asked)")
        // The user answers the question of turn 1 (recorded below, before the other answer's outcome is read).
        let milk = IntentEnvelope.answering(
            id: "x", type: Note.typeName, parameters: vague.parameters, turn: 1, answers: ["text": "milk"], confirmed: [], submittedAt: 0)
        // The other answer to turn 0 is taken only now, and the ledger lets it decide.
        #expect(await harness.acked(harness.deliver(eggs, userID: "alice")))
        let outcome = try #require(try harness.events("x").last)
        #expect(outcome.state == .success && outcome.turn == 1 && outcome.answered?.parameters?["text"] == "eggs", "\(outcome)")
        #expect(await harness.acked(harness.deliver(milk, userID: "alice")))
        let standing = try #require(try harness.events("x").last)
        #expect(standing.state == .success && standing.turn == 2 && standing.answered == nil, "milk's run found it decided")
        let written = try harness.database.sync { db in try db.query("SELECT text FROM note WHERE intent_id = 'x'") { $0.string(0) } }
        #expect(written == ["eggs"])

        // The recorder reads each answer once the question it answers is stored, and the outcomes after.
        var updates: [StatusStore.Update] = [.queued(submission, by: alice)]
        for event in try harness.events("x") {
            updates.append(.event(event))
            if event.state == .needsInput { updates.append(.queued((event.turn ?? 0) == 0 ? vague : milk, by: alice)) }
        }
        for (position, update) in updates.enumerated() { try store.record([update], now: 1_000 + Double(position)) }
        let status = try #require(try store.reader.status(id: "x"))
        #expect(status.state == .success)
        #expect(status.parameters?["text"] == "eggs", "the store shows what the app wrote: \(String(describing: status.parameters))")
        #expect(status.history?.first?.answer == ["text": "eggs"])
        await harness.stop()
    }

    @Test func hostileRetryCountersAreClampedInsteadOfOverflowing() async throws {
        let harness = try Harness()
        // As a trusted publisher's retry (a producer's counters count for nothing at all).
        let tag = harness.deliver(
            Self.note("huge"),
            headers: [
                Topology.retriesHeader: .integer(.max), Topology.storageRetriesHeader: .integer(.max),
            ], userID: "guest")
        #expect(await harness.acked(tag))
        let outcome = try #require(try harness.events("huge").last)
        #expect(outcome.state == .success)
        #expect(outcome.attempt == 1 + 2 * WorkerService.countLimit)
        await harness.stop()
    }

    @Test func aBodyWithoutAnIDIsDeadLetteredAndOneWithAnIDFailsReadably() async throws {
        let harness = try Harness()
        let nameless = harness.transport.deliver(body: Array("not json".utf8), routingKey: Note.typeName)
        #expect(await harness.transport.wait { $0.rejected.contains { $0.tag == nameless && !$0.requeue } })
        let named = harness.transport.deliver(body: Array("{\"id\":\"x\"}".utf8), routingKey: Note.typeName, messageID: "x")
        #expect(await harness.acked(named))
        #expect(try harness.events("x").last?.response?.code == FailureCode.invalidIntent)
        await harness.stop()
    }
}
