import Foundation
import IntentKit

/// Submits intents: one connection, publisher confirms, `mandatory` publishes.
///
/// A submission counts only once the broker confirmed it; a type no worker
/// serves comes back as `basic.return` and is reported as `.unroutable`.
/// Like the connection it owns, a publisher belongs to one thread.
public final class IntentPublisher {
    private let connection: AMQPConnection
    private let topology: Topology
    private let confirmTimeout: Double

    /// Connects; the timeouts together keep a submission to an unreachable or
    /// frozen broker under ten seconds.
    public init(url: BrokerURL, topology: Topology = Topology(), connectTimeout: Double = 3, confirmTimeout: Double = 4) throws(AMQPError) {
        connection = try AMQPConnection(url: url, heartbeat: 30, connectTimeout: connectTimeout, rpcTimeout: connectTimeout)
        connection.sendTimeout = confirmTimeout
        self.topology = topology
        self.confirmTimeout = confirmTimeout
        try topology.declareExchanges(on: connection)
        try connection.enableConfirms()
    }

    /// Publishes the envelope persistently and waits for the broker's confirm.
    public func submit(_ envelope: IntentEnvelope, userID: String? = nil) throws(AMQPError) {
        let message = OutgoingMessage(
            exchange: topology.intentsExchange, routingKey: envelope.type, body: envelope.encoded(),
            messageID: envelope.id, type: envelope.type, userID: userID ?? connection.url.user, persistent: true, mandatory: true,
            timestampSeconds: UInt64(max(0, envelope.submittedAt)))
        let sequence = try connection.publish(message)
        let (confirmed, returned) = try connection.waitForConfirm(sequence: sequence, timeout: confirmTimeout)
        if returned != nil {
            throw AMQPError(
                .unroutable, context: "submitting \(envelope.type)",
                detail: "no worker serves intent type '\(envelope.type)' (nothing is bound for it on exchange '\(topology.intentsExchange)')")
        }
        guard confirmed else {
            throw AMQPError(.rejected, context: "submitting \(envelope.type)", detail: "the broker refused the message (basic.nack)")
        }
    }

    /// Publishes a status event (a user's denial, say) and waits for its confirm.
    public func publish(_ event: StatusEvent) throws(AMQPError) {
        try publishConfirmed(OutgoingMessage(
            exchange: topology.statusExchange, routingKey: event.routingKey, body: event.encoded(), messageID: event.id,
            type: event.type, persistent: true), context: "publishing a status event")
    }

    /// Asks for an intent to be canceled: the store marks it, and workers skip it.
    public func cancel(id: String, type: String) throws(AMQPError) {
        try publishConfirmed(OutgoingMessage(
            exchange: topology.cancelExchange, routingKey: "", body: JSONValue.object(["id": .string(id), "type": .string(type)]).serialized(),
            messageID: id, type: type, persistent: true), context: "canceling \(id)")
    }

    private func publishConfirmed(_ message: OutgoingMessage, context: String) throws(AMQPError) {
        let sequence = try connection.publish(message)
        let (confirmed, _) = try connection.waitForConfirm(sequence: sequence, timeout: confirmTimeout)
        guard confirmed else { throw AMQPError(.rejected, context: context, detail: "the broker refused the message (basic.nack)") }
    }

    public func close() { connection.close() }

    /// Publishes every envelope persistently and `mandatory`, keeping up to
    /// `window` publishes unconfirmed at once, and returns when the broker has
    /// confirmed them all; the result is how many were published.
    ///
    /// The sequence is read lazily, one envelope right before its publish, so a
    /// caller can stamp `submittedAt` or pace submissions inside it. Throws
    /// `.unroutable` when a message comes back (no worker serves its type),
    /// `.rejected` on a nack, and `.timeout` when no confirm arrives for
    /// `confirmTimeout` seconds; envelopes published before a throw may have been
    /// accepted. `window` 1 behaves like calling `submit(_:userID:)` in a loop.
    @discardableResult
    public func submit(_ envelopes: some Sequence<IntentEnvelope>, window: Int, userID: String? = nil) throws(AMQPError) -> Int {
        let window = max(1, window)
        // Published sequence numbers, ascending; a confirm may settle one out of order.
        var pending: [(sequence: UInt64, settled: Bool)] = []
        var head = 0
        var inFlight = 0
        var published = 0

        func settle(_ event: AMQPConnection.Event) throws(AMQPError) {
            switch event {
            case .confirmed(let sequence, let multiple):
                if multiple {
                    while head < pending.count, pending[head].sequence <= sequence {
                        if !pending[head].settled { inFlight -= 1 }
                        head += 1
                    }
                } else if let index = Self.index(of: sequence, in: pending, from: head), !pending[index].settled {
                    pending[index].settled = true
                    inFlight -= 1
                }
                while head < pending.count, pending[head].settled { head += 1 }
                if head > 4_096, head * 2 > pending.count {
                    pending.removeFirst(head)
                    head = 0
                }
            case .rejected:
                throw AMQPError(.rejected, context: "submitting intents", detail: "the broker refused a message (basic.nack)")
            case .returned(let message):
                throw AMQPError(
                    .unroutable, context: "submitting \(message.routingKey)",
                    detail: "no worker serves intent type '\(message.routingKey)' (nothing is bound for it on exchange '\(topology.intentsExchange)')")
            case .delivery:
                break
            }
        }

        func awaitOne() throws(AMQPError) {
            // nextEvent also returns nil for frames that are not events, so the deadline decides.
            let deadline = Date().addingTimeInterval(confirmTimeout)
            while true {
                let remaining = deadline.timeIntervalSinceNow
                guard remaining > 0 else {
                    throw AMQPError(.timeout, context: "waiting for the broker to confirm a publish",
                                    detail: "no confirm within \(confirmTimeout) s (\(inFlight) unconfirmed)")
                }
                if let event = try connection.nextEvent(timeout: remaining) {
                    return try settle(event)
                }
            }
        }

        for envelope in envelopes {
            while inFlight >= window { try awaitOne() }
            let sequence = try connection.publish(outgoing(envelope, userID: userID))
            pending.append((sequence, false))
            inFlight += 1
            published += 1
        }
        while inFlight > 0 { try awaitOne() }
        return published
    }

    /// The message `submit` publishes for an envelope.
    private func outgoing(_ envelope: IntentEnvelope, userID: String?) -> OutgoingMessage {
        OutgoingMessage(
            exchange: topology.intentsExchange, routingKey: envelope.type, body: envelope.encoded(),
            messageID: envelope.id, type: envelope.type, userID: userID ?? connection.url.user, persistent: true, mandatory: true,
            timestampSeconds: UInt64(max(0, envelope.submittedAt)))
    }

    /// Binary search among pending sequence numbers (ascending from `head`).
    private static func index(of sequence: UInt64, in pending: [(sequence: UInt64, settled: Bool)], from head: Int) -> Int? {
        var low = head
        var high = pending.count
        while low < high {
            let middle = (low + high) / 2
            if pending[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < pending.count && pending[low].sequence == sequence ? low : nil
    }
}
