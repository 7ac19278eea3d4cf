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
}
