import Foundation
import IntentAMQP
import Testing

@testable import IntentWorker

/// The two lanes a worker's deliveries wait in for a slot.
@Suite struct DeliveryLanesTests {
    static func delivery(_ tag: UInt64, high: Bool) -> Delivery {
        Delivery(
            tag: DeliveryTag(generation: 1, value: tag), exchange: "intents", routingKey: high ? "SendMessage.high" : "SendMessage",
            redelivered: false, body: [], messageID: "\(tag)", type: "SendMessage", userID: nil, replyTo: nil, correlationID: nil,
            deliveryCount: nil, headers: [:])
    }

    @Test func highPriorityDeliveriesGoFirstAndOneNormalOnePassesAfterEveryWeightOfThem() async {
        let lanes = DeliveryLanes(weight: 2)
        for tag in UInt64(1)...3 { lanes.add(Self.delivery(tag, high: false)) }
        for tag in UInt64(11)...15 { lanes.add(Self.delivery(tag, high: true)) }
        var order: [UInt64] = []
        for _ in 0..<8 { order.append(await lanes.next()!.tag.value) }
        #expect(order == [11, 12, 1, 13, 14, 2, 15, 3], "two urgent, one normal, while both wait; then the rest in order")
    }

    @Test func aWaitingTakerGetsTheNextDeliveryAndFinishingEndsItOnceEmpty() async {
        let lanes = DeliveryLanes()
        let taken = Task { await lanes.next()?.tag.value }
        // It may be waiting, or not yet: either way it gets the one delivery.
        lanes.add(Self.delivery(7, high: false))
        #expect(await taken.value == 7)
        lanes.add(Self.delivery(8, high: true))
        lanes.finish()
        #expect(await lanes.next()?.tag.value == 8, "what is left comes out before the end")
        #expect(await lanes.next() == nil)
    }
}

/// How a worker tells whether another still holds a kept intent it took.
@Suite struct KeptTakerTests {
    @Test func aTakerHoldsWhileItsProcessRunsAndALaterProcessWithItsIDIsToldApart() throws {
        let me = KeptTaker.current
        #expect(KeptTaker.holds(me.name, takenAt: 0), "this process")
        #expect(!KeptTaker.holds("\(me.host) \(me.pid) other", takenAt: 0), "an earlier process with this id, which ended")
        // A process of this host that has ended: a child that exited.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        #expect(!KeptTaker.holds("\(me.host) \(child.processIdentifier) x", takenAt: 0))
        #expect(KeptTaker.holds("\(me.host) 1 x", takenAt: 0), "a process that runs (init)")
        // Another host's processes cannot be looked at: held for the lease.
        let now = Date().timeIntervalSince1970
        #expect(KeptTaker.holds("elsewhere 7 x", takenAt: now))
        #expect(!KeptTaker.holds("elsewhere 7 x", takenAt: now - KeptTaker.otherHostLease - 1))
        #expect(!KeptTaker.holds("not a name", takenAt: now))
    }
}
