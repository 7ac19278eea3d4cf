import Foundation
import IntentAMQP

/// A ceiling producer: IntentPublisher's publish (persistent, mandatory, same
/// properties and body size) with a confirm window, and nothing else.
struct CeilingProducer: Sendable {
    var url: BrokerURL
    var topology: Topology
    var count: Int
    var window: Int

    /// Returns when the broker confirmed every publish.
    func run(gate: StartGate, control: PhaseControl) throws -> Date {
        let connection = try AMQPConnection(url: url, connectTimeout: 5)
        defer { connection.close() }
        try connection.enableConfirms()
        let ids = (0..<count).map { _ in Workload.newID() }
        let body = Workload.envelope(id: Workload.newID()).encoded()
        _ = try gate.arriveAndWait(control: control)
        do {
            try connection.publishConfirmed(
                ids.lazy.map { id in
                    OutgoingMessage(
                        exchange: topology.intentsExchange, routingKey: Workload.type, body: body, messageID: id,
                        type: Workload.type, persistent: true, mandatory: true, timestampSeconds: UInt64(Date().timeIntervalSince1970))
                }, window: window, timeout: 60, context: "ceiling: publishing")
        } catch {
            throw BenchError.failed("ceiling: \(error)")
        }
        return Date()
    }
}
