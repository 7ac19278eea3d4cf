import Foundation
import Synchronization
import Testing

@testable import IntentAMQP

/// The I/O thread's loop against the real broker.
@Suite struct ConsumerLoopBrokerTests {
    /// A round of several commands is sent corked, so that its frames leave in as few segments as they fit; the
    /// round must uncork the socket before it waits, or every later publish would wait for the kernel's 200 ms.
    /// The limit is the integration suites' own: the test's virtual host waits its turn for rabbitmqctl behind every
    /// other test's (three calls at a time), which in a full run on two cores took longer than two minutes.
    @Test(.timeLimit(.minutes(10)))
    func roundsOfSeveralPublishesAreAllConfirmedAndLeaveTheSocketUncorked() async throws {
        let url = try BrokerURL(await TestBroker.shared.makeVirtualHost("cork"))
        let settled = Mutex<[UInt64: Bool]>([:])
        // Each settle is told here, so that the test waits for the confirms themselves, not for a guessed time.
        let (settles, settling) = AsyncStream.makeStream(of: Int.self)
        var configuration = ConsumerLoop.Configuration(url: url, queue: "cork.in", prefetch: 8) { connection in
            try connection.declareQueue("cork.in")
            try connection.declareQueue("cork.out")
        }
        configuration.onLocalSettled = { number, done in
            let count = settled.withLock { settled in
                settled[number] = done
                return settled.count
            }
            settling.yield(count)
        }
        var counts = settles.makeAsyncIterator()
        let loop = ConsumerLoop(configuration: configuration, logger: .disabled())
        let rounds = 5
        let perRound = 12
        func burst(_ round: Int) {
            for index in 0..<perRound {
                let number = UInt64(round * perRound + index)
                let message = OutgoingMessage(exchange: "", routingKey: "cork.out", body: Array("message \(number)".utf8))
                loop.send(.publish([message], thenAck: .local(number)))
            }
        }
        // The first burst waits for the loop's first round, which takes it whole: a corked round, whatever the timing.
        burst(0)
        loop.start()

        for round in 0..<rounds {
            // Later bursts are handed over back to back, and the I/O thread takes whatever waits when it wakes.
            if round > 0 { burst(round) }
            let expected = (round + 1) * perRound
            while let count = await counts.next(), count < expected {}
            // Every confirm of the burst is in: the rounds that sent it are over, and none may have left a cork.
            let socket = loop.servedSocket.load(ordering: .relaxed)
            try #require(socket >= 0)
            var corked: Int32 = -1
            var size = socklen_t(MemoryLayout<Int32>.size)
            #expect(getsockopt(socket, Int32(IPPROTO_TCP), TCP_CORK, &corked, &size) == 0)
            #expect(corked == 0, "round \(round) left the socket corked")
        }
        #expect(settled.withLock { $0.values.allSatisfy { $0 } })
        #expect(loop.corkedRounds.load(ordering: .relaxed) >= 1)

        let reader = try AMQPConnection(url: url)
        defer { reader.close() }
        #expect(try reader.inspectQueue("cork.out").messages == rounds * perRound)
        loop.stopConsuming()
        await loop.shutdown(grace: 1)
    }

    /// A delivery of a connection that is gone is no longer live, and its redelivery is: a worker that ran the old
    /// copy too, from its lanes, would run the intent twice at once.
    @Test(.timeLimit(.minutes(10)))
    func aDeliveryOfALostConnectionIsNoLongerLiveAndItsRedeliveryIs() async throws {
        let url = try BrokerURL(await TestBroker.shared.makeVirtualHost("live"))
        let setup = try AMQPConnection(url: url)
        defer { setup.close() }
        try setup.enableConfirms()
        try setup.declareQueue("live.in")
        try setup.publishConfirmed(
            [OutgoingMessage(exchange: "", routingKey: "live.in", body: Array("one".utf8), messageID: "one")], timeout: 10, context: "putting one")
        let configuration = ConsumerLoop.Configuration(url: url, queue: "live.in", prefetch: 8) { try $0.declareQueue("live.in") }
        let loop = ConsumerLoop(configuration: configuration, logger: .disabled())
        var deliveries = loop.deliveries.makeAsyncIterator()
        loop.start()
        let first = try #require(await deliveries.next())
        #expect(loop.isLive(first.tag))
        // A publish the broker returns makes the loop reconnect; the unacked message comes again.
        loop.send(.publish([OutgoingMessage(exchange: "", routingKey: "live.nowhere", body: Array("lost".utf8), mandatory: true)], thenAck: nil))
        let again = try #require(await deliveries.next())
        #expect(again.messageID == "one")
        #expect(!loop.isLive(first.tag))
        #expect(loop.isLive(again.tag))
        #expect(loop.isLive(.local(7)))
        loop.send(.ack(again.tag))
        loop.stopConsuming()
        await loop.shutdown(grace: 1)
    }

    /// A returned publish makes the loop reconnect (to declare the queues again); the deliveries whose outcomes the
    /// broker had confirmed, their acks still waiting for the batch, are acked first: only the delivery whose publish
    /// was returned comes back, not one whose outcome already stands.
    @Test(.timeLimit(.minutes(10)))
    func aReconnectAfterAReturnedPublishFirstAcksTheDeliveriesWhoseOutcomesWereConfirmed() async throws {
        let url = try BrokerURL(await TestBroker.shared.makeVirtualHost("returned"))
        let setup = try AMQPConnection(url: url)
        defer { setup.close() }
        try setup.enableConfirms()
        @Sendable func declare(_ connection: AMQPConnection) throws {
            try connection.declareQueue("returned.in")
            try connection.declareQueue("returned.out")
        }
        try declare(setup)
        func put(_ id: String) throws {
            try setup.publishConfirmed(
                [OutgoingMessage(exchange: "", routingKey: "returned.in", body: Array(id.utf8), messageID: id)], timeout: 10,
                context: "putting \(id)")
        }
        try put("first")
        try put("second")
        var configuration = ConsumerLoop.Configuration(url: url, queue: "returned.in", prefetch: 8) { try declare($0) }
        // Acks wait for the batch (up to a second): the first's is still waiting when the second's publish comes back.
        configuration.ackDelay = 1
        let (settles, settling) = AsyncStream.makeStream(of: UInt64.self)
        configuration.onLocalSettled = { number, _ in settling.yield(number) }
        let loop = ConsumerLoop(configuration: configuration, logger: .disabled())
        var deliveries = loop.deliveries.makeAsyncIterator()
        loop.start()
        let first = try #require(await deliveries.next())
        let second = try #require(await deliveries.next())
        #expect([first.messageID, second.messageID] == ["first", "second"])

        // The broker confirms the first outcome: known once a publish of the loop's own to the same queue, sent
        // after it, is settled (the queue confirms in order). Then it returns the second (nothing is bound for it).
        loop.send(.publish([OutgoingMessage(exchange: "", routingKey: "returned.out", body: Array("outcome".utf8))], thenAck: first.tag))
        loop.send(.publish([OutgoingMessage(exchange: "", routingKey: "returned.out", body: Array("marker".utf8))], thenAck: .local(1)))
        var settled = settles.makeAsyncIterator()
        #expect(await settled.next() == 1)
        loop.send(.publish([OutgoingMessage(exchange: "", routingKey: "nowhere", body: Array("lost".utf8), mandatory: true)], thenAck: second.tag))

        let again = try #require(await deliveries.next())
        #expect(again.messageID == "second", "the first's outcome was confirmed: it was acked before the reconnect")
        loop.send(.ack(again.tag))
        // Behind whatever came back: had the first been requeued, it would come before this one.
        try put("third")
        let next = try #require(await deliveries.next())
        #expect(next.messageID == "third")
        loop.send(.ack(next.tag))
        loop.stopConsuming()
        await loop.shutdown(grace: 1)
    }
}
