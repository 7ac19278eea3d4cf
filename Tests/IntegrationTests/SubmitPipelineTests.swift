import Foundation
import IntentAMQP
import IntentKit
import Synchronization
import Testing

@testable import IntentGateway

/// The gateway's pipeline of submissions against the real broker.
@Suite(.timeLimit(.minutes(10)))
struct SubmitPipelineTests {
    /// The confirm timeout counts from a message's publish, not from when its request handed it over (what a
    /// request waiting its turn behind a full window did before): the oldest message in flight is as old as its publish.
    @Test func theOldestMessageInFlightIsAsOldAsItsPublish() {
        var inFlight = SubmitPipeline.InFlight()
        let message = OutgoingMessage(exchange: "", routingKey: "queue", body: [])
        let handedOver = ContinuousClock.now - .seconds(30)
        inFlight.add(1, SubmitPipeline.Pending(message: message, done: { _ in }, since: handedOver))
        let oldest = inFlight.oldest
        #expect(oldest.map { $0.duration(to: .now) < .seconds(10) } == true, "counted from the publish, not the hand-over")
    }

    /// A burst far larger than the window, through a window of one and a confirm timeout of 1 s: every request
    /// waits its turn, and every message is confirmed and in the queue, none failed as if the broker had stalled.
    /// The burst takes seconds in all (8,000 confirms one at a time), far past the timeout, which it would fail were
    /// a request timed from its hand-over; the timeout itself is one confirm's, which a busy machine may make take
    /// over 200 ms.
    @Test func aBurstThroughAWindowOfOneIsConfirmedWhole() async throws {
        let url = try BrokerURL(await TestBroker.shared.makeVirtualHost("pipeline"))
        let setup = try AMQPConnection(url: url)
        try setup.declareQueue("pipeline.in")
        setup.close()
        let pipeline = SubmitPipeline(url: url, window: 1, confirmTimeout: .seconds(1), logger: .disabled())
        defer { pipeline.stop() }
        let count = 8_000
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                let message = OutgoingMessage(
                    exchange: "", routingKey: "pipeline.in", body: Array("message \(index)".utf8), messageID: "m\(index)", mandatory: true)
                group.addTask {
                    await withCheckedContinuation { done in
                        pipeline.submit(message) { result in
                            if case .success = result { done.resume(returning: true) } else { done.resume(returning: false) }
                        }
                    }
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.filter { !$0 }.count == 0, "every message was confirmed")
        let reader = try AMQPConnection(url: url)
        defer { reader.close() }
        #expect(try reader.inspectQueue("pipeline.in").messages == count)
    }
}
