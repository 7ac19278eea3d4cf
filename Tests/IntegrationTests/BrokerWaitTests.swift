import Foundation
import IntentAMQP
import Testing

/// A wait for the broker's next event lasts at least as long as asked. rabbitmq-c counts a wait in whole
/// milliseconds, rounded down, and gives up at the first `poll` that finds nothing: a 0.7 ms wait did not wait
/// at all, a 20 ms one ended after 19, and the recorder, waiting for a moment to come, spun through the last
/// millisecond of every wait.
@Suite(.timeLimit(.minutes(10)))
struct BrokerWaitTests {
    @Test func aWaitWithNothingToReadLastsAtLeastAsLongAsAsked() async throws {
        let sandbox = try await Sandbox("broker-wait")
        defer { Task { await sandbox.tearDown() } }
        // A connection that consumes nothing: no event comes, so every wait runs to its end.
        let connection = try AMQPConnection(url: try BrokerURL(sandbox.brokerURL))
        defer { connection.close() }
        for timeout in [0.000_3, 0.000_7, 0.001_5, 0.019_9, 0.02] {
            for round in 0..<20 {
                let started = ContinuousClock.now
                let event = try connection.nextEvent(timeout: timeout)
                let waited = ContinuousClock.now - started
                #expect(event == nil, "asked to wait \(timeout) s with nothing to read, round \(round): \(String(describing: event))")
                // A lower bound only: a busy machine makes a wait longer, never shorter.
                #expect(waited >= .nanoseconds(Int64(timeout * 1e9)), "asked to wait \(timeout) s, round \(round): waited \(waited)")
            }
        }
    }
}
