import Foundation
import IntentKit
import Testing

@testable import IntentStore

/// The status store on real SQLite files, one fresh directory per test.
@Suite struct StatusStoreTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.file("state/status.sqlite")
    }

    // MARK: Helpers

    static func envelope(_ id: String, type: String = "SendMessage", parameters: [String: JSONValue] = ["content": "hi"], submittedAt: Double = 1_000)
        -> IntentEnvelope
    {
        IntentEnvelope(id: id, type: type, parameters: parameters, submittedAt: submittedAt)
    }

    static func event(
        _ id: String, _ state: IntentState, type: String = "SendMessage", at: Double = 1_000, attempt: Int = 1,
        response: IntentResponse? = nil, resolutions: [ParameterResolution]? = nil,
        progress: StatusEvent.Progress? = nil, worker: String? = nil
    ) -> StatusStore.Update {
        .event(
            StatusEvent(
                id: id, type: type, state: state, at: at, attempt: attempt, response: response,
                resolutions: resolutions, progress: progress, worker: worker))
    }

    static let done = IntentResponse(code: "success", message: "Message sent to Alice Smith", payload: ["recipients": ["Alice Smith"]])

    // MARK: Basics

    @Test func anUnknownIDIsNil() throws {
        let store = try StatusStore(path: path)
        #expect(try store.reader.status(id: "never-seen") == nil)

        try store.record([.queued(Self.envelope("a"))], now: 1)
        #expect(try store.reader.status(id: "never-seen") == nil)
        #expect(try store.reader.status(id: "a") != nil)
    }

    @Test func openingForWritingCreatesTheParentDirectoryAndFile() throws {
        _ = try StatusStore(path: path)
        #expect(FileManager.default.fileExists(atPath: path))
    }

    @Test func anIntentMovesFromQueuedToInProgressToSuccess() throws {
        let store = try StatusStore(path: path)

        try store.record([.queued(Self.envelope("a", parameters: ["recipients": ["Alice"], "content": "hi"], submittedAt: 900))], now: 1_000)
        let queued = try #require(try store.reader.status(id: "a"))
        #expect(queued.state == .queued)
        #expect(!queued.terminal)
        #expect(queued.type == "SendMessage")
        #expect(queued.parameters == ["recipients": ["Alice"], "content": "hi"])
        #expect(queued.submittedAt == 900)
        #expect(queued.queuedAt == 1_000)
        #expect(queued.updatedAt == 1_000)
        #expect(queued.attempts == 0)
        #expect(queued.startedAt == nil)
        #expect(queued.finishedAt == nil)
        #expect(queued.response == nil)

        try store.record([Self.event("a", .inProgress, at: 1_001, worker: "host:1")], now: 1_002)
        let running = try #require(try store.reader.status(id: "a"))
        #expect(running.state == .inProgress)
        #expect(!running.terminal)
        #expect(running.startedAt == 1_001)
        #expect(running.updatedAt == 1_002)
        #expect(running.attempts == 1)
        #expect(running.worker == "host:1")
        #expect(running.parameters == queued.parameters)

        let resolutions = [ParameterResolution("recipients", index: 0, .success("Alice Smith"))]
        try store.record([Self.event("a", .success, at: 1_003, response: Self.done, resolutions: resolutions, worker: "host:1")], now: 1_004)
        let finished = try #require(try store.reader.status(id: "a"))
        #expect(finished.state == .success)
        #expect(finished.terminal)
        #expect(finished.response == Self.done)
        #expect(finished.resolutions == resolutions)
        #expect(finished.finishedAt == 1_004)
        #expect(finished.startedAt == 1_001)
        #expect(finished.queuedAt == 1_000)
        #expect(finished.submittedAt == 900)
    }

    // MARK: Scheduled intents

    @Test func aSubmissionDueLaterIsScheduledUntilItsReleaseIsConfirmedAndItStarts() throws {
        let store = try StatusStore(path: path)
        var later = Self.envelope("later", submittedAt: 900)
        later.dueAt = 5_000
        var soon = Self.envelope("soon", submittedAt: 900)
        soon.dueAt = 3_000
        try store.record([.queued(later, by: .init(user: "alice")), .queued(soon)], now: 1_000)
        let scheduled = try #require(try store.reader.status(id: "later"))
        #expect(scheduled.state == .scheduled && !scheduled.terminal && scheduled.dueAt == 5_000 && scheduled.owner == "alice")
        #expect(try store.nextDue() == 3_000)
        #expect(try store.dueIntents(at: 2_999).isEmpty, "nothing is due before its time")
        let due = try store.dueIntents(at: 6_000)
        #expect(due.map(\.id) == ["soon", "later"], "earliest first")
        #expect(due.last?.owner == "alice" && due.last?.type == "SendMessage" && due.last?.dueAt == 5_000)
        #expect(try IntentEnvelope.decode(due.last!.body) == later, "released as it was submitted")

        try store.markReleased(["soon"], at: 3_001)
        #expect(try store.dueIntents(at: 6_000).map(\.id) == ["later"], "a release the broker holds is not published again")
        #expect(try store.nextDue() == 5_000)
        #expect(try store.reader.status(id: "soon")?.state == .scheduled, "scheduled until a worker starts it")
        try store.record([Self.event("soon", .inProgress, at: 3_002)], now: 3_003)
        #expect(try store.reader.status(id: "soon")?.state == .inProgress)
        #expect(try store.reader.status(id: "soon")?.dueAt == 3_000)

        // A cancel requested while scheduled: released when due all the same (a worker decides the cancel there,
        // should none have decided it before); once a worker says canceled, it is not.
        try store.record([.cancelRequested(id: "later", by: .init(user: "alice"))], now: 3_004)
        #expect(try store.reader.status(id: "later")?.state == .cancelRequested)
        #expect(try store.dueIntents(at: 6_000).map(\.id) == ["later"])
        try store.record([Self.event("later", .canceled, at: 3_005)], now: 3_006)
        #expect(try store.dueIntents(at: 6_000).isEmpty)
        #expect(try store.nextDue() == nil)
    }

    /// A copy of a scheduled intent's first submission that comes once the intent has moved past its first turn (a
    /// retry's copy, the owner submitting it again, an operator's requeue) does not arm the first turn's release
    /// again: a cancel of the later turn would otherwise have the recorder release the first submission once more.
    @Test func aLateCopyOfAScheduledFirstSubmissionDoesNotArmItsReleaseAgain() throws {
        let store = try StatusStore(path: path)
        let alice = StatusStore.Submitter(user: "alice")
        var first = Self.envelope("ahead", submittedAt: 900)
        first.dueAt = 2_000
        func event(_ state: IntentState, turn: Int = 0, at: Double) -> StatusStore.Update {
            .event(StatusEvent(id: "ahead", type: "SendMessage", state: state, at: at, attempt: 1, turn: turn, owner: "alice"))
        }
        try store.record([.queued(first, by: alice)], now: 1_000)
        #expect(try store.dueIntents(at: 2_000).map(\.id) == ["ahead"])
        try store.markReleased(["ahead"], at: 2_000)
        try store.record([event(.inProgress, at: 2_001), event(.needsInput, at: 2_002)], now: 2_002)
        let answer = IntentEnvelope(
            id: "ahead", type: "SendMessage", parameters: ["content": "hi", "recipients": ["Jeff"]], submittedAt: 900, turn: 1,
            answers: ["recipients": ["Jeff"]])
        try store.record([.queued(answer, by: alice)], now: 2_003)
        #expect(try store.reader.status(id: "ahead")?.turn == 1)
        // The first submission again, then a cancel while the answer waits for its run.
        try store.record([.queued(first, by: alice)], now: 2_004)
        try store.record([.cancelRequested(id: "ahead", type: "SendMessage", by: alice)], now: 2_005)
        #expect(try store.reader.status(id: "ahead")?.state == .cancelRequested)
        #expect(try store.dueIntents(at: 10_000).isEmpty, "nothing of the first turn is released again")
        #expect(try store.nextDue() == nil)
    }

    /// A cancel is moot while a handler runs, and when that run asks a question, the question is the intent's state:
    /// the row used to stay `cancelRequested`, which no answer (the clients answer only `needsInput`) and no expiry
    /// could leave. And a cancel that names another type than the intent's, which the workers refuse, showed the
    /// intent `cancelRequested` for good.
    @Test func aCancelGivesWayToTheQuestionOfARunItCameTooLateForAndNamesTheIntentsType() throws {
        let store = try StatusStore(path: path)
        let alice = StatusStore.Submitter(user: "alice")
        func event(_ id: String, _ state: IntentState, turn: Int = 0, at: Double) -> StatusStore.Update {
            .event(StatusEvent(id: id, type: "SendMessage", state: state, at: at, attempt: 1, turn: turn, owner: "alice"))
        }
        try store.record([.queued(Self.envelope("asks"), by: alice), event("asks", .inProgress, at: 1_001)], now: 1_001)
        try store.record([.cancelRequested(id: "asks", type: "SendMessage", by: alice)], now: 1_002)
        #expect(try store.reader.status(id: "asks")?.state == .cancelRequested)
        try store.record([event("asks", .inProgress, at: 1_003)], now: 1_003)
        #expect(try store.reader.status(id: "asks")?.state == .cancelRequested, "the run's progress does not take the request back")
        try store.record([event("asks", .needsInput, at: 1_004)], now: 1_004)
        #expect(try store.reader.status(id: "asks")?.state == .needsInput)
        #expect(try store.questionsToExpire(olderThan: 10, resendAfter: 1, now: 2_000).map(\.id) == ["asks"], "its question can expire")
        // A worker then decides the cancel against that question.
        try store.record([event("asks", .canceled, at: 1_005)], now: 1_005)
        #expect(try store.reader.status(id: "asks")?.state == .canceled)
        try store.record([event("asks", .needsInput, at: 1_006)], now: 1_006)
        #expect(try store.reader.status(id: "asks")?.state == .canceled, "and nothing moves it from there")

        try store.record([.queued(Self.envelope("other"), by: alice)], now: 1_010)
        try store.record([.cancelRequested(id: "other", type: "OrderSoup", by: alice)], now: 1_011)
        #expect(try store.reader.status(id: "other")?.state == .queued, "a cancel of another type is not this intent's")
        try store.record([.cancelRequested(id: "other", type: "SendMessage", by: alice)], now: 1_012)
        #expect(try store.reader.status(id: "other")?.state == .cancelRequested)
    }

    /// Two answers to one question: the store records the first it reads as the turn's, but the ledger may take the
    /// other. The outcome's event says which answer reached it, and the store then shows that one's parameters, answer
    /// and confirmations — also when the losing answer's run published the standing outcome first (with nothing of
    /// its own), and for a denial that won over a confirmation recorded before it. A question asked again at the same
    /// turn by the other answer's run, not applied, changes nothing.
    @Test func theAnswerThatReachedTheOutcomeIsTheTurnsAnswerWhicheverWasRecordedFirst() throws {
        let store = try StatusStore(path: path)
        let alice = StatusStore.Submitter(user: "alice")
        let question = [ParameterResolution("recipients", .needsValue, prompt: "To whom?")]
        func asked(_ id: String) throws {
            try store.record(
                [
                    .queued(Self.envelope(id, parameters: ["content": "hi"]), by: alice),
                    .event(
                        StatusEvent(
                            id: id, type: "SendMessage", state: .needsInput, at: 1_001, attempt: 1, resolutions: question, owner: "alice")),
                ], now: 1_001)
        }
        func answer(_ id: String, _ recipient: String, confirmed: [String]? = nil) -> IntentEnvelope {
            IntentEnvelope(
                id: id, type: "SendMessage", parameters: ["content": "hi", "recipients": [.string(recipient)]], submittedAt: 1_000, turn: 1,
                answers: ["recipients": [.string(recipient)]], confirmed: confirmed)
        }
        func answered(_ recipient: String) -> StatusEvent.Answered {
            .init(answer: ["recipients": [.string(recipient)]], parameters: ["content": "hi", "recipients": [.string(recipient)]], confirmed: [])
        }
        func outcome(_ id: String, _ state: IntentState, code: String, answered: StatusEvent.Answered?, at: Double) -> StatusStore.Update {
            .event(
                StatusEvent(
                    id: id, type: "SendMessage", state: state, at: at, attempt: 1, response: IntentResponse(code: code), turn: 1,
                    owner: "alice", view: answered == nil ? nil : "the winner's view", answered: answered))
        }
        func shown(_ id: String) throws -> (recipients: JSONValue?, answer: JSONValue?, confirmed: [String]?, state: IntentState?) {
            let status = try store.reader.status(id: id)
            return (status?.parameters?["recipients"], status?.history?.first?.answer, status?.confirmed, status?.state)
        }

        // Jeff's answer is recorded first; Alice's reaches the outcome.
        try asked("two")
        try store.record([.queued(answer("two", "Jeff"), by: alice), .queued(answer("two", "Alice"), by: alice)], now: 1_002)
        #expect(try shown("two").recipients == ["Jeff"], "the first answer recorded, until an outcome says otherwise")
        try store.record([outcome("two", .success, code: "success", answered: answered("Alice"), at: 1_003)], now: 1_003)
        #expect(try shown("two").recipients == ["Alice"])
        #expect(try shown("two").answer == ["recipients": ["Alice"]])

        // The losing answer's run publishes the standing outcome first, with nothing of its own; the winner's comes after.
        try asked("late")
        try store.record([.queued(answer("late", "Jeff"), by: alice), .queued(answer("late", "Alice"), by: alice)], now: 1_002)
        try store.record([outcome("late", .success, code: "success", answered: nil, at: 1_003)], now: 1_003)
        #expect(try shown("late").state == .success)
        #expect(try shown("late").recipients == ["Jeff"])
        try store.record([outcome("late", .success, code: "success", answered: answered("Alice"), at: 1_004)], now: 1_004)
        #expect(try shown("late").recipients == ["Alice"], "the outcome was recorded before, and the answer that reached it is its")
        #expect(try shown("late").answer == ["recipients": ["Alice"]])
        // An outcome other than the stored one (a conflict) says nothing of the turn's answer.
        try store.record([outcome("late", .failure, code: "handlerError", answered: answered("Zoe"), at: 1_005)], now: 1_005)
        #expect(try shown("late").recipients == ["Alice"])

        // A confirmation recorded first, and a denial that won.
        try asked("deny")
        try store.record(
            [
                .queued(answer("deny", "Jeff", confirmed: ["intent"]), by: alice),
                .queued(.request(.deny, id: "deny", type: "SendMessage", turn: 1), by: alice),
            ],
            now: 1_002)
        #expect(try shown("deny").confirmed == ["intent"])
        try store.record(
            [outcome("deny", .failure, code: FailureCode.denied, answered: .init(answer: "denied", confirmed: []), at: 1_003)], now: 1_003)
        #expect(try shown("deny").answer == "denied")
        #expect(try shown("deny").confirmed == nil, "nothing was confirmed")

        // Both answers' runs ask the next question at turn 1; the one applied stays.
        try asked("again")
        try store.record([.queued(answer("again", "Jeff"), by: alice), .queued(answer("again", "Alice"), by: alice)], now: 1_002)
        var first = StatusEvent(
            id: "again", type: "SendMessage", state: .needsInput, at: 1_003, attempt: 1, resolutions: question, turn: 1, owner: "alice")
        first.answered = answered("Jeff")
        var second = first
        second.answered = answered("Alice")
        try store.record([.event(first), .event(second)], now: 1_003)
        #expect(try shown("again").recipients == ["Jeff"])
        #expect(try shown("again").answer == ["recipients": ["Jeff"]])
    }

    /// Two answers to the question of turn 0: the first one's run asks again (turn 1) and the user answers that
    /// (turn 2), then the other answer's run (it waited in a retry queue behind the first's claim, or its handler
    /// was slow) decides. The ledger lets it: a run decides unless an outcome stands, whatever question was asked
    /// since. The store had moved the row to turn 2 with that answer's parameters, and `recordAnswered` matched only
    /// the row's own turn: it showed the success of the turn-1 run with the turn-2 parameters (and, in the history,
    /// the first answer to turn 0), which the intent never ran with. Both orders the recorder may read the events in.
    @Test func anOutcomeReachedByAnAnswerToAnOlderQuestionShowsThatAnswersParameters() throws {
        let store = try StatusStore(path: path)
        let alice = StatusStore.Submitter(user: "alice")
        func answer(_ id: String, turn: Int, _ recipient: String) -> IntentEnvelope {
            IntentEnvelope(
                id: id, type: "SendMessage", parameters: ["content": "hi", "recipients": [.string(recipient)]], submittedAt: 1_000,
                turn: turn, answers: ["recipients": [.string(recipient)]])
        }
        func answered(_ recipient: String) -> StatusEvent.Answered {
            .init(answer: ["recipients": [.string(recipient)]], parameters: ["content": "hi", "recipients": [.string(recipient)]], confirmed: [])
        }
        func event(_ id: String, _ state: IntentState, turn: Int, answered: StatusEvent.Answered? = nil, view: String? = nil) -> StatusStore.Update {
            .event(
                StatusEvent(
                    id: id, type: "SendMessage", state: state, at: 1_000, attempt: 1,
                    response: state.isTerminal ? IntentResponse(code: "success") : nil,
                    resolutions: state == .needsInput ? [ParameterResolution("recipients", .needsValue, prompt: "To whom?")] : nil,
                    turn: turn, owner: "alice", view: view, answered: answered))
        }
        for (id, republishedFirst) in [("decider-first", false), ("republish-first", true)] {
            try store.record([.queued(Self.envelope(id, parameters: ["content": "hi"]), by: alice)], now: 1_000)
            try store.record([event(id, .needsInput, turn: 0, view: "To: ?")], now: 1_001)
            // Jeff's answer to turn 0 is recorded; its run asks again at turn 1; the user answers that with Jeff Chen.
            try store.record([.queued(answer(id, turn: 1, "Jeff"), by: alice)], now: 1_002)
            try store.record([event(id, .needsInput, turn: 1, answered: answered("Jeff"), view: "To: Jeff?")], now: 1_003)
            try store.record([.queued(answer(id, turn: 2, "Jeff Chen"), by: alice)], now: 1_004)
            #expect(try store.reader.status(id: id)?.parameters?["recipients"] == ["Jeff Chen"], "the answer recorded, until an outcome says")
            if republishedFirst {
                // Jeff Chen's run finds the outcome decided and publishes it as it stands (nothing of its own), first.
                try store.record([event(id, .success, turn: 2)], now: 1_005)
            }
            // Alice's answer to turn 0 is the one that ran, and decided.
            try store.record([event(id, .success, turn: 1, answered: answered("Alice"), view: "To: Alice")], now: 1_006)
            let status = try #require(try store.reader.status(id: id))
            #expect(status.state == .success)
            #expect(status.parameters?["recipients"] == ["Alice"], "\(id): the parameters the intent ran with")
            #expect(status.history?.first?.answer == ["recipients": ["Alice"]], "\(id): the answer to turn 0 that reached it")
            #expect(status.view == "To: Alice", "\(id): the deciding run's view, not the question's")
            #expect(try store.reader.conflictCount() == 0)
        }
    }

    /// A dead-lettered answer was recorded as the intent's failure while its ledger still waited for an answer: the
    /// store said `failure` of an intent no worker had ended (and could still end another way). Now the row stays at
    /// the answer's turn, and once nothing has been heard of it for a while (time for an operator to requeue the
    /// answer), the workers are asked to end the question (`turnsToAbandon`), once a minute until their decision, or
    /// anything else that moves the intent on, comes.
    @Test func aLostAnswersQuestionIsLeftToTheWorkersAndAskedAboutUntilItMovesOn() throws {
        let store = try StatusStore(path: path)
        let alice = StatusStore.Submitter(user: "alice")
        func event(_ id: String, _ state: IntentState, turn: Int, code: String? = nil) -> StatusStore.Update {
            .event(
                StatusEvent(
                    id: id, type: "SendMessage", state: state, at: 1_000, attempt: 1, response: code.map { IntentResponse(code: $0) }, turn: turn,
                    owner: "alice"))
        }
        var answers: [String: IntentEnvelope] = [:]
        for id in ["lost", "taken", "bobs", "running", "requeued", "late"] {
            var answer = Self.envelope(id)
            answer.turn = 1
            answers[id] = answer
            try store.record([.queued(Self.envelope(id), by: alice), event(id, .needsInput, turn: 0), .queued(answer, by: alice)], now: 1_000)
        }
        try store.record([event("running", .inProgress, turn: 1)], now: 1_001)  // its run began, and died
        try store.record(
            ["lost", "taken", "running", "requeued"].map { .turnDeadLettered(id: $0, type: "SendMessage", turn: 1, by: alice) }
                + [.turnDeadLettered(id: "bobs", type: "SendMessage", turn: 1, by: .init(user: "bob"))], now: 1_002)
        #expect(try store.reader.status(id: "lost")?.state == .queued, "no failure the ledger does not hold")
        try store.record([event("taken", .needsInput, turn: 1)], now: 1_003)  // the answer was taken after all
        try store.record([.requeued(try #require(answers["requeued"]))], now: 1_004)  // an operator requeued it
        // Dead-lettered long after its last event (a worker restarted with a growing back-off between deaths): the
        // grace runs from the dead letter too.
        try store.record([.turnDeadLettered(id: "late", type: "SendMessage", turn: 1, by: alice)], now: 1_200)
        #expect(try store.turnsToAbandon(quietFor: 300, resendAfter: 60, now: 1_100).isEmpty, "time for an operator first")
        #expect(try store.turnsToAbandon(quietFor: 300, resendAfter: 60, now: 1_310).map(\.id).sorted() == ["lost", "running"])
        #expect(try store.turnsToAbandon(quietFor: 300, resendAfter: 60, now: 1_320).isEmpty, "asked once a minute")
        let again = try store.turnsToAbandon(quietFor: 300, resendAfter: 60, now: 1_371)
        #expect(again.map(\.id).sorted() == ["lost", "running"] && again.allSatisfy { $0.turn == 0 }, "the question of turn 0: \(again)")
        try store.record([event("lost", .failure, turn: 1, code: FailureCode.deadLettered)], now: 1_372)
        #expect(try store.reader.status(id: "lost")?.response?.code == FailureCode.deadLettered)
        #expect(try store.turnsToAbandon(quietFor: 300, resendAfter: 60, now: 2_000).map(\.id).sorted() == ["late", "running"])
        let marked = try store.reader.database.query("SELECT id FROM intent_status WHERE abandon_turn IS NOT NULL ORDER BY id") { $0.string(0) }
        #expect(marked == ["late", "running", "taken"], "an ended intent leaves the index")
    }

    @Test func aScheduledIntentAWorkerKeepsIsReleasedOnlyIfItHasNotEndedAGraceAfterItsTime() throws {
        let store = try StatusStore(path: path)
        let grace = StatusStore.keptReleaseGrace
        for id in ["kept", "ran", "early"] {
            var envelope = Self.envelope(id, submittedAt: 900)
            envelope.dueAt = 2_000
            let kept = StatusEvent(id: id, type: "SendMessage", state: .scheduled, at: 1_001, attempt: 1, dueAt: 2_000, kept: true)
            // The worker's event may be recorded before the submission it is about, or after.
            try store.record(id == "early" ? [.event(kept), .queued(envelope)] : [.queued(envelope), .event(kept)], now: 1_002)
        }
        var plain = Self.envelope("plain", submittedAt: 900)
        plain.dueAt = 2_000
        try store.record([.queued(plain)], now: 1_002)
        #expect(try store.reader.status(id: "kept")?.dueAt == 2_000, "its due time is what it was")
        #expect(try store.dueIntents(at: 2_000).map(\.id) == ["plain"], "one no worker keeps is released when due")
        #expect(try store.nextDue() == 2_000)
        try store.markReleased(["plain"], at: 2_000)
        #expect(try store.nextDue() == 2_000 + grace)
        // "ran" was run by a worker from its ledger; "kept" was begun by one that is heard of no more.
        try store.record([Self.event("ran", .inProgress, at: 2_000), Self.event("kept", .inProgress, at: 2_000)], now: 2_001)
        try store.record([Self.event("ran", .success, at: 2_002)], now: 2_002)
        #expect(try store.dueIntents(at: 2_000 + grace - 0.01).isEmpty)
        #expect(try store.dueIntents(at: 2_000 + grace).map(\.id) == ["early"], "the fallback: not begun a grace after")
        #expect(try store.dueIntents(at: 2_000 + grace, keptBy: 0).isEmpty, "held back while the recorder's connection is younger than the grace")
        #expect(try store.nextDue() == 2_000 + grace)
        try store.markReleased(["early"], at: 2_000 + grace)
        let lease = StatusStore.keptRunLease
        #expect(try store.nextDue() == 2_001 + lease, "a begun one when nothing was heard of it for the lease")
        #expect(try store.dueIntents(at: 2_001 + lease - 1).isEmpty)
        #expect(try store.dueIntents(at: 2_001 + lease).map(\.id) == ["kept"])
        #expect(try store.reader.status(id: "ran")?.state == .success)
        func releasedAt(_ id: String) throws -> Double? {
            try store.database.queryFirst("SELECT released_at FROM intent_status WHERE id = ?", [.text(id)]) { $0.optionalDouble(0) } ?? nil
        }
        #expect(try releasedAt("ran") == 2_002, "it ran: nothing of it is left to release, and it leaves the release index")
        #expect(try releasedAt("kept") == nil)
        // A cancel of the begun one is moot (its worker says nothing of it): released only after the lease too.
        try store.record([.cancelRequested(id: "kept", by: nil)], now: 2_003)
        #expect(try store.reader.status(id: "kept")?.state == .cancelRequested)
        #expect(try store.dueIntents(at: 2_003 + lease - 1).isEmpty)
        #expect(try store.nextDue() == 2_003 + lease)
        #expect(try store.dueIntents(at: 2_003 + lease).map(\.id) == ["kept"])
    }

    /// A submission already due when it was submitted (for a time just past) is run by the worker that takes it, at
    /// once: the recorder releases it only if it has not begun a grace after it was recorded, not at once, or it
    /// would run twice (its worker's events come after it).
    @Test func aSubmissionAlreadyDueWhenRecordedIsReleasedOnlyIfNotBegunAGraceLater() throws {
        let store = try StatusStore(path: path)
        let grace = StatusStore.keptReleaseGrace
        for id in ["ran", "lost"] {
            var envelope = Self.envelope(id, submittedAt: 1_999)
            envelope.dueAt = 1_999
            try store.record([.queued(envelope)], now: 2_000)
        }
        #expect(try store.reader.status(id: "ran")?.state == .scheduled)
        #expect(try store.dueIntents(at: 2_000).isEmpty, "not released at once")
        #expect(try store.nextDue() == 2_000 + grace)
        try store.record([Self.event("ran", .inProgress, at: 2_001), Self.event("ran", .success, at: 2_002)], now: 2_002)
        #expect(try store.dueIntents(at: 2_000 + grace).map(\.id) == ["lost"], "the one no worker was heard of, a grace later")
    }

    @Test func aKeptTurnThatRanIsNotReleasedAfterItsAnswer() throws {
        let store = try StatusStore(path: path)
        var envelope = Self.envelope("asked", submittedAt: 900)
        envelope.dueAt = 2_000
        let kept = StatusEvent(id: "asked", type: "SendMessage", state: .scheduled, at: 1_001, attempt: 1, dueAt: 2_000, kept: true)
        try store.record([.queued(envelope), .event(kept)], now: 1_002)
        // Run from the ledger when due: it asks, and is answered (with no due time: it runs at once).
        try store.record([Self.event("asked", .needsInput, at: 2_000)], now: 2_000)
        var answer = Self.envelope("asked", submittedAt: 2_001)
        answer.turn = 1
        answer.answers = ["content": "yes"]
        try store.record([.queued(answer)], now: 2_001)
        try store.record([.event(StatusEvent(id: "asked", type: "SendMessage", state: .inProgress, at: 2_002, attempt: 1, turn: 1))], now: 2_002)
        #expect(try store.reader.status(id: "asked")?.state == .inProgress)
        #expect(try store.dueIntents(at: 10_000).isEmpty, "its first turn is not released again beside its second")
        #expect(try store.nextDue() == nil)
    }

    @Test func aSubmissionRecordedAfterItsDueTimeIsReleasedAtOnceAndAResubmissionChangesNothing() throws {
        let store = try StatusStore(path: path)
        var late = Self.envelope("late", submittedAt: 900)
        late.dueAt = 950
        // The recorder lagged: a worker may have seen (and acked) the early copy before it was due.
        try store.record([.queued(late)], now: 1_000)
        #expect(try store.reader.status(id: "late")?.state == .scheduled)
        #expect(try store.dueIntents(at: 1_000).map(\.id) == ["late"], "released at the next sweep")
        try store.markReleased(["late"], at: 1_000)

        var first = Self.envelope("twice", submittedAt: 900)
        first.dueAt = 5_000
        try store.record([.queued(first)], now: 1_000)
        var again = first
        again.dueAt = 1_500
        try store.record([.queued(again)], now: 1_001)
        #expect(try store.reader.status(id: "twice")?.dueAt == 5_000, "the first submission's time stands")
        #expect(try store.dueIntents(at: 2_000).isEmpty)
    }

    @Test func aQuestionAskedAheadOfTheDueTimeIsAnsweredIntoAScheduledTurnReleasedAsThatTurn() throws {
        let store = try StatusStore(path: path)
        var booking = Self.envelope("ahead", submittedAt: 900)
        booking.dueAt = 5_000
        let asked = ParameterResolution("time", .needsValue, prompt: "At what time?")
        // The worker's question may be recorded before the submission itself: the submission still brings its release.
        try store.record(
            [.event(StatusEvent(id: "ahead", type: "SendMessage", state: .needsInput, at: 1_000, attempt: 1, resolutions: [asked], owner: "alice"))],
            now: 1_000)
        try store.record([.queued(booking, by: .init(user: "alice"))], now: 1_001)
        #expect(try store.reader.status(id: "ahead")?.state == .needsInput)
        #expect(try store.dueIntents(at: 6_000).isEmpty, "a question open at its due time holds it back")

        var answer = IntentEnvelope.answering(
            id: "ahead", type: "SendMessage", parameters: booking.parameters, turn: 0, answers: ["time": "15:00"], confirmed: [])
        answer.dueAt = 5_000
        // Someone else's answer does nothing.
        try store.record([.queued(answer, by: .init(user: "mallory"))], now: 1_002)
        #expect(try store.reader.status(id: "ahead")?.state == .needsInput)
        try store.record([.queued(answer, by: .init(user: "alice"))], now: 1_003)
        let scheduled = try #require(try store.reader.status(id: "ahead"))
        #expect(scheduled.state == .scheduled && scheduled.turn == 1 && scheduled.dueAt == 5_000)
        #expect(try store.dueIntents(at: 4_999).isEmpty)
        let due = try #require(try store.dueIntents(at: 5_000).first)
        #expect(try IntentEnvelope.decode(due.body) == answer, "released as the answering turn")

        // The worker's scheduled event of that turn adds what it resolved to; an older turn's changes nothing.
        let resolved = ParameterResolution("time", .success("15:00"))
        try store.record(
            [
                .event(
                    StatusEvent(
                        id: "ahead", type: "SendMessage", state: .scheduled, at: 1_004, attempt: 1, resolutions: [resolved], turn: 1, owner: "alice"))
            ],
            now: 1_004)
        #expect(try store.reader.status(id: "ahead")?.resolutions == [resolved])
        try store.record(
            [.event(StatusEvent(id: "ahead", type: "SendMessage", state: .scheduled, at: 1_005, attempt: 1, resolutions: [asked], owner: "alice"))],
            now: 1_005)
        #expect(try store.reader.status(id: "ahead")?.resolutions == [resolved])
        #expect(try store.reader.status(id: "ahead")?.state == .scheduled)

        // Released and asking again when due: that answer carries no due time and is queued as any other.
        try store.markReleased(["ahead"], at: 5_001)
        try store.record(
            [
                .event(
                    StatusEvent(
                        id: "ahead", type: "SendMessage", state: .needsInput, at: 5_002, attempt: 1, resolutions: [asked], turn: 1, owner: "alice"))
            ],
            now: 5_002)
        let late = IntentEnvelope.answering(
            id: "ahead", type: "SendMessage", parameters: booking.parameters, turn: 1, answers: ["time": "16:00"], confirmed: [])
        try store.record([.queued(late, by: .init(user: "alice"))], now: 5_003)
        #expect(try store.reader.status(id: "ahead")?.state == .queued)
        #expect(try store.dueIntents(at: 6_000).isEmpty)
    }

    @Test func aNeedsInputKeepsItsResolutions() throws {
        let store = try StatusStore(path: path)
        let resolutions = [
            ParameterResolution("recipients", index: 0, .disambiguation(["Jeff Baker", "Jeff Chen"])),
            ParameterResolution("content", .needsValue),
        ]
        try store.record([Self.event("n", .inProgress), Self.event("n", .needsInput, resolutions: resolutions)])

        let status = try #require(try store.reader.status(id: "n"))
        #expect(status.state == .needsInput)
        #expect(!status.terminal)
        #expect(status.resolutions == resolutions)
    }

    @Test func anEventBeforeItsSubmissionCreatesTheRow() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.event("early", .inProgress, type: "OrderSoup", attempt: 2)], now: 5)

        let status = try #require(try store.reader.status(id: "early"))
        #expect(status.state == .inProgress)
        #expect(status.type == "OrderSoup")
        #expect(status.attempts == 2)
        #expect(status.parameters == nil)
    }

    // MARK: Never backwards

    @Test(arguments: [IntentState.inProgress, .needsInput, .queued])
    func aLateEventNeverMovesSuccessBackwards(_ late: IntentState) throws {
        let store = try StatusStore(path: path)
        try store.record([.queued(Self.envelope("a")), Self.event("a", .inProgress)], now: 1)
        try store.record([Self.event("a", .success, response: Self.done)], now: 2)

        let lateUpdate: StatusStore.Update =
            late == .queued
            ? .queued(Self.envelope("a"))
            : Self.event("a", late, response: IntentResponse(code: "late"), progress: .init(fraction: 0.1, message: "late"), worker: "late:1")
        try store.record([lateUpdate], now: 3)

        let status = try #require(try store.reader.status(id: "a"))
        #expect(status.state == .success)
        #expect(status.terminal)
        #expect(status.response == Self.done)
        #expect(status.progress == nil)
        #expect(status.finishedAt == 2)
        #expect(status.updatedAt == 2)
    }

    @Test(arguments: [IntentState.success, .canceled, .failure])
    func aTerminalStateIsFinal(_ late: IntentState) throws {
        let store = try StatusStore(path: path)
        let failure = IntentFailure(code: "soupSoldOut", message: "Minestrone is sold out today").response
        try store.record([Self.event("f", .failure, response: failure)], now: 1)
        try store.record([Self.event("f", late, attempt: 2, response: IntentResponse(code: "other", message: "later"))], now: 2)

        let status = try #require(try store.reader.status(id: "f"))
        #expect(status.state == .failure)
        #expect(status.response == failure)
        #expect(status.finishedAt == 1)
    }

    @Test func needsInputIsNotOverwrittenByALateInProgress() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.event("n", .needsInput, resolutions: [ParameterResolution("content", .needsValue)])], now: 1)
        try store.record([Self.event("n", .inProgress)], now: 2)

        #expect(try store.reader.status(id: "n")?.state == .needsInput)
    }

    @Test func outOfOrderEventsInOneBatchEndInTheHighestState() throws {
        let store = try StatusStore(path: path)
        try store.record(
            [
                Self.event("o", .success, response: Self.done),
                Self.event("o", .inProgress),
                .queued(Self.envelope("o")),
            ], now: 1)

        let status = try #require(try store.reader.status(id: "o"))
        #expect(status.state == .success)
        #expect(status.response == Self.done)
    }

    @Test func repeatedInProgressUpdatesProgress() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.event("p", .inProgress, at: 10, progress: .init(fraction: 0.25, message: "a quarter"))], now: 11)
        #expect(try store.reader.status(id: "p")?.progress == StatusEvent.Progress(fraction: 0.25, message: "a quarter"))

        try store.record([Self.event("p", .inProgress, at: 12, progress: .init(fraction: 0.75, message: "three quarters"))], now: 13)
        let status = try #require(try store.reader.status(id: "p"))
        #expect(status.state == .inProgress)
        #expect(status.progress == StatusEvent.Progress(fraction: 0.75, message: "three quarters"))
        #expect(status.updatedAt == 13)
        #expect(status.startedAt == 10)
    }

    @Test func aQueuedArrivingAfterSuccessFillsTheSubmissionButKeepsTheState() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.event("s", .inProgress), Self.event("s", .success, response: Self.done)], now: 5)
        #expect(try store.reader.status(id: "s")?.parameters == nil)

        try store.record([.queued(Self.envelope("s", parameters: ["content": "late queued"], submittedAt: 4))], now: 6)

        let status = try #require(try store.reader.status(id: "s"))
        #expect(status.state == .success)
        #expect(status.response == Self.done)
        #expect(status.parameters == ["content": "late queued"])
        #expect(status.submittedAt == 4)
        #expect(status.queuedAt == 6)
    }

    @Test func aSecondQueuedDoesNotReplaceTheFirstSubmission() throws {
        let store = try StatusStore(path: path)
        try store.record([.queued(Self.envelope("q", parameters: ["content": "first"], submittedAt: 1))], now: 1)
        try store.record([.queued(Self.envelope("q", parameters: ["content": "second"], submittedAt: 2))], now: 2)

        let status = try #require(try store.reader.status(id: "q"))
        #expect(status.parameters == ["content": "first"])
        #expect(status.submittedAt == 1)
        #expect(status.queuedAt == 1)
    }

    @Test func attemptsTakesTheMaximum() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.event("a", .inProgress, attempt: 3)], now: 1)
        try store.record([Self.event("a", .inProgress, attempt: 1)], now: 2)
        #expect(try store.reader.status(id: "a")?.attempts == 3)

        try store.record([Self.event("a", .success, attempt: 2, response: Self.done)], now: 3)
        #expect(try store.reader.status(id: "a")?.attempts == 3)

        try store.record(
            [Self.event("b", .inProgress, attempt: 1), Self.event("b", .failure, attempt: 4, response: IntentResponse(code: "x"))], now: 1)
        #expect(try store.reader.status(id: "b")?.attempts == 4)
    }

    // MARK: Listing

    func seedList(_ store: StatusStore) throws {
        try store.record([.queued(Self.envelope("m1", type: "SendMessage"))], now: 10)
        try store.record([.queued(Self.envelope("s1", type: "OrderSoup"))], now: 20)
        try store.record([Self.event("m2", .success, type: "SendMessage", response: Self.done)], now: 30)
        try store.record([Self.event("s2", .success, type: "OrderSoup", response: Self.done)], now: 40)
        try store.record([Self.event("m3", .failure, type: "SendMessage", response: IntentResponse(code: "x"))], now: 50)
        try store.record([Self.event("m4", .success, type: "SendMessage", response: Self.done)], now: 60)
    }

    @Test func listIsNewestFirst() throws {
        let store = try StatusStore(path: path)
        try seedList(store)

        #expect(try store.reader.list().map(\.id) == ["m4", "m3", "s2", "m2", "s1", "m1"])
    }

    @Test func listFiltersByStateTypeAndLimit() throws {
        let store = try StatusStore(path: path)
        try seedList(store)

        #expect(try store.reader.list(state: .success).map(\.id) == ["m4", "s2", "m2"])
        #expect(try store.reader.list(state: .queued).map(\.id) == ["s1", "m1"])
        #expect(try store.reader.list(state: .canceled).isEmpty)
        #expect(try store.reader.list(type: "OrderSoup").map(\.id) == ["s2", "s1"])
        #expect(try store.reader.list(state: .success, type: "SendMessage").map(\.id) == ["m4", "m2"])
        #expect(try store.reader.list(limit: 2).map(\.id) == ["m4", "m3"])
        #expect(try store.reader.list(state: .success, limit: 1).map(\.id) == ["m4"])
        #expect(try store.reader.list(type: "Unknown").isEmpty)
    }

    @Test func listsAndTalliesSearchAnIndexWhateverTheFilters() throws {
        let store = try StatusStore(path: path)
        try seedList(store)
        func plan(_ query: (sql: String, bindings: [SQLValue])) throws -> [String] {
            try store.reader.database.query("EXPLAIN QUERY PLAN " + query.sql, query.bindings) { $0.string(3) }
        }
        for owner in [nil, "alice"] {
            for state in [nil, IntentState.failure] {
                for type in [nil, "OrderSoup"] {
                    let steps = try plan(StatusReader.listQuery(state: state, type: type, owner: owner, limit: 50))
                    // Newest first straight from an index: no pass over the table, no sort of every row.
                    #expect(steps.allSatisfy { $0.contains("USING INDEX") || $0.contains("USING COVERING INDEX") }, "\(steps)")
                    #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")
                }
            }
        }
        #expect(try plan(StatusReader.tallyQuery(owner: "alice")).contains { $0.contains("COVERING INDEX intent_status_by_owner (owner=?)") })
        #expect(try plan(StatusReader.tallyQuery(owner: nil)).contains { $0.contains("COVERING INDEX") })
    }

    @Test func removingAGroupOrAnOwnersIntentsLeavesTheOthers() throws {
        let store = try StatusStore(path: path)
        for (id, group, owner) in [("g1", "team", "alice"), ("g2", "team", "bob"), ("n1", nil, "alice"), ("n2", nil, "bob")] {
            var envelope = Self.envelope(id, type: "SendMessage")
            envelope.group = group
            try store.record([.queued(envelope, by: StatusStore.Submitter(user: owner))], now: 1)
        }
        #expect(try store.delete(group: "team", owner: "alice") == 1)
        #expect(Set(try store.reader.list().map(\.id)) == ["g2", "n1", "n2"])
        #expect(try store.delete(ids: ["g2", "n1"], owner: "bob") == 1)
        #expect(Set(try store.reader.list().map(\.id)) == ["n1", "n2"])
        #expect(try store.delete(group: "team") == 0)
        #expect(try store.delete(owner: "alice") == 1)
        #expect(try store.reader.list().map(\.id) == ["n2"])
        #expect(try store.delete() == 1)
        #expect(try store.reader.list().isEmpty)
    }

    @Test func listReflectsTheLatestUpdate() throws {
        let store = try StatusStore(path: path)
        try seedList(store)
        try store.record([Self.event("m1", .inProgress)], now: 70)

        #expect(try store.reader.list(limit: 1).map(\.id) == ["m1"])
        #expect(try store.reader.list(state: .queued).map(\.id) == ["s1"])
    }

    @Test func countsGroupByState() throws {
        let store = try StatusStore(path: path)
        #expect(try store.reader.counts() == [:])

        try seedList(store)

        #expect(try store.reader.counts() == [.queued: 2, .success: 3, .failure: 1])
        // `success` is what is left of all intents once the others are counted: none left, none said.
        #expect(try store.delete(ids: ["m2", "s2", "m4"]) == 3)
        #expect(try store.reader.counts() == [.queued: 2, .failure: 1])
        try store.record(
            [Self.event("m1", .success, response: Self.done), Self.event("s1", .success, type: "OrderSoup", response: Self.done)], now: 70)
        #expect(try store.reader.counts() == [.success: 2, .failure: 1])
    }

    @Test func theStateIndexHoldsOnlyIntentsNotSuccessAndEveryStateLookupReadsIt() throws {
        let store = try StatusStore(path: path)
        try seedList(store)
        try store.record([Self.event("q1", .needsInput)], now: 70)
        try store.record([Self.event("d1", .failure, response: IntentResponse(code: FailureCode.deadLettered))], now: 80)
        let db = store.reader.database
        func plan(_ sql: String, _ bindings: [SQLValue] = []) throws -> String {
            try db.query("EXPLAIN QUERY PLAN " + sql, bindings) { $0.string(3) }.joined(separator: "; ")
        }
        // The entries are those of the intents not `success`, whatever states the others passed through.
        let entries = try db.query("SELECT state FROM intent_status INDEXED BY intent_status_unsettled WHERE state <> 'success'") {
            $0.string(0)
        }
        #expect(entries.sorted() == ["failure", "failure", "needsInput", "queued", "queued"])
        #expect(try db.queryFirst("PRAGMA integrity_check") { $0.string(0) } == "ok")
        let partial = try db.queryFirst("SELECT partial FROM pragma_index_list('intent_status') WHERE name = 'intent_status_unsettled'") {
            $0.int(0)
        }
        #expect(partial == 1)

        for state in IntentState.allCases where state != .success {
            let list = StatusReader.listQuery(state: state, type: nil, owner: "alice", limit: 50)
            #expect(try plan(list.sql, list.bindings).contains("USING INDEX intent_status_unsettled (state=?)"), "\(state)")
        }
        let successes = StatusReader.listQuery(state: .success, type: nil, owner: nil, limit: 50)
        #expect(try plan(successes.sql, successes.bindings).contains("intent_status_by_time"))
        #expect(try plan(StatusReader.countsQuery).contains("COVERING INDEX intent_status_unsettled"))
        #expect(try plan(StatusReader.deadLetterQuery, [.int(50)]).contains("USING INDEX intent_status_unsettled (state=?)"))
        #expect(try plan(StatusStore.expiryQuery, [.real(100), .real(0), .real(0), .int(10)]).contains("intent_status_unsettled"))
        #expect(try store.reader.deadLettered().map(\.id) == ["d1"])
        #expect(try store.questionsToExpire(olderThan: 0, resendAfter: 0, now: 100).map(\.id) == ["q1"])
    }

    /// Takes a store back to the schema version before the first migration that holds `marker`, undoing the
    /// migrations after it that add columns (the tests undo the others themselves).
    static func downgrade(_ store: StatusStore, toBefore marker: String) throws {
        let version = try #require(StatusStore.migrations.firstIndex { $0.contains(marker) })
        let added: [(migration: String, undo: String)] = [
            (
                "abandon_turn",
                "DROP INDEX intent_status_abandoned; ALTER TABLE intent_status DROP COLUMN abandon_turn; ALTER TABLE intent_status DROP COLUMN abandon_marked_at; ALTER TABLE intent_status DROP COLUMN abandon_requested_at"
            ),
            ("active_since", "ALTER TABLE intent_schedule DROP COLUMN active_since"),
        ]
        for (migration, undo) in added where StatusStore.migrations.firstIndex(where: { $0.contains(migration) })! >= version {
            try store.database.execute(undo)
        }
        try store.database.execute("PRAGMA user_version=\(version)")
    }

    /// A store from before schedules said since when they are active: each is active since it was made.
    @Test func aStoreFromBeforeSchedulesKeptTheirActiveTimeHasThemActiveSinceMade() throws {
        do {
            let store = try StatusStore(path: path)
            try Self.downgrade(store, toBefore: "active_since")
            try store.database.execute(
                """
                INSERT INTO intent_schedule(name, owner, type, parameters, every, starts, paused, created_at)
                VALUES ('tick', 'alice', 'SendMessage', '{}', 60, 1000, 0, 990.5)
                """)
        }
        let store = try StatusStore(path: path)
        #expect(try store.reader.schedules().map(\.activeSince) == [990.5])
    }

    @Test func aStoreFromBeforeThePartialStateIndexIsMigratedWithEveryCountKept() throws {
        // A store as the version before left it: its full state index and its schema version, and rows written
        // through that index.
        do {
            let store = try StatusStore(path: path)
            try store.database.execute(
                "DROP INDEX intent_status_unsettled; CREATE INDEX intent_status_by_state ON intent_status(state, updated_at)")
            try seedList(store)
            try store.record([Self.event("q1", .needsInput)], now: 70)
            // The columns of later migrations, which this version's writes above still needed, go last.
            try Self.downgrade(store, toBefore: "CREATE INDEX intent_status_unsettled")
        }
        let store = try StatusStore(path: path)
        let indexes = try store.database.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'intent_status'") {
            $0.string(0)
        }
        #expect(indexes.contains("intent_status_unsettled"))
        #expect(!indexes.contains("intent_status_by_state"))
        #expect(try store.reader.counts() == [.queued: 2, .success: 3, .failure: 1, .needsInput: 1])
        #expect(try store.reader.list(state: .queued).map(\.id) == ["s1", "m1"])
        #expect(try store.database.queryFirst("PRAGMA integrity_check") { $0.string(0) } == "ok")
    }

    // MARK: Readers

    @Test func aReadOnlyStoreSeesTheWritersCommits() throws {
        let writer = try StatusStore(path: path)
        let reader = try StatusReader(path: path)
        #expect(try reader.status(id: "r") == nil)

        try writer.record([.queued(Self.envelope("r"))], now: 1)
        #expect(try reader.status(id: "r")?.state == .queued)

        try writer.record([Self.event("r", .inProgress)], now: 2)
        #expect(try reader.status(id: "r")?.state == .inProgress)

        try writer.record([Self.event("r", .success, response: Self.done)], now: 3)
        let status = try #require(try reader.status(id: "r"))
        #expect(status.state == .success)
        #expect(status.response == Self.done)
        #expect(try reader.list().map(\.id) == ["r"])
        #expect(try reader.counts() == [.success: 1])
    }

    @Test func aBatchWrittenWithoutASyncIsSeenAtOnceAndEveryOtherWriteStillSyncs() throws {
        let writer = try StatusStore(path: path)
        let reader = try StatusReader(path: path)

        // The log syncs the store's commits made (see CStoreVFS.h): each write's delta says whether its commit synced.
        let start = try #require(writer.database.syncedCommits)
        try writer.record([.queued(Self.envelope("n"))], now: 1, durable: false)
        #expect(try reader.status(id: "n")?.state == .queued)
        #expect(writer.database.syncedCommits == start, "written and visible, not synced")
        try writer.record([.queued(Self.envelope("m"))], now: 1)
        #expect(writer.database.syncedCommits == start + 1, "a batch that must sync")
        try writer.record([.queued(Self.envelope("o"))], now: 1, durable: false)
        #expect(writer.database.syncedCommits == start + 1)
        #expect(try writer.deleteFinished(before: 0) == 0)

        try writer.syncLog(now: 5)
        #expect(writer.database.syncedCommits == start + 2, "every other write syncs")
        #expect(try writer.database.queryFirst("SELECT synced_at FROM store_sync") { $0.double(0) } == 5)
        writer.database.close()
        // Written, if not yet synced, is written: a store opened again (a recorder started again) has it.
        #expect(try StatusStore(path: path).reader.status(id: "n")?.state == .queued)
    }

    /// The recorder acks what it wrote unsynced once a durable batch has synced the log. A durable batch that
    /// changes nothing (an outcome delivered again, a cancel of a finished intent) writes no page, and its commit
    /// syncs nothing: the store syncs the log itself, or the batches before it would be acked and not durable.
    @Test func aDurableBatchThatChangesNothingStillMakesTheBatchesBeforeItDurable() throws {
        let writer = try StatusStore(path: path)
        try writer.record([.queued(Self.envelope("x"))], now: 1)
        try writer.record([Self.event("x", .success, at: 2, response: Self.done)], now: 2, durable: false)
        let commits = try #require(writer.database.syncedCommits)
        let logSyncs = try #require(writer.database.logSyncs)

        try writer.record([Self.event("x", .success, at: 2, response: Self.done)], now: 3)
        #expect(writer.database.syncedCommits == commits, "the same outcome again changed no row: its commit synced nothing")
        #expect(writer.database.logSyncs == logSyncs + 1, "the log was synced, with the unsynced outcome in it")
        #expect(try writer.reader.status(id: "x")?.state == .success)
    }

    @Test func aReaderOpensTheFileReadOnly() throws {
        _ = try StatusStore(path: path)
        let reader = try StatusReader(path: path)

        #expect(throws: DatabaseError.self) { try reader.database.run("DELETE FROM intent_status") }
        #expect(throws: DatabaseError.self) {
            try reader.database.run("INSERT INTO intent_status(id, type, state, rank, updated_at) VALUES ('w', 'T', 'queued', 0, 1)")
        }
        #expect(try reader.status(id: "w") == nil)
    }

    /// A state a newer IntentQueue wrote is said, not read as `queued` (a `--wait` would wait for an end it cannot see).
    @Test func aStateThisBuildDoesNotKnowIsSaidNotReadAsAnother() throws {
        let store = try StatusStore(path: path)
        try store.database.run("INSERT INTO intent_status(id, type, state, rank, updated_at) VALUES ('w', 'T', 'paused', 0, 1)")
        let reader = try StatusReader(path: path)
        let error = #expect(throws: StatusReader.UnknownState.self) { try reader.status(id: "w") }
        #expect(error?.description.contains("'paused'") == true)
        #expect(throws: StatusReader.UnknownState.self) { try reader.tally() }
    }

    @Test func openingAMissingFileForReadingThrows() throws {
        let missing = directory.file("nowhere/status.sqlite")

        let error = #expect(throws: DatabaseError.self) { try StatusReader(path: missing) }
        #expect(error?.message.contains(missing) == true)
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func aReaderOnAFileWithoutTheSchemaSeesNothing() throws {
        let empty = directory.file("empty.sqlite")
        do {
            let database = try Database(path: empty)
            try database.execute("CREATE TABLE unrelated(x)")
            database.close()
        }

        let reader = try StatusReader(path: empty)

        #expect(try reader.status(id: "a") == nil)
        #expect(try reader.list().isEmpty)
        #expect(try reader.counts().isEmpty)
    }

    @Test func aReaderOpenedBeforeTheSchemaSeesItOnceCreated() throws {
        let early = directory.file("early.sqlite")
        try Database(path: early).close()
        let reader = try StatusReader(path: early)
        #expect(try reader.status(id: "a") == nil)

        let writer = try StatusStore(path: early)
        try writer.record([.queued(Self.envelope("a"))], now: 1)

        #expect(try reader.status(id: "a")?.state == .queued)
    }

    @Test func reopeningTheStoreKeepsWhatWasRecorded() throws {
        do {
            let store = try StatusStore(path: path)
            try store.record([Self.event("k", .success, response: Self.done)], now: 1)
        }
        let reopened = try StatusStore(path: path)
        #expect(try reopened.reader.status(id: "k")?.response == Self.done)
    }

    // MARK: Verbatim text

    enum Awkward: String, CaseIterable, Sendable {
        case quotesAndBackslashes, sqlInjection, unicode, hundredKilobytes

        var text: String {
            switch self {
            case .quotesAndBackslashes: #"She said "hi" and it's "fine" \ \" \n"#
            case .sqlInjection: "'; DROP TABLE intent_status; --"
            case .unicode: "Zoë ✂️ 日本語 👋🏽 \u{1F9F4} \u{200D}\tline\nbreak"
            case .hundredKilobytes: String(repeating: "abcdefghij", count: 10_240)
            }
        }
    }

    @Test(arguments: Awkward.allCases)
    func stringsAreStoredVerbatim(_ awkward: Awkward) throws {
        let text = awkward.text
        let store = try StatusStore(path: path)
        let id = "id " + text
        try store.record(
            [
                .queued(Self.envelope(id, type: "Type" + text, parameters: ["content": .string(text), text: "key"])),
                Self.event(id, .inProgress, type: "Type" + text, progress: .init(fraction: nil, message: text), worker: text),
            ], now: 1)

        let running = try #require(try store.reader.status(id: id))
        #expect(running.id == id)
        #expect(running.type == "Type" + text)
        #expect(running.parameters == ["content": .string(text), text: "key"])
        #expect(running.progress?.message == text)
        #expect(running.worker == text)

        let response = IntentResponse(code: text, message: text, payload: ["echo": .string(text)])
        let resolutions = [ParameterResolution("content", .unsupported(reason: text)), ParameterResolution(text, .success(.string(text)))]
        try store.record([Self.event(id, .failure, type: "Type" + text, response: response, resolutions: resolutions)], now: 2)

        let failed = try #require(try store.reader.status(id: id))
        #expect(failed.response == response)
        #expect(failed.resolutions == resolutions)
        #expect(try store.reader.list(type: "Type" + text).map(\.id) == [id])
        #expect(try store.reader.counts() == [.failure: 1])
        #expect(try store.reader.status(id: "id ") == nil)
    }

    @Test func textWithANULByteIsStoredWhole() throws {
        let store = try StatusStore(path: path)
        let text = "before\u{0}after"
        try store.record([Self.event(text, .failure, response: IntentResponse(code: "x", message: text))], now: 1)

        let status = try #require(try store.reader.status(id: text))
        #expect(status.id == text)
        #expect(status.response?.message == text)
        #expect(try store.reader.status(id: "before") == nil)
    }
}

/// Who may change an intent's row: its owner's events, answers and cancels
/// only, and events of its own type.
@Suite struct StatusStoreOwnershipTests {
    let directory: TemporaryDirectory
    let store: StatusStore

    init() throws {
        directory = try TemporaryDirectory()
        store = try StatusStore(path: directory.file("status.sqlite"))
        try store.record([.queued(IntentEnvelope(id: "a", type: "SendMessage", parameters: [:], submittedAt: 1), by: .init(user: "alice"))])
        try store.record([.event(StatusEvent(id: "a", type: "SendMessage", state: .needsInput, attempt: 1, owner: "alice"))])
    }

    @Test func anAnswerOrACancelFromSomeoneElseChangesNothing() throws {
        let answer = IntentEnvelope(
            id: "a", type: "SendMessage", parameters: ["content": "mine"], submittedAt: 2, turn: 1, answers: ["content": "mine"])
        try store.record([.queued(answer, by: .init(user: "bob")), .cancelRequested(id: "a", by: .init(user: "bob"))])
        let status = try #require(try store.reader.status(id: "a"))
        #expect(status.state == .needsInput && status.turn == 0 && status.parameters?["content"] == nil)
        try store.record([.queued(answer, by: .init(user: "ops", isOperator: true))])
        #expect(try store.reader.status(id: "a")?.state == .queued, "an operator may answer")
    }

    /// An anonymous submission under an owned intent's id used to match its row (no owner counted as any), and
    /// filled in what the row lacked: a due time and a body, which the recorder then released as the owner's.
    @Test func anAnonymousSubmissionUnderAnOwnedIDChangesNothing() throws {
        let mallory = IntentEnvelope(
            id: "a", type: "SendMessage", parameters: ["content": "mallory's"], submittedAt: 2, group: "g", dueAt: 1)
        try store.record([.queued(mallory, by: .init(user: nil))], now: 10)
        let status = try #require(try store.reader.status(id: "a"))
        #expect(status.state == .needsInput && status.dueAt == nil && status.group == nil, "\(status)")
        #expect(try store.dueIntents(at: 2_000, keptBy: 2_000).isEmpty)
    }

    /// Two submitters raced for one id: the store recorded alice's submission, the ledger admitted bob's. Bob's
    /// events used to make the row his while it kept alice's parameters, which bob could then read.
    @Test func aWorkersEventForAnotherOwnerTakesTheRowWithoutTheFirstSubmission() throws {
        let secret = IntentEnvelope(
            id: "x", type: "SendMessage", parameters: ["content": "alice's secret"], submittedAt: 1, group: "g", dueAt: 50)
        try store.record([.queued(secret, by: .init(user: "alice"))], now: 1)
        let bobs = IntentEnvelope(id: "x", type: "SendMessage", parameters: ["content": "bob's"], submittedAt: 2)
        try store.record([.queued(bobs, by: .init(user: "bob"))], now: 2)
        try store.record([.event(StatusEvent(id: "x", type: "SendMessage", state: .inProgress, at: 3, attempt: 1, owner: "bob"))], now: 3)
        let status = try #require(try store.reader.status(id: "x"))
        #expect(status.owner == "bob" && status.state == .inProgress)
        #expect(status.parameters == nil && status.group == nil && status.dueAt == nil, "\(status)")
        #expect(try store.dueIntents(at: 2_000, keptBy: 2_000).isEmpty, "alice's body is not released as bob's")
        // The owner's own events change nothing of its submission.
        let own = IntentEnvelope(id: "o", type: "SendMessage", parameters: ["content": "mine"], submittedAt: 1, group: "g", dueAt: 50)
        try store.record([.queued(own, by: .init(user: "alice"))], now: 1)
        try store.record([.event(StatusEvent(id: "o", type: "SendMessage", state: .success, at: 4, attempt: 1, owner: "alice"))], now: 4)
        let kept = try #require(try store.reader.status(id: "o"))
        #expect(kept.owner == "alice" && kept.parameters == ["content": "mine"] && kept.group == "g" && kept.dueAt == 50, "\(kept)")
        // Nor, in one batch, do a submission and another owner's outcome make one row with the submission.
        try store.record(
            [
                .queued(IntentEnvelope(id: "y", type: "SendMessage", parameters: ["content": "alice's"], submittedAt: 1), by: .init(user: "alice")),
                .event(StatusEvent(id: "y", type: "SendMessage", state: .success, at: 5, attempt: 1, owner: "bob")),
            ], now: 5)
        let raced = try #require(try store.reader.status(id: "y"))
        #expect(raced.owner == "bob" && raced.state == .success && raced.parameters == nil, "\(raced)")
    }

    @Test func anAnswerUnderAnotherTypeChangesNothing() throws {
        let underSoup = IntentEnvelope(
            id: "a", type: "OrderSoup", parameters: ["soup": "tomato"], submittedAt: 2, turn: 1, answers: ["soup": "tomato"])
        try store.record([.queued(underSoup, by: .init(user: "alice"))])
        let status = try #require(try store.reader.status(id: "a"))
        #expect(status.state == .needsInput && status.turn == 0 && status.type == "SendMessage" && status.parameters?["soup"] == nil)
        var own = underSoup
        own.type = "SendMessage"
        own.parameters = ["content": "mine"]
        own.answers = ["content": "mine"]
        try store.record([.queued(own, by: .init(user: "alice"))])
        #expect(try store.reader.status(id: "a")?.state == .queued, "the same answer under the intent's own type starts its turn")
    }

    @Test func aDeadLetterOfAnotherOwnerOrAnEventOfAnotherTypeDoesNotApply() throws {
        let dead = StatusEvent(
            id: "a", type: "SendMessage", state: .failure, attempt: 5,
            response: IntentResponse(code: FailureCode.deadLettered), owner: "bob")
        let otherType = StatusEvent(id: "a", type: "OrderSoup", state: .success, attempt: 1, response: .success("soup"), owner: "alice")
        try store.record([.event(dead), .event(otherType)])
        #expect(try store.reader.status(id: "a")?.state == .needsInput, "bob's dead letter and a soup under alice's id change nothing")
        var own = dead
        own.owner = "alice"
        try store.record([.event(own)])
        #expect(try store.reader.status(id: "a")?.response?.code == FailureCode.deadLettered)
    }

    @Test func aRefusalIsKeptForItsSenderAndTheIntentIsUntouched() throws {
        let refusal = StatusEvent(
            id: "a", type: "SendMessage", state: .failure, attempt: 1,
            response: IntentResponse(code: FailureCode.notOwner, message: "not bob's"), owner: "bob", refused: true)
        try store.record([.refusal(refusal)])
        #expect(try store.reader.status(id: "a")?.state == .needsInput)
        #expect(try store.reader.refusal(id: "a", owner: "bob")?.response?.code == FailureCode.notOwner)
        #expect(try store.reader.refusal(id: "a", owner: "alice") == nil)
        let bob = StatusQuery.Reader(user: "bob", isOperator: false)
        #expect(
            try StatusQuery.show(id: "a").answer(from: store.reader, writer: store, for: bob)
                == .status(try store.reader.refusal(id: "a", owner: "bob")))
        #expect(try StatusQuery.list(state: nil, type: nil, limit: 10).answer(from: store.reader, writer: store, for: bob) == .statuses([]))
        #expect(throws: StatusQuery.Forbidden.self) { try StatusQuery.dead(limit: 10).answer(from: store.reader, writer: store, for: bob) }
    }
}
