/// Publisher confirms of one channel, tracked by sequence number: how many are
/// still unconfirmed, and up to which sequence every publish is confirmed.
public struct ConfirmTracker: Sendable {
    /// Published sequences, ascending from `head`; an entry may be confirmed out of order.
    private var pending: [(sequence: UInt64, confirmed: Bool)] = []
    private var head = 0
    private var lastPublished: UInt64 = 0
    public private(set) var inFlight = 0

    public init() {}

    public mutating func published(_ sequence: UInt64) {
        pending.append((sequence, false))
        lastPublished = sequence
        inFlight += 1
    }

    /// Applies a `basic.ack`.
    public mutating func confirm(_ sequence: UInt64, multiple: Bool) {
        if multiple {
            while head < pending.count, pending[head].sequence <= sequence {
                if !pending[head].confirmed { inFlight -= 1 }
                head += 1
            }
        } else if let index = index(of: sequence), !pending[index].confirmed {
            pending[index].confirmed = true
            inFlight -= 1
        }
        while head < pending.count, pending[head].confirmed { head += 1 }
        if head > 4_096, head * 2 > pending.count {
            pending.removeFirst(head)
            head = 0
        }
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
