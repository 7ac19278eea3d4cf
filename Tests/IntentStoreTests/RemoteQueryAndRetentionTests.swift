import Foundation
import IntentKit
import Testing

@testable import IntentStore

/// The remote status protocol, the transitions metrics count, and retention.
@Suite struct RemoteQueryAndRetentionTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.file("status.sqlite")
    }

    static func event(_ id: String, _ state: IntentState, code: String? = nil) -> StatusStore.Update {
        .event(StatusEvent(id: id, type: "SendMessage", state: state, attempt: 1, response: code.map { IntentResponse(code: $0, message: $0) }))
    }

    static func queued(_ id: String) -> StatusStore.Update {
        .queued(IntentEnvelope(id: id, type: "SendMessage", parameters: ["content": "hi"], submittedAt: 1))
    }

    @Test func queriesRoundTripAndBadOnesAreRefused() throws {
        for query in [
            StatusQuery.show(id: "a b"), .list(state: .needsInput, type: "OrderSoup", limit: 7), .list(state: nil, type: nil, limit: 50),
            .dead(limit: 3),
        ] {
            #expect(try StatusQuery.decode(query.encoded) == query)
        }
        for bad in [
            #"[1]"#, #"{"query":"drop"}"#, #"{"query":"show"}"#, #"{"query":"list","limit":0}"#, #"{"query":"list","state":"sleeping"}"#, "not json",
        ] {
            #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.decode(Array(bad.utf8)) }
        }
    }

    /// A delete keeps unfinished intents unless told otherwise: their rows are what the recorder releases a scheduled
    /// intent from and expires a question from (removed, a scheduled intent no worker kept never ran, and a question
    /// never expired), and what an intent's next event would come back to. It says how many it kept, by ids, by
    /// group and for all, and over the broker; a request without the field (an older client's) keeps them too.
    @Test func aDeleteKeepsUnfinishedIntentsUnlessToldAndSaysHowManyItKept() throws {
        let store = try StatusStore(path: path)
        func seed() throws {
            for (id, group) in [("done", "g"), ("asking", "g"), ("due", nil), ("failed", nil)] {
                var envelope = IntentEnvelope(id: id, type: "SendMessage", parameters: ["content": "hi"], submittedAt: 1)
                envelope.group = group
                if id == "due" { envelope.dueAt = 1e10 }
                try store.record([.queued(envelope, by: StatusStore.Submitter(user: "alice"))], now: 1)
            }
            func event(_ id: String, _ state: IntentState, code: String? = nil) -> StatusStore.Update {
                .event(
                    StatusEvent(
                        id: id, type: "SendMessage", state: state, attempt: 1, response: code.map { IntentResponse(code: $0, message: $0) },
                        owner: "alice"))
            }
            try store.record([event("done", .success, code: "success"), event("asking", .needsInput), event("failed", .failure, code: "x")], now: 2)
        }
        try seed()
        #expect(try store.delete(ids: ["asking", "asking"], unfinished: false) == .init(deleted: 0, keptUnfinished: 1), "one intent, named twice")
        #expect(try store.delete(ids: ["done", "asking", "nowhere"], unfinished: false) == .init(deleted: 1, keptUnfinished: 1))
        #expect(try store.delete(group: "g", unfinished: false) == .init(deleted: 0, keptUnfinished: 1))
        #expect(try store.delete(owner: "bob", unfinished: false) == .init(deleted: 0, keptUnfinished: 0), "only the owner's are counted")
        #expect(try store.delete(unfinished: false) == .init(deleted: 1, keptUnfinished: 2))
        #expect(Set(try store.reader.list().map(\.id)) == ["asking", "due"])
        #expect(try store.reader.status(id: "due")?.state == .scheduled, "still to be released when due")
        #expect(try store.delete(unfinished: true) == .init(deleted: 2, keptUnfinished: 0))
        #expect(try store.reader.list().isEmpty)

        // Over the broker, as the recorder answers it.
        try seed()
        let reader = StatusQuery.Reader(user: "alice", isOperator: false)
        let kept = try StatusQuery.decode(Array(#"{"query":"delete","ids":["done","asking","due"]}"#.utf8))
        #expect(kept == .delete(ids: ["done", "asking", "due"], group: nil, unfinished: false), "without the field: finished only")
        let answer = try kept.answer(from: store.reader, writer: store, for: reader)
        #expect(answer == .deleted(.init(deleted: 1, keptUnfinished: 2)))
        #expect(String(decoding: StatusQuery.reply(.success(answer)), as: UTF8.self) == #"{"deleted":1,"kept":2}"#)
        #expect(try StatusQuery.decodeReply(StatusQuery.reply(.success(answer))) == answer)
        let all = StatusQuery.delete(ids: ["asking", "due"], group: nil, unfinished: true)
        #expect(try StatusQuery.decode(all.encoded) == all)
        #expect(try all.answer(from: store.reader, writer: store, for: reader) == .deleted(.init(deleted: 2, keptUnfinished: 0)))
        #expect(String(decoding: StatusQuery.reply(.success(.deleted(.init(deleted: 2, keptUnfinished: 0)))), as: UTF8.self) == #"{"deleted":2}"#)
        #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.decode(Array(#"{"query":"delete","all":true,"unfinished":"yes"}"#.utf8)) }
        #expect(
            try StatusQuery.decode(Array(#"{"query":"delete","all":true,"unfinished":null}"#.utf8))
                == .delete(ids: nil, group: nil, unfinished: false))
        // A delete that keeps unfinished intents goes under a query of its own, which a recorder from before kept
        // intents refuses (it knew only `delete`, and would remove them all): the refusal is what its clients see.
        let finished = StatusQuery.delete(ids: ["done", "asking"], group: nil, unfinished: false)
        #expect(String(decoding: finished.encoded, as: UTF8.self).contains(#""query":"deleteFinished""#))
        #expect(!String(decoding: all.encoded, as: UTF8.self).contains("deleteFinished"))
        #expect(try StatusQuery.decode(finished.encoded) == finished)
        #expect(
            try StatusQuery.decode(StatusQuery.delete(ids: nil, group: "g", unfinished: false).encoded)
                == .delete(ids: nil, group: "g", unfinished: false))
        #expect(
            try StatusQuery.decode(StatusQuery.delete(ids: nil, group: nil, unfinished: false).encoded)
                == .delete(ids: nil, group: nil, unfinished: false))
        #expect(throws: StatusQuery.Invalid.self, "deleteFinished never removes unfinished intents") {
            try StatusQuery.decode(Array(#"{"query":"deleteFinished","all":true,"unfinished":true}"#.utf8))
        }
        #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.decode(Array(#"{"query":"deleteFinished"}"#.utf8)) }
    }

    @Test func aDeduplicationKeyStandsForTheFirstIntentOfItsOwnerAndTypeWithinItsWindow() throws {
        let store = try StatusStore(path: path)
        #expect(try store.deduplicate(owner: "alice", type: "SendMessage", key: "k", id: "first", seconds: 60, now: 1_000) == ("first", true))
        #expect(try store.deduplicate(owner: "alice", type: "SendMessage", key: "k", id: "second", seconds: 60, now: 1_059) == ("first", false))
        #expect(
            try store.deduplicate(owner: "bob", type: "SendMessage", key: "k", id: "bobs", seconds: 60, now: 1_010) == ("bobs", true), "per owner")
        #expect(try store.deduplicate(owner: "alice", type: "OrderSoup", key: "k", id: "soup", seconds: 60, now: 1_010) == ("soup", true), "per type")
        #expect(
            try store.deduplicate(owner: "alice", type: "SendMessage", key: "k", id: "third", seconds: 60, now: 1_060) == ("third", true),
            "past its window")
        #expect(try store.deduplicate(owner: "alice", type: "SendMessage", key: "k", id: "fourth", seconds: 60, now: 1_100) == ("third", false))

        // Over the broker: the reader's own keys; the recorder alone keeps them.
        let query = StatusQuery.dedupe(type: "SendMessage", key: "k", id: "mine", seconds: 30)
        #expect(try StatusQuery.decode(query.encoded) == query)
        let answer = try query.answer(from: store.reader, writer: store, for: .init(user: "carol", isOperator: false))
        #expect(try StatusQuery.decodeReply(StatusQuery.reply(.success(answer))) == .deduplicated(id: "mine", first: true))
        #expect(throws: StatusQuery.Forbidden.self) { try query.answer(from: store.reader) }
        for bad in [
            #"{"query":"dedupe","type":"SendMessage","key":"","id":"x","seconds":5}"#,
            #"{"query":"dedupe","type":"SendMessage","key":"k","id":"x","seconds":0}"#,
            #"{"query":"dedupe","type":"SendMessage","key":"k","id":"x","seconds":99999999}"#,
            #"{"query":"dedupe","type":"Send Message","key":"k","id":"x","seconds":5}"#,
            #"{"query":"dedupe","type":"SendMessage","key":"k","seconds":5}"#,
        ] {
            #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.decode(Array(bad.utf8)) }
        }
    }

    /// A submission's answer, read remotely: this reader's refusal recorded since the submission, else the status.
    /// (A remote wait used to ask `show`, which answers with the reader's own intent under the id, so the refusal of
    /// a second submission under it, with another type, was never seen.)
    @Test func aSubmissionIsAnsweredWithItsRefusalOnlyWhenOneCameSinceIt() throws {
        let store = try StatusStore(path: path)
        let alice = StatusQuery.Reader(user: "alice", isOperator: false)
        try store.record([.queued(IntentEnvelope(id: "o", type: "SendMessage", parameters: [:], submittedAt: 1), by: .init(user: "alice"))], now: 1)
        let refusal = StatusEvent(
            id: "o", type: "OrderSoup", state: .failure, at: 5, attempt: 1,
            response: IntentResponse(code: FailureCode.idInUse, message: "taken by a SendMessage intent"), owner: "alice", refused: true)
        try store.record([.refusal(refusal)], now: 5)
        let query = StatusQuery.submission(id: "o", since: 4)
        #expect(try StatusQuery.decode(query.encoded) == query)
        guard case .status(let answered?) = try query.answer(from: store.reader, writer: store, for: alice) else {
            Issue.record("no status")
            return
        }
        #expect(answered.response?.code == FailureCode.idInUse && answered.type == "OrderSoup", "\(answered)")
        // The client's clock a little ahead of the recorder's: the refusal still answers.
        guard case .status(let skewed?) = try StatusQuery.submission(id: "o", since: 5.3).answer(from: store.reader, writer: store, for: alice)
        else {
            Issue.record("no status")
            return
        }
        #expect(skewed.response?.code == FailureCode.idInUse)
        guard case .status(let older?) = try StatusQuery.submission(id: "o", since: 7).answer(from: store.reader, writer: store, for: alice) else {
            Issue.record("no status")
            return
        }
        #expect(older.type == "SendMessage" && older.state == .queued, "a refusal from before the submission is not its answer")
        #expect(try StatusQuery.decode(Array(#"{"query":"show","id":"o"}"#.utf8)) == .show(id: "o"))
        #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.decode(Array(#"{"query":"show","id":"o","refusedSince":"x"}"#.utf8)) }
    }

    /// Every scheduler reads every schedule in one answer: a producer's schedules with megabytes of parameters
    /// made that answer too large for the broker, which closed the recorder's channel on each scheduler's read.
    @Test func aSchedulesSizeAndAnOwnersNumberOfThemAreBounded() throws {
        let store = try StatusStore(path: path)
        let mallory = StatusQuery.Reader(user: "mallory", isOperator: false)
        let big = String(repeating: "x", count: Schedule.maximumParametersBytes)
        let huge = Schedule(name: "huge", type: "SendMessage", parameters: ["content": .string(big)], every: 86_400, starts: 1_000)
        #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.schedule(huge).answer(from: store.reader, writer: store, for: mallory) }
        for index in 0..<Schedule.maximumPerOwner {
            let each = Schedule(name: "s\(index)", type: "SendMessage", parameters: ["content": "hi"], every: 86_400, starts: 1_000)
            _ = try StatusQuery.schedule(each).answer(from: store.reader, writer: store, for: mallory)
        }
        let over = Schedule(name: "one-more", type: "SendMessage", parameters: ["content": "hi"], every: 86_400, starts: 1_000)
        #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.schedule(over).answer(from: store.reader, writer: store, for: mallory) }
        var again = over
        again.name = "s0"
        _ = try StatusQuery.schedule(again).answer(from: store.reader, writer: store, for: mallory)
        #expect(try store.reader.schedules().count == Schedule.maximumPerOwner, "one replaced, none added")
        let everyone = try StatusQuery.schedules.answer(from: store.reader, writer: store, for: .init(user: "w", isOperator: true))
        #expect(StatusQuery.reply(.success(everyone)).count <= StatusQuery.maximumReplyBytes)

        // An owner's schedules take at most 64 KiB of parameters in all.
        let large = String(repeating: "y", count: 15 << 10)
        func add(_ name: String, by owner: String) throws {
            let each = Schedule(name: name, type: "SendMessage", parameters: ["content": .string(large)], every: 60, starts: 1_000)
            _ = try StatusQuery.schedule(each).answer(from: store.reader, writer: store, for: .init(user: owner, isOperator: false))
        }
        for index in 0..<4 { try add("big-\(index)", by: "carol") }
        #expect(throws: StatusQuery.Invalid.self) { try add("big-4", by: "carol") }
        // Owners each within their own bounds, whose schedules together would not fit in one answer: every
        // scheduler's read failed, and each went on with the last list it had read. The store refuses the excess.
        var refused = 0
        for owner in 0..<110 {
            for index in 0..<4 {
                do {
                    try add("o\(owner)-\(index)", by: "owner\(owner)")
                } catch is StatusQuery.Invalid {
                    refused += 1
                }
            }
        }
        #expect(refused > 0)
        let all = try StatusQuery.schedules.answer(from: store.reader, writer: store, for: .init(user: "w", isOperator: true))
        let reply = StatusQuery.reply(.success(all))
        #expect(reply.count <= StatusQuery.maximumReplyBytes)
        #expect(try StatusQuery.decodeReply(reply) == all, "every scheduler can read them")
    }

    /// An answer over the size a reply may be is refused as asked for (the tools' usage error), not as a recorder that
    /// could not answer (which a script would ask again, for the same refusal).
    @Test func anAnswerTooLargeToSendIsRefusedAsAskedFor() throws {
        let large = String(repeating: "z", count: 1 << 20)
        let schedules = (0..<9).map { index in
            Schedule(name: "big\(index)", type: "SendMessage", parameters: ["content": .string(large)], every: 60, starts: 1_000)
        }
        let reply = StatusQuery.reply(.success(.schedules(schedules)))
        #expect(reply.count < 4_096, "the answer itself is not sent")
        #expect(throws: StatusQuery.Refused.self) { try StatusQuery.decodeReply(reply) }
    }

    /// A list of large submissions was built whole in the recorder's memory (10,000 of 1 MiB: 10 GB) before the
    /// reply's size was checked. It is refused once the rows read pass what a reply may carry.
    @Test func aListLargerThanAReplyIsRefusedBeforeItIsBuiltWhole() throws {
        let store = try StatusStore(path: path)
        let big = String(repeating: "x", count: 1 << 20)
        let alice = StatusQuery.Reader(user: "alice", isOperator: false)
        for index in 0..<10 {
            let envelope = IntentEnvelope(id: "big-\(index)", type: "SendMessage", parameters: ["content": .string(big)], submittedAt: 1)
            try store.record([.queued(envelope, by: .init(user: "alice"))], now: Double(index))
        }
        #expect(throws: StatusQuery.Invalid.self) {
            try StatusQuery.list(state: nil, type: nil, limit: 10).answer(from: store.reader, writer: store, for: alice)
        }
        guard case .statuses(let few) = try StatusQuery.list(state: nil, type: nil, limit: 3).answer(from: store.reader, for: alice) else {
            Issue.record("no list")
            return
        }
        #expect(few.map(\.id) == ["big-9", "big-8", "big-7"])
        // Read locally (no reply to fit), the same list is whole.
        guard case .statuses(let all) = try StatusQuery.list(state: nil, type: nil, limit: 10).answer(from: store.reader) else {
            Issue.record("no list")
            return
        }
        #expect(all.count == 10)
        // Dead letters, for an operator over the broker, the same way.
        try store.record(
            (0..<10).map { index in
                .event(
                    StatusEvent(
                        id: "big-\(index)", type: "SendMessage", state: .failure, attempt: 5,
                        response: IntentResponse(code: FailureCode.deadLettered), owner: "alice"))
            }, now: 20)
        #expect(throws: StatusQuery.Invalid.self) {
            try StatusQuery.dead(limit: 10).answer(from: store.reader, writer: store, for: .init(user: "ops", isOperator: true))
        }
    }

    /// A schedule asked for without a verified user used to be kept with no owner, and its runs then went out as the
    /// scheduler's own (a trusted user); now it is refused.
    @Test func aScheduleAskedForWithoutAUserIsRefused() throws {
        let store = try StatusStore(path: path)
        let tick = Schedule(name: "tick", type: "SendMessage", parameters: ["content": "hi"], every: 2, starts: 1_000)
        #expect(throws: StatusQuery.Forbidden.self) {
            try StatusQuery.schedule(tick).answer(from: store.reader, writer: store, for: .init(user: nil, isOperator: false))
        }
        #expect(try store.reader.schedules().isEmpty)
    }

    @Test func schedulesAreTheirOwnersToChangeAndReadAndTheirDueTimesFollowOnEveryPeriod() throws {
        let store = try StatusStore(path: path)
        let alice = StatusQuery.Reader(user: "alice", isOperator: false)
        let bob = StatusQuery.Reader(user: "bob", isOperator: false)
        let tick = Schedule(name: "tick", type: "SendMessage", parameters: ["content": "hi"], every: 2, starts: 1_000)
        // Since when each is active is the store's clock's (see `SchedulerTests`): left out of these comparisons.
        func timeless(_ answer: StatusQuery.Answer) -> StatusQuery.Answer {
            guard case .schedules(let schedules) = answer else { return answer }
            return .schedules(
                schedules.map {
                    var schedule = $0
                    schedule.activeSince = nil
                    return schedule
                })
        }
        let made = timeless(try StatusQuery.schedule(tick).answer(from: store.reader, writer: store, for: alice))
        #expect(
            made == .schedules([Schedule(name: "tick", owner: "alice", type: "SendMessage", parameters: ["content": "hi"], every: 2, starts: 1_000)]))
        #expect(try StatusQuery.decode(StatusQuery.schedule(tick).encoded) == .schedule(tick))
        // Another producer may neither take the name, nor pause, resume or remove it, nor see it.
        #expect(throws: StatusQuery.Forbidden.self) { try StatusQuery.schedule(tick).answer(from: store.reader, writer: store, for: bob) }
        for change in [
            StatusQuery.changeSchedule(name: "tick", paused: true, remove: false), .changeSchedule(name: "tick", paused: false, remove: true),
        ] {
            #expect(throws: StatusQuery.Forbidden.self) { try change.answer(from: store.reader, writer: store, for: bob) }
        }
        #expect(try StatusQuery.schedules.answer(from: store.reader, writer: store, for: bob) == .schedules([]))
        #expect(try store.reader.schedules().map(\.paused) == [false], "untouched")
        // Its owner pauses it; an operator (or a trusted scheduler) sees everyone's.
        _ = try StatusQuery.changeSchedule(name: "tick", paused: true, remove: false).answer(from: store.reader, writer: store, for: alice)
        let everyone = timeless(try StatusQuery.schedules.answer(from: store.reader, writer: store, for: .init(user: "ops", isOperator: true)))
        #expect(
            everyone
                == .schedules([
                    Schedule(name: "tick", owner: "alice", type: "SendMessage", parameters: ["content": "hi"], every: 2, starts: 1_000, paused: true)
                ]))
        #expect(throws: StatusQuery.Forbidden.self, "only the recorder writes schedules") {
            try StatusQuery.schedule(tick).answer(from: store.reader, for: alice)
        }

        #expect(tick.dueTimes(after: 0, upTo: 1_005) == [1_000, 1_002, 1_004], "from its start")
        #expect(tick.dueTimes(after: 1_002, upTo: 1_006) == [1_004, 1_006], "after, not at, the last one seen; up to and at the end")
        #expect(tick.dueTimes(after: 1_003, upTo: 999).isEmpty)
        #expect(tick.intentID(dueAt: 1_002) == "tick@1970-01-01T00:16:42.000Z", "the same id in every scheduler")
        #expect(Schedule.problem(withName: "tick 1") != nil && Schedule.problem(withName: String(repeating: "a", count: 101)) != nil)
    }

    /// A first due time far in the past (-10^16 s, where adding one to a due time's index no longer changes it)
    /// once made every scheduler's thread loop for ever: such a schedule is refused by the recorder, the store and
    /// the command line, and one made through the library has no due time.
    @Test(.timeLimit(.minutes(1))) func aScheduleFromAnImpossibleTimeIsRefusedAndHasNoDueTimes() throws {
        let store = try StatusStore(path: path)
        for starts in [-1e16, -1e300, -1, 1e12, 1e300] {
            let odd = Schedule(name: "odd", type: "SendMessage", parameters: [:], every: 1, starts: starts)
            #expect(odd.dueTimes(after: 1.7e9, upTo: 1.7e9 + 60).isEmpty, "\(starts)")
            #expect(throws: StatusQuery.Invalid.self, "\(starts)") { try StatusQuery.decode(StatusQuery.schedule(odd).encoded) }
            #expect(throws: StatusQuery.Invalid.self, "\(starts)") { try store.addSchedule(odd) }
        }
        #expect(try store.reader.schedules().isEmpty)
        let fast = Schedule(name: "fast", type: "SendMessage", parameters: [:], every: 0.5, starts: 1_000)
        #expect(fast.dueTimes(after: 999, upTo: 1_010).isEmpty, "every is at least a second")
        #expect(throws: StatusQuery.Invalid.self) { try store.addSchedule(fast) }
        let late = Schedule(name: "late", type: "SendMessage", parameters: [:], every: 1, starts: Schedule.startsRange.upperBound)
        #expect(late.dueTimes(after: Schedule.startsRange.upperBound + 1e9, upTo: Schedule.startsRange.upperBound + 1e9 + 3).count == 3)
    }

    @Test func anAnswerDecodesToTheStatusTheStoreHolds() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.queued("a"), Self.event("a", .inProgress), Self.event("a", .success, code: "success")])
        let local = try #require(try store.reader.status(id: "a"))
        let reply = StatusQuery.reply(.success(try StatusQuery.show(id: "a").answer(from: store.reader, writer: store)))
        #expect(try StatusQuery.decodeReply(reply) == .status(local))
        #expect(try StatusQuery.decodeReply(StatusQuery.reply(.success(.status(nil)))) == .status(nil))
        let listed = try StatusQuery.decodeReply(
            StatusQuery.reply(.success(try StatusQuery.list(state: nil, type: nil, limit: 5).answer(from: store.reader, writer: store))))
        #expect(listed == .statuses([try #require(try store.reader.list().first)]))
        struct Broken: Error, CustomStringConvertible { var description: String { "disk on fire" } }
        #expect(throws: StatusQuery.Invalid.self) { try StatusQuery.decodeReply(StatusQuery.reply(.failure(Broken()))) }
    }

    @Test func recordReturnsOnlyTheStateChangesItApplied() throws {
        let store = try StatusStore(path: path)
        let first = try store.record([Self.queued("a"), Self.event("a", .inProgress), Self.event("a", .inProgress), Self.queued("a")])
        #expect(first.map(\.to) == [.queued, .inProgress])
        #expect(first.first?.from == nil)
        #expect(first.last?.from == .queued)
        let end = try store.record([
            Self.event("a", .success, code: "success"), Self.event("a", .failure, code: "late"), Self.event("a", .inProgress),
        ])
        #expect(end == [StatusStore.Transition(id: "a", type: "SendMessage", from: .inProgress, to: .success, code: "success", message: "success")])
        #expect(try store.record([.cancelRequested(id: "a")]).isEmpty, "a finished intent shows no cancel request")
    }

    /// The transitions `record` reports (what metrics count; most of them told from the update itself, without reading
    /// the row again): each must be the row as it was before its update and as the update left it, read apart, over
    /// every kind of update, those that change nothing included.
    @Test func everyTransitionReportedIsTheRowBeforeAndAfterItsUpdate() throws {
        let store = try StatusStore(path: path)
        let alice = StatusStore.Submitter(user: "alice")
        let bob = StatusStore.Submitter(user: "bob")
        func envelope(_ id: String, type: String = "SendMessage", turn: Int = 0, request: IntentRequest? = nil, dueAt: Double? = nil)
            -> IntentEnvelope
        {
            IntentEnvelope(
                id: id, type: type, parameters: ["content": .string("hi \(turn)")], submittedAt: 1, turn: turn,
                answers: turn > 0 ? ["content": "yes"] : nil, request: request, dueAt: dueAt)
        }
        func event(
            _ id: String, _ state: IntentState, type: String = "SendMessage", code: String? = nil, turn: Int = 0, owner: String? = "alice",
            refused: Bool = false
        ) -> StatusStore.Update {
            let event = StatusEvent(
                id: id, type: type, state: state, attempt: 1, response: code.map { IntentResponse(code: $0, message: "said \($0)") }, turn: turn,
                owner: owner, refused: refused)
            return refused ? .refusal(event) : .event(event)
        }
        let updates: [StatusStore.Update] = [
            .queued(envelope("a"), by: alice), .queued(envelope("a"), by: alice), .queued(envelope("a"), by: bob),
            event("a", .inProgress), event("a", .inProgress), event("a", .needsInput),
            .queued(envelope("a", turn: 1), by: bob), .queued(envelope("a", turn: 1), by: alice), .queued(envelope("a", turn: 1), by: alice),
            event("a", .needsInput, turn: 1), .queued(envelope("a", turn: 2, request: .deny), by: alice),
            event("a", .success, code: "success", turn: 2), event("a", .failure, code: "late", turn: 2), event("a", .inProgress, turn: 3),
            event("b", .failure, code: FailureCode.deadLettered, owner: nil), .requeued(envelope("b"), by: nil),
            event("b", .failure, code: FailureCode.deadLettered, owner: nil), event("b", .success, code: "success", owner: nil),
            .queued(envelope("c", type: "OrderSoup"), by: alice), event("c", .success, code: "success"),
            .cancelRequested(id: "c", type: "OrderSoup", by: bob), .cancelRequested(id: "c", type: "OrderSoup", by: alice),
            event("c", .canceled, type: "OrderSoup", code: "canceled"),
            event("d", .failure, code: FailureCode.idInUse, owner: "bob", refused: true),
            .queued(envelope("e", dueAt: 50), by: alice), event("e", .scheduled), event("f", .success, code: "success", owner: nil),
            // The ledger gave the id to another submitter than the one the store recorded: the outcome is theirs.
            .queued(envelope("g"), by: alice), event("g", .success, code: "success", owner: "bob"),
            // A submission read after its outcome fills in what the row lacks, and changes no state.
            event("h", .success, code: "success"), .queued(envelope("h"), by: alice),
            // Dead letters naming an owner: another owner's is not applied, an outcome replaces the owner's own.
            .queued(envelope("i"), by: alice), event("i", .failure, code: FailureCode.deadLettered, owner: "bob"),
            event("i", .failure, code: FailureCode.deadLettered), event("i", .success, code: "success", owner: "carol"),
            // No submitter, and an owner that is empty.
            .queued(envelope("j"), by: nil), event("j", .inProgress, owner: ""), event("j", .success, code: "success", owner: ""),
        ]
        struct Row { var state: IntentState?, code: String?, type: String, message: String?, owner: String? }
        func row(_ id: String) throws -> Row? {
            try store.database.queryFirst("SELECT state, response_code, type, response_message, owner FROM intent_status WHERE id = ?", [.text(id)]) {
                Row(state: IntentState(rawValue: $0.string(0)), code: $0.text(1), type: $0.string(2), message: $0.text(3), owner: $0.text(4))
            }
        }
        var changed: [Int] = []
        for (position, update) in updates.enumerated() {
            let before = try row(update.intentID)
            let reported = try store.record([update], now: Double(10 + position))
            let after = try row(update.intentID)
            var expected: [StatusStore.Transition] = []
            if let after, let state = after.state, before == nil || before?.state != state || before?.code != after.code {
                expected.append(
                    StatusStore.Transition(
                        id: update.intentID, type: after.type, from: before?.state ?? nil, to: state, code: after.code, message: after.message,
                        owner: after.owner))
                changed.append(position)
            }
            #expect(reported == expected, "update \(position)")
        }
        // Those that change nothing: a copy, another owner's, a second answer, a conflict, a late event, another type,
        // another owner's cancel, a refusal, a scheduled intent said scheduled again.
        #expect(changed == [0, 3, 5, 7, 9, 10, 11, 14, 15, 16, 17, 18, 21, 22, 24, 26, 27, 28, 29, 31, 33, 34, 35, 36, 37])
        #expect(try row("i")?.owner == "carol")
        #expect(try row("g")?.owner == "bob")
        #expect(try store.database.queryFirst("SELECT parameters FROM intent_status WHERE id = 'h'") { $0.text(0) } != nil)
    }

    @Test func expiryNamesEachOldQuestionOnceUntilItIsDueToBeAskedAgain() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.event("q1", .needsInput), Self.event("q2", .needsInput)], now: 100)
        try store.record([Self.event("fresh", .needsInput)], now: 195)
        let due = try store.questionsToExpire(olderThan: 10, resendAfter: 60, now: 200)
        #expect(Set(due.map(\.id)) == ["q1", "q2"])
        #expect(due.allSatisfy { $0.type == "SendMessage" && $0.turn == 0 })
        #expect(try store.reader.status(id: "q1")?.state == .needsInput, "the store does not decide the expiry: a worker does")
        #expect(
            try store.questionsToExpire(olderThan: 10, resendAfter: 60, now: 230).map(\.id) == ["fresh"],
            "already asked about: not again before resendAfter")
        #expect(
            Set(try store.questionsToExpire(olderThan: 10, resendAfter: 60, now: 270).map(\.id)) == ["q1", "q2"],
            "a request that was lost is sent again")
        try store.record([Self.event("q1", .failure, code: FailureCode.expired)], now: 280)
        #expect(try store.questionsToExpire(olderThan: 10, resendAfter: 60, now: 400).map(\.id).sorted() == ["fresh", "q2"])
    }

    @Test func retentionRemovesOnlyIntentsFinishedBeforeTheCutoffInBatches() throws {
        let store = try StatusStore(path: path)
        try store.record((0..<12).map { Self.event("old-\($0)", .success, code: "success") }, now: 1_000)
        try store.record([Self.event("waiting", .needsInput), Self.event("running", .inProgress)], now: 1_000)
        try store.record([Self.event("new", .failure, code: "x")], now: 5_000)
        #expect(try store.deleteFinished(before: 2_000, limit: 5) == 5)
        #expect(try store.deleteFinished(before: 2_000, limit: 5) == 5)
        #expect(try store.deleteFinished(before: 2_000, limit: 5) == 2)
        #expect(try store.deleteFinished(before: 2_000, limit: 5) == 0)
        let left = Set(try store.reader.list(limit: 100).map(\.id))
        #expect(left == ["waiting", "running", "new"])
    }

    /// Retention reads the time index from where its last round left off: an intent unfinished when a round passed
    /// it is updated when it finishes, and a later round finds it; a round that found its limit goes on from the last
    /// time it found, those of the same time included.
    @Test func retentionFindsIntentsThatFinishAfterARoundPassedThemInTheTimeIndex() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.event("waiting", .needsInput), Self.event("done", .success, code: "success")], now: 1_000)
        try store.record((0..<3).map { Self.event("tied-\($0)", .canceled, code: "canceled") }, now: 1_500)
        try store.record([Self.event("scheduled", .scheduled)], now: 1_600)
        #expect(try store.deleteFinished(before: 2_000, limit: 2) == 2)
        #expect(try store.deleteFinished(before: 2_000, limit: 2) == 2)
        #expect(try store.deleteFinished(before: 2_000, limit: 2) == 0)
        #expect(try store.deleteFinished(before: 5_000, limit: 0) == 0, "a round asked for none removes none")
        #expect(Set(try store.reader.list(limit: 100).map(\.id)) == ["waiting", "scheduled"])

        try store.record([Self.event("waiting", .failure, code: FailureCode.expired)], now: 3_000)
        #expect(try store.deleteFinished(before: 2_500) == 0, "it finished after this cutoff")
        #expect(try store.reader.status(id: "waiting")?.state == .failure)
        #expect(try store.deleteFinished(before: 3_500) == 1)
        #expect(try store.reader.list(limit: 100).map(\.id) == ["scheduled"])

        let plan = try store.database.query(
            "EXPLAIN QUERY PLAN " + StatusStore.retentionQuery, [.real(0), .real(2_000), .int(500)]
        ) { $0.string(3) }.joined(separator: "; ")
        #expect(plan.contains("USING INDEX intent_status_by_time (updated_at>? AND updated_at<?)"), "\(plan)")
        #expect(!plan.contains("TEMP B-TREE"), "in the index's order: \(plan)")
        let indexes = try store.database.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'intent_status'") {
            $0.string(0)
        }
        #expect(!indexes.contains("intent_status_by_finished"), "an index each outcome wrote and nothing reads")
    }

    /// Where retention left off is the process's own: a recorder that starts again (its store opened anew) reads the
    /// time index from its start, so an intent finished at a time a round had already passed (the clock stepped back)
    /// is removed by the next process, not kept for ever.
    @Test func aStoreOpenedAgainLooksForFinishedIntentsFromTheStart() throws {
        let first = try StatusStore(path: path)
        try first.record([Self.event("done", .success, code: "success")], now: 1_000)
        #expect(try first.deleteFinished(before: 5_000) == 1)
        try first.record([Self.event("late", .success, code: "success")], now: 2_000)
        #expect(try first.deleteFinished(before: 6_000) == 0, "updated before where this process's rounds left off")
        let again = try StatusStore(path: path)
        #expect(try again.deleteFinished(before: 6_000) == 1)
        #expect(try again.reader.status(id: "late") == nil)
    }

    /// Refusals and conflicts were pruned only by a round that found no finished intent to remove: under a steady
    /// load there always is one, and the two tables grew for ever.
    @Test func retentionPrunesRefusalsAndConflictsInRoundsThatRemoveIntentsToo() throws {
        let store = try StatusStore(path: path)
        let refusal = StatusEvent(
            id: "r", type: "SendMessage", state: .failure, at: 1_000, attempt: 1,
            response: IntentResponse(code: FailureCode.idInUse, message: "taken"), owner: "bob", refused: true)
        try store.record([.refusal(refusal)], now: 1_000)
        try store.record([Self.event("c", .success, code: "success")], now: 1_000)
        try store.record([Self.event("c", .failure, code: "other")], now: 1_000)
        #expect(try store.reader.conflictCount() == 1)
        try store.record([Self.event("done", .success, code: "success")], now: 1_500)
        #expect(try store.deleteFinished(before: 2_000, limit: 1) == 1, "a finished intent removed this round")
        #expect(try store.reader.refusal(id: "r", owner: "bob") == nil)
        #expect(try store.reader.conflictCount() == 0)
    }
}
