import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Testing

@testable import IntentWorker

/// What the recorder makes of each kind of ledger message: it records, and
/// decides nothing but a dead letter.
@Suite struct StatusRecorderTests {
    let topology = Topology()
    let recorder: StatusRecorder

    init() throws {
        recorder = StatusRecorder(
            configuration: .init(brokerURL: try BrokerURL("amqp://guest:guest@127.0.0.1:1/%2f"), storePath: "/nonexistent/status.sqlite"),
            logger: .disabled())
    }

    func delivery(
        _ body: [UInt8], exchange: String, messageID: String? = nil, userID: String? = nil, headers: [String: HeaderValue] = [:]
    ) -> Delivery {
        Delivery(
            tag: DeliveryTag(generation: 1, value: 1), exchange: exchange, routingKey: "SendMessage", body: body,
            messageID: messageID, type: "SendMessage", userID: userID, headers: headers)
    }

    func update(
        _ body: [UInt8], exchange: String, messageID: String? = nil, userID: String? = nil, headers: [String: HeaderValue] = [:]
    ) -> StatusStore.Update? {
        recorder.update(
            from: delivery(body, exchange: exchange, messageID: messageID, userID: userID, headers: headers),
            intentsExchange: topology.intentsExchange)
    }

    /// An operator's requeue of a dead letter whose row retention (or a delete) took: the row made again is its
    /// original sender's, not no one's (which any user could have read).
    @Test func aRequeueMakesTheRowAgainAsItsOriginalSendersNotNoOnes() throws {
        var configuration = StatusRecorder.Configuration(
            brokerURL: try BrokerURL("amqp://guest:guest@127.0.0.1:1/%2f"), storePath: "/nonexistent/status.sqlite")
        configuration.operators = ["op"]
        let withOperator = StatusRecorder(configuration: configuration, logger: .disabled())
        let envelope = IntentEnvelope(id: "r", type: "SendMessage", parameters: ["content": "hi"], submittedAt: 1)
        let requeue = delivery(
            envelope.encoded(), exchange: topology.intentsExchange, userID: "op",
            headers: [DeadLetters.requeuedHeader: .integer(1), DeadLetters.publisherHeader: .string("alice")])
        let update = try #require(withOperator.update(from: requeue, intentsExchange: topology.intentsExchange))
        guard case .requeued(_, let by) = update else {
            Issue.record("an operator's requeue is a requeue: \(update)")
            return
        }
        #expect(by?.user == "alice")
        let store = try StatusStore(path: NSTemporaryDirectory() + "requeue-\(UUID().uuidString).sqlite")
        try store.record([update], now: 2)
        #expect(try store.reader.status(id: "r")?.owner == "alice")
    }

    @Test func aSubmissionIsQueuedAndACancelRequestIsOnlyRecordedAsRequested() {
        let submission = IntentEnvelope(id: "a", type: "SendMessage", parameters: [:], submittedAt: 1)
        guard case .queued(let queued, _)? = update(submission.encoded(), exchange: topology.intentsExchange) else {
            Issue.record("a submission is queued")
            return
        }
        #expect(queued.id == "a")
        guard
            case .cancelRequested(let id, let type, _)? = update(
                IntentEnvelope.request(.cancel, id: "a", type: "SendMessage").encoded(), exchange: topology.intentsExchange)
        else {
            Issue.record("a cancel request is recorded as requested, not as canceled")
            return
        }
        #expect(id == "a" && type == "SendMessage", "a cancel names the type it is for: the store applies it to an intent of that type only")
        #expect(
            update(IntentEnvelope.request(.expire, id: "a", type: "SendMessage", turn: 1).encoded(), exchange: topology.intentsExchange) == nil,
            "its own expiry requests change nothing: the worker's decision will")
        #expect(update(Array("{\"id\":\"a\"}".utf8), exchange: topology.cancelExchange) == nil, "cancel hints are the workers'")
    }

    @Test func aDeadLetteredIntentFailsButADeadLetteredRequestDoesNot() {
        let headers: [String: HeaderValue] = [
            "x-first-death-reason": .string("delivery_limit"), "x-first-death-queue": .string(topology.workQueue),
        ]
        let intent = IntentEnvelope(id: "p", type: "SendMessage", parameters: [:], submittedAt: 1).encoded()
        guard case .event(let event)? = update(intent, exchange: topology.deadLetterExchange, headers: headers) else {
            Issue.record("a dead-lettered intent is recorded as a failure")
            return
        }
        #expect(event.state == .failure && event.response?.code == FailureCode.deadLettered)
        #expect(event.response?.message?.contains("(delivery_limit)") == true)
        // One whose first death was a retry queue's expiry died later of something else: that expiry is not named.
        let retried: [String: HeaderValue] = [
            "x-first-death-reason": .string("expired"), "x-first-death-queue": .string(topology.retryQueue(forDelay: 4).queue),
        ]
        guard case .event(let afterRetry)? = update(intent, exchange: topology.deadLetterExchange, headers: retried) else {
            Issue.record("a dead-lettered intent is recorded as a failure")
            return
        }
        #expect(afterRetry.response?.message?.contains("expired") == false, "\(afterRetry.response?.message ?? "")")
        #expect(afterRetry.response?.message?.hasPrefix("the broker dead-lettered it: it reached the delivery limit") == true)
        let request = IntentEnvelope.request(.cancel, id: "p", type: "SendMessage").encoded()
        #expect(update(request, exchange: topology.deadLetterExchange, headers: headers) == nil, "a lost request is not the intent's failure")
        // A lost answer or denial: its question is still open in the ledger, for a worker to end (no failure here).
        let answer = IntentEnvelope(id: "p", type: "SendMessage", parameters: ["content": "hi"], submittedAt: 1, turn: 2).encoded()
        let denial = IntentEnvelope.request(.deny, id: "p", type: "SendMessage", turn: 2).encoded()
        for lost in [answer, denial] {
            guard
                case .turnDeadLettered(let id, let type, let turn, let by)? = update(
                    lost, exchange: topology.deadLetterExchange, userID: "alice", headers: headers)
            else {
                Issue.record("a lost answer asks the workers to end its question")
                continue
            }
            #expect(id == "p" && type == "SendMessage" && turn == 2 && by?.user == "alice")
        }
    }

    @Test func onlyEventsOfTrustedUsersThroughTheStatusExchangeCount() {
        let event = StatusEvent(id: "e", type: "SendMessage", state: .success, attempt: 1, response: .success("ok")).encoded()
        // The recorder's URL logs in as guest: its own user is trusted.
        guard case .event(let decoded)? = update(event, exchange: topology.statusExchange, userID: "guest") else {
            Issue.record("a trusted worker's event is recorded")
            return
        }
        #expect(decoded.state == .success)
        #expect(update(event, exchange: topology.statusExchange, userID: "mallory") == nil, "a producer's forged success is skipped")
        #expect(update(event, exchange: topology.statusExchange) == nil, "an event without a verified user is skipped")
        #expect(update(event, exchange: "", messageID: "e", userID: "guest") == nil, "put straight into the ledger: not a status")
        #expect(update(Array("garbage".utf8), exchange: topology.statusExchange, userID: "guest") == nil)
        let refusal = StatusEvent(
            id: "e", type: "SendMessage", state: .failure, attempt: 1, response: IntentResponse(code: FailureCode.idInUse), owner: "bob",
            refused: true
        ).encoded()
        guard case .refusal(let refused)? = update(refusal, exchange: topology.statusExchange, userID: "guest") else {
            Issue.record("a refusal is kept apart from the intent")
            return
        }
        #expect(refused.owner == "bob")
    }

    /// The recorder announces the failure it records for a dead letter on the status exchange, which the ledger
    /// queue is bound to: read back, its own announcement was recorded again, over an operator's requeue of the
    /// letter made meanwhile (back to `failure`), or into a row deleted since.
    @Test func theRecordersOwnAnnouncementIsNotRecordedAgain() throws {
        let store = try StatusStore(path: NSTemporaryDirectory() + "announce-\(UUID().uuidString).sqlite")
        let envelope = IntentEnvelope(id: "d", type: "SendMessage", parameters: [:], submittedAt: 1)
        let reason: [String: HeaderValue] = ["x-first-death-reason": .string("delivery_limit")]
        let dead = try #require(update(envelope.encoded(), exchange: topology.deadLetterExchange, userID: "guest", headers: reason))
        try store.record([.queued(envelope, by: .init(user: "guest")), dead], now: 2)
        #expect(try store.reader.status(id: "d")?.response?.code == FailureCode.deadLettered)
        try store.record([.requeued(envelope)], now: 3)
        #expect(try store.reader.status(id: "d")?.state == .queued)
        guard case .event(let failure) = dead else {
            Issue.record("a dead letter is recorded as an event")
            return
        }
        let announcement = delivery(
            failure.encoded(), exchange: topology.statusExchange, messageID: "d", userID: "guest", headers: [Topology.announcedHeader: .integer(1)])
        #expect(recorder.update(from: announcement, intentsExchange: topology.intentsExchange) == nil)
        // Recorded, it would have undone the requeue:
        try store.record([dead], now: 4)
        #expect(try store.reader.status(id: "d")?.state == .failure, "the requeued intent failed again, though nothing ran it")
    }

    @Test func anAnswerOrCancelNamesItsSenderAndOnlyTrustedRepublishersMayNameAnOwner() {
        let answer = IntentEnvelope(id: "a", type: "SendMessage", parameters: [:], submittedAt: 1, turn: 1).encoded()
        guard
            case .queued(_, let by)? = update(
                answer, exchange: topology.intentsExchange, userID: "mallory",
                headers: [Topology.ownerHeader: .string("alice")])
        else {
            Issue.record("an answer is queued")
            return
        }
        #expect(by == StatusStore.Submitter(user: "mallory"), "a producer cannot claim to answer as someone else")
        guard
            case .queued(_, let retried)? = update(
                answer, exchange: topology.intentsExchange, userID: "guest",
                headers: [Topology.ownerHeader: .string("alice")])
        else {
            Issue.record("a retry is queued")
            return
        }
        #expect(retried == StatusStore.Submitter(user: "alice"), "a worker's republish names the owner")
    }
}
