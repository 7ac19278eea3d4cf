import Foundation
import IntentAMQP

/// The ceiling's worker: for each delivery of the work queue, `statusEvents`
/// persistent confirmed publishes to the status exchange (the outcome, after
/// `inProgress` when 2), then an ack (`multiple`) once they are confirmed. No
/// decoding, no handler, no status logic. The events of deliveries read together leave together: the socket is
/// corked until rabbitmq-c's buffer is empty, as the worker's I/O thread corks a round of several commands.
struct CeilingWorker: Sendable {
    var url: BrokerURL
    var topology: Topology
    var count: Int
    var prefetch: UInt16
    var statusEvents: Int

    func run(gate: StartGate, control: PhaseControl) throws {
        let connection = try AMQPConnection(url: url, connectTimeout: 5)
        defer { connection.close() }
        try connection.enableConfirms()
        try connection.setPrefetch(prefetch)
        try connection.consume(topology.workQueue)
        let events = Workload.statusEvents(id: Workload.newID(), worker: "intent-bench-ceiling").suffix(statusEvents)
        let bodies = events.map { $0.encoded() }
        let keys = events.map(\.routingKey)
        var tracker = ConfirmWindow<Never>()
        // Deliveries in order, each with the sequence of its last publish.
        var waiting: [(lastSequence: UInt64, tag: UInt64)] = []
        var head = 0
        var settled = 0
        var ackUpTo: UInt64?
        var corked = false
        _ = try gate.arriveAndWait(control: control)

        while settled < count || ackUpTo != nil {
            if settled < count {
                switch try connection.nextEvent(control: control, "working (\(settled) of \(count) acked)") {
                case .delivery(let delivery):
                    if !corked, connection.hasBufferedData {
                        connection.setCorked(true)
                        corked = true
                    }
                    var last: UInt64 = 0
                    for index in bodies.indices {
                        last = try connection.publish(
                            OutgoingMessage(
                                exchange: topology.statusExchange, routingKey: keys[index], body: bodies[index],
                                messageID: delivery.messageID, type: Workload.type, persistent: true))
                        tracker.published(last)
                    }
                    waiting.append((last, delivery.tag.value))
                case .confirmed(let sequence, let multiple):
                    tracker.confirm(sequence, multiple: multiple)
                    let watermark = tracker.watermark
                    while head < waiting.count, waiting[head].lastSequence <= watermark {
                        ackUpTo = waiting[head].tag
                        head += 1
                        settled += 1
                    }
                    if head > 4_096, head * 2 > waiting.count {
                        waiting.removeFirst(head)
                        head = 0
                    }
                case .rejected:
                    throw BenchError.failed("ceiling: the broker refused a status publish (basic.nack)")
                case .returned(let message):
                    throw BenchError.failed("ceiling: a status publish came back: \(message.replyText)")
                }
            }
            // One ack for everything settled so far, once nothing more is waiting in rabbitmq-c's buffer; then what
            // was corked leaves.
            let drained = settled == count || !connection.hasBufferedData
            if let tag = ackUpTo, drained {
                try connection.ack(tag, multiple: true)
                ackUpTo = nil
            }
            if corked, drained {
                connection.setCorked(false)
                corked = false
            }
        }
    }
}
