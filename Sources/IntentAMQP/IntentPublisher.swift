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
        try topology.checkExchanges(on: connection)
        try connection.enableConfirms()
    }

    /// Publishes the envelope persistently and waits for the broker's confirm.
    public func submit(_ envelope: IntentEnvelope, userID: String? = nil) throws(AMQPError) {
        let sequence = try connection.publish(outgoing(envelope, userID: userID))
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

    /// Asks for an intent to be canceled. Two messages, both confirmed: a hint
    /// on the cancellation stream, so that every worker skips the intent should
    /// it still be queued, and the request itself, through `intents` like the
    /// intent, which one worker decides in the intent's ledger (canceled, or
    /// the outcome that was decided first). Throws `.unroutable` when no
    /// worker serves the type.
    public func cancel(id: String, type: String) throws(AMQPError) {
        try publishConfirmed(OutgoingMessage(
            exchange: topology.cancelExchange, routingKey: "",
            body: JSONValue.object(["id": .string(id), "type": .string(type), "at": .number(Date().timeIntervalSince1970)]).serialized(),
            messageID: id, type: type, userID: connection.url.user, persistent: true), context: "canceling \(id)")
        try submit(IntentEnvelope.request(.cancel, id: id, type: type))
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
        var tracker = ConfirmTracker()
        var published = 0

        func settle(_ event: AMQPConnection.Event) throws(AMQPError) {
            switch event {
            case .confirmed(let sequence, let multiple):
                tracker.confirm(sequence, multiple: multiple)
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
                                    detail: "no confirm within \(confirmTimeout) s (\(tracker.inFlight) unconfirmed)")
                }
                if let event = try connection.nextEvent(timeout: remaining) {
                    return try settle(event)
                }
            }
        }

        for envelope in envelopes {
            while tracker.inFlight >= window { try awaitOne() }
            tracker.published(try connection.publish(outgoing(envelope, userID: userID)))
            published += 1
        }
        while tracker.inFlight > 0 { try awaitOne() }
        return published
    }

    /// The message `submit` publishes for an envelope.
    private func outgoing(_ envelope: IntentEnvelope, userID: String?) -> OutgoingMessage {
        OutgoingMessage(
            exchange: topology.intentsExchange, routingKey: envelope.type, body: envelope.encoded(),
            messageID: envelope.id, type: envelope.type, userID: userID ?? connection.url.user, persistent: true, mandatory: true,
            timestampSeconds: UInt64(max(0, envelope.submittedAt)))
    }
}
