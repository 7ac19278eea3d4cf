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
        try submit([envelope], window: 1, userID: userID)
    }

    /// Asks for an intent to be canceled. Two messages, both confirmed: a hint
    /// on the cancellation stream, so that every worker skips the intent should
    /// it still be queued, and the request itself, through `intents` like the
    /// intent, which one worker decides in the intent's ledger (canceled, or
    /// the outcome that was decided first). Throws `.unroutable` when no
    /// worker serves the type. `userID` as in `submit(_:userID:)`.
    public func cancel(id: String, type: String, userID: String? = nil) throws(AMQPError) {
        try connection.publishConfirmed(
            [
                OutgoingMessage(
                    exchange: topology.cancelExchange, routingKey: "",
                    body: JSONValue.object(["id": .string(id), "type": .string(type), "at": .number(Date().timeIntervalSince1970)]).serialized(),
                    messageID: id, type: type, userID: userID ?? connection.url.user, persistent: true)
            ], timeout: confirmTimeout, context: "canceling \(id)")
        try submit(IntentEnvelope.request(.cancel, id: id, type: type), userID: userID)
    }

    /// Closes the connection; the publisher submits nothing more.
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
        try connection.publishConfirmed(
            envelopes.lazy.map { self.outgoing($0, userID: userID) }, window: window, timeout: confirmTimeout, context: "submitting intents"
        ) { [topology] message in
            let type = IntentPriority.type(ofRoutingKey: message.routingKey)
            return AMQPError(
                .unroutable, context: "submitting \(type)",
                detail: "no worker serves intent type '\(type)' (nothing is bound for it on exchange '\(topology.intentsExchange)')")
        }
    }

    /// The message `submit` publishes for an envelope.
    private func outgoing(_ envelope: IntentEnvelope, userID: String?) -> OutgoingMessage {
        Self.message(for: envelope, topology: topology, userID: userID ?? connection.url.user)
    }

    /// The message that submits `envelope` as `userID`: persistent and
    /// mandatory, to `intents` with the type (or `<type>.high`) as routing key — for a caller
    /// that publishes on a connection of its own (the HTTP gateway's pipeline).
    public static func message(for envelope: IntentEnvelope, topology: Topology, userID: String) -> OutgoingMessage {
        OutgoingMessage(
            exchange: topology.intentsExchange, routingKey: envelope.routingKey, body: envelope.encoded(),
            messageID: envelope.id, type: envelope.type, userID: userID, persistent: true, mandatory: true,
            timestampSeconds: UInt64(max(0, envelope.submittedAt)))
    }
}
