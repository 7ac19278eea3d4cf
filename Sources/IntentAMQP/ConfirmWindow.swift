import Foundation

/// Publisher confirms of one channel, tracked by sequence number: how many
/// are still unconfirmed, up to which sequence every publish is confirmed,
/// and which group (the delivery a worker acks once its events are safe) a
/// confirm settles. The one bookkeeping every publisher here uses — the
/// worker's and recorder's consumer loop, the client's publisher, the bench.
public struct ConfirmWindow<Group>: Sendable where Group: Sendable {
    /// Published sequences, ascending from `head`; an entry may be confirmed out of order.
    private var pending: [(sequence: UInt64, group: Group?, confirmed: Bool)] = []
    private var head = 0
    private var lastPublished: UInt64 = 0
    /// How many publishes are still unconfirmed.
    public private(set) var inFlight = 0

    /// An empty window, for a channel just put in confirm mode.
    public init() {}

    /// Notes a publish by its confirm sequence number (ascending, as `AMQPConnection.publish` returns them) and the group its confirm settles.
    public mutating func published(_ sequence: UInt64, group: Group? = nil) {
        pending.append((sequence, group, false))
        lastPublished = sequence
        inFlight += 1
    }

    /// Applies a `basic.ack` (or `basic.nack`): returns the groups of the
    /// publishes it settled, in order.
    @discardableResult
    public mutating func confirm(_ sequence: UInt64, multiple: Bool) -> [Group] {
        var settled: [Group] = []
        if multiple {
            while head < pending.count, pending[head].sequence <= sequence {
                if !pending[head].confirmed {
                    inFlight -= 1
                    if let group = pending[head].group { settled.append(group) }
                }
                head += 1
            }
        } else if let index = index(of: sequence), !pending[index].confirmed {
            pending[index].confirmed = true
            inFlight -= 1
            if let group = pending[index].group { settled.append(group) }
        }
        while head < pending.count, pending[head].confirmed { head += 1 }
        if head > 4_096, head * 2 > pending.count {
            pending.removeFirst(head)
            head = 0
        }
        return settled
    }

    /// Every sequence up to and including this one is confirmed.
    public var watermark: UInt64 {
        head < pending.count ? pending[head].sequence - 1 : lastPublished
    }

    private func index(of sequence: UInt64) -> Int? {
        var low = head
        var high = pending.count
        while low < high {
            let middle = (low + high) / 2
            if pending[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        return low < pending.count && pending[low].sequence == sequence ? low : nil
    }
}

extension AMQPConnection {
    /// Publishes each message (read lazily, one right before its publish),
    /// keeping at most `window` unconfirmed, and returns once the broker has
    /// confirmed them all; the result is how many were published. Throws
    /// `returned`'s error when a mandatory message comes back, `.rejected` on a
    /// nack, and `.timeout` when no confirm arrives for `timeout` seconds;
    /// messages published before a throw may have been accepted. Needs
    /// `enableConfirms()`; deliveries meanwhile are not expected and ignored.
    @discardableResult
    public func publishConfirmed(
        _ messages: some Sequence<OutgoingMessage>, window: Int = 1, timeout: Double, context: String,
        returned: (ReturnedMessage) -> AMQPError = {
            AMQPError(.unroutable, context: "publishing", detail: "nothing is bound for '\($0.routingKey)' on '\($0.exchange)'")
        }
    ) throws(AMQPError) -> Int {
        var confirms = ConfirmWindow<Never>()
        var published = 0

        func awaitOne() throws(AMQPError) {
            // nextEvent also returns nil for frames that are not events, so the deadline decides.
            let deadline = Date().addingTimeInterval(timeout)
            while true {
                let remaining = deadline.timeIntervalSinceNow
                guard remaining > 0 else {
                    throw AMQPError(.timeout, context: context, detail: "no confirm within \(timeout) s (\(confirms.inFlight) unconfirmed)")
                }
                switch try nextEvent(timeout: remaining) {
                case .confirmed(let sequence, let multiple)?:
                    confirms.confirm(sequence, multiple: multiple)
                    return
                case .rejected?:
                    throw AMQPError(.rejected, context: context, detail: "the broker refused a message (basic.nack)")
                case .returned(let message)?:
                    throw returned(message)
                case .delivery?, nil:
                    continue
                }
            }
        }

        for message in messages {
            while confirms.inFlight >= max(1, window) { try awaitOne() }
            confirms.published(try publish(message))
            published += 1
        }
        while confirms.inFlight > 0 { try awaitOne() }
        return published
    }
}
