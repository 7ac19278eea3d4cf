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
        var tracker = ConfirmTracker()
        _ = try gate.arriveAndWait(control: control)

        func settle(_ event: AMQPConnection.Event) throws {
            switch event {
            case .confirmed(let sequence, let multiple): tracker.confirm(sequence, multiple: multiple)
            case .rejected: throw BenchError.failed("ceiling: the broker refused a publish (basic.nack)")
            case .returned(let message): throw BenchError.failed("ceiling: a publish came back unroutable: \(message.replyText)")
            case .delivery: break
            }
        }

        for id in ids {
            while tracker.inFlight >= window {
                try settle(connection.nextEvent(control: control, "waiting for publisher confirms"))
            }
            let sequence = try connection.publish(OutgoingMessage(
                exchange: topology.intentsExchange, routingKey: Workload.type, body: body, messageID: id,
                type: Workload.type, persistent: true, mandatory: true,
                timestampSeconds: UInt64(Date().timeIntervalSince1970)))
            tracker.published(sequence)
        }
        while tracker.inFlight > 0 {
            try settle(connection.nextEvent(control: control, "waiting for the last publisher confirms"))
        }
        return Date()
    }
}
