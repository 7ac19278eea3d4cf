import Foundation
import IntentKit
import Testing

@testable import IntentAMQP

/// The I/O thread's loop, where no broker is needed to see it.
@Suite struct ConsumerLoopTests {
    @Test(.timeLimit(.minutes(1)))
    func stoppingWhileNoBrokerAnswersEndsTheDeliveries() async throws {
        // Nothing listens on port 1: every attempt to connect fails, and the loop waits between attempts. A
        // worker told to stop then waits for its deliveries to end before it shuts the loop down; they must
        // end without a connection, or the worker would hang until it is killed.
        let configuration = ConsumerLoop.Configuration(
            url: try BrokerURL("amqp://guest:guest@127.0.0.1:1/%2f"), queue: "intents.work", prefetch: 1, declare: { _ in })
        let loop = ConsumerLoop(configuration: configuration, logger: .disabled())
        loop.start()
        loop.stopConsuming()
        var delivered = 0
        for await _ in loop.deliveries { delivered += 1 }
        #expect(delivered == 0)
        #expect(!loop.isConnected)
        await loop.shutdown(grace: 0)
    }
}
