import Foundation
import IntentAMQP

/// The ceiling's worker: for each delivery of the work queue, `statusEvents`
/// persistent confirmed publishes to the status exchange (the outcome, after
/// `inProgress` when 2), then an ack (`multiple`) once they are confirmed. No
/// decoding, no handler, no status logic. As the worker's I/O thread sends a round of several commands, the events of
/// deliveries read together leave together: the socket is corked while deliveries already in rabbitmq-c's buffer
/// are read (without waiting) and their events published, and uncorked before any read that would wait; acks go
/// uncorked.
struct CeilingWorker: Sendable {
    var url: BrokerURL
    var topology: Topology
    var count: Int
    var prefetch: UInt16
    var statusEvents: Int

    func run(gate: StartGate, control: PhaseControl) throws {
        let connection = try AMQPConnection(url: url, connectTimeout: 5)
        defer {
            connection.setCorked(false)
            connection.close()
        }
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
            // While corked, only what rabbitmq-c already holds is read: a read that would wait uncorks first.
            var event: AMQPConnection.Event?
            if settled < count {
                event =
                    corked
                    ? try connection.nextEvent(timeout: 0)
                    : try connection.nextEvent(control: control, "working (\(settled) of \(count) acked)")
            }
            if let event {
                switch event {
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
            // What was corked leaves once nothing complete waits in rabbitmq-c's buffer; then one ack for everything
            // settled so far.
            let drained = settled == count || !connection.hasBufferedData
            if corked, drained || event == nil {
                connection.setCorked(false)
                corked = false
            }
            if let tag = ackUpTo, drained {
                try connection.ack(tag, multiple: true)
                ackUpTo = nil
            }
        }
    }
}
