import Testing

@testable import IntentAMQP

/// A delivery keeps what the broker sent in one shared box: copies must still behave as values.
@Suite struct DeliveryTests {
    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        let original = Delivery(
            tag: DeliveryTag(generation: 3, value: 9), exchange: "intents", routingKey: "SendMessage", redelivered: true,
            body: Array("{}".utf8), messageID: "id-1", type: "SendMessage", userID: "alice", replyTo: "reply",
            correlationID: "c-1", deliveryCount: 2, headers: ["x-owner": .string("alice")], consumerTag: "ctag")
        var copy = original
        copy.exchange = "other"
        copy.routingKey = "OrderSoup"
        copy.redelivered = false
        copy.body = Array("[]".utf8)
        copy.messageID = nil
        copy.type = "OrderSoup"
        copy.userID = "bob"
        copy.replyTo = nil
        copy.correlationID = "c-2"
        copy.deliveryCount = nil
        copy.headers["x-owner"] = .string("bob")
        copy.consumerTag = "other-tag"
        copy.tag = DeliveryTag(generation: 4, value: 1)

        #expect(original.exchange == "intents")
        #expect(original.routingKey == "SendMessage")
        #expect(original.redelivered)
        #expect(original.body == Array("{}".utf8))
        #expect(original.messageID == "id-1")
        #expect(original.type == "SendMessage")
        #expect(original.userID == "alice")
        #expect(original.replyTo == "reply")
        #expect(original.correlationID == "c-1")
        #expect(original.deliveryCount == 2)
        #expect(original.headers["x-owner"]?.stringValue == "alice")
        #expect(original.consumerTag == "ctag")
        #expect(original.tag == DeliveryTag(generation: 3, value: 9))
        #expect(original.attempt == 3)

        #expect(copy.exchange == "other")
        #expect(copy.routingKey == "OrderSoup")
        #expect(!copy.redelivered)
        #expect(copy.body == Array("[]".utf8))
        #expect(copy.messageID == nil)
        #expect(copy.type == "OrderSoup")
        #expect(copy.userID == "bob")
        #expect(copy.replyTo == nil)
        #expect(copy.correlationID == "c-2")
        #expect(copy.deliveryCount == nil)
        #expect(copy.headers["x-owner"]?.stringValue == "bob")
        #expect(copy.consumerTag == "other-tag")
        #expect(copy.attempt == 1)
    }
}
