import Testing

@testable import IntentAMQP

/// Who a requeued message's publisher is, as workers and the recorder believe it, through requeues of requeues.
@Suite struct RequeueChainTests {
    static func dead(_ userID: String, _ headers: [String: HeaderValue]) -> Delivery {
        Delivery(
            tag: DeliveryTag(generation: 1, value: 1), exchange: "intents.dead", routingKey: "SendMessage", body: [], userID: userID,
            headers: headers)
    }

    /// What a requeue of `message` publishes (as `DeadLetters.requeue` does).
    static func requeued(_ message: Delivery) -> [String: HeaderValue] {
        var headers = DeadLetters.publisherHeaders(of: message)
        headers[DeadLetters.requeuedHeader] = .integer(1)
        return headers
    }

    @Test func anOwnersMessageRequeuedThreeTimesByOperatorsStaysTheirs() {
        let operators: Set<String> = ["op", "op2"]
        let first = Self.requeued(Self.dead("alice", [:]))
        #expect(DeadLetters.originalPublisher(of: first, operators: operators) == "alice")
        let second = Self.requeued(Self.dead("op", first))
        #expect(DeadLetters.originalPublisher(of: second, operators: operators) == "alice")
        let third = Self.requeued(Self.dead("op2", second))
        #expect(DeadLetters.originalPublisher(of: third, operators: operators) == "alice")
    }

    /// A producer's message that claims to be a requeue of alice's: an operator's requeue copies the claim, but
    /// only the requeuers' own word counts. Requeued twice, it once came back as alice's.
    @Test func aProducersForgedRequeueHeadersStayTheProducersThroughEveryRequeue() {
        let operators: Set<String> = ["op"]
        let forged: [String: HeaderValue] = [DeadLetters.requeuedHeader: .integer(1), DeadLetters.publisherHeader: .string("alice")]
        let first = Self.requeued(Self.dead("mallory", forged))
        #expect(DeadLetters.originalPublisher(of: first, operators: operators) == "mallory")
        let second = Self.requeued(Self.dead("op", first))
        #expect(DeadLetters.originalPublisher(of: second, operators: operators) == "mallory")
        var unreadable = second
        unreadable[DeadLetters.earlierRequeuersHeader] = .string("not a list")
        #expect(DeadLetters.originalPublisher(of: unreadable, operators: operators) == nil)
    }
}
