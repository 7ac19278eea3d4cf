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

    @Test func aSubmissionIsQueuedAndACancelRequestIsOnlyRecordedAsRequested() {
        let submission = IntentEnvelope(id: "a", type: "SendMessage", parameters: [:], submittedAt: 1)
        guard case .queued(let queued, _)? = update(submission.encoded(), exchange: topology.intentsExchange) else {
            Issue.record("a submission is queued")
            return
        }
        #expect(queued.id == "a")
        guard
            case .cancelRequested(let id, _)? = update(
                IntentEnvelope.request(.cancel, id: "a", type: "SendMessage").encoded(), exchange: topology.intentsExchange)
        else {
            Issue.record("a cancel request is recorded as requested, not as canceled")
            return
        }
        #expect(id == "a")
        #expect(
            update(IntentEnvelope.request(.expire, id: "a", type: "SendMessage", turn: 1).encoded(), exchange: topology.intentsExchange) == nil,
            "its own expiry requests change nothing: the worker's decision will")
        #expect(update(Array("{\"id\":\"a\"}".utf8), exchange: topology.cancelExchange) == nil, "cancel hints are the workers'")
    }

    @Test func aDeadLetteredIntentFailsButADeadLetteredRequestDoesNot() {
        let headers: [String: HeaderValue] = ["x-first-death-reason": .string("delivery_limit")]
        let intent = IntentEnvelope(id: "p", type: "SendMessage", parameters: [:], submittedAt: 1).encoded()
        guard case .event(let event)? = update(intent, exchange: topology.deadLetterExchange, headers: headers) else {
            Issue.record("a dead-lettered intent is recorded as a failure")
            return
        }
        #expect(event.state == .failure && event.response?.code == FailureCode.deadLettered)
        #expect(event.response?.message?.contains("delivery_limit") == true)
        let request = IntentEnvelope.request(.cancel, id: "p", type: "SendMessage").encoded()
        #expect(update(request, exchange: topology.deadLetterExchange, headers: headers) == nil, "a lost request is not the intent's failure")
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
