import IntentAMQP
import IntentKit
import Synchronization

/// The deliveries a worker holds and has no slot for yet, in two lanes:
/// high-priority intents are taken first, and while both lanes wait, one
/// normal delivery after every `weight` high ones, so a flood of urgent work
/// slows the rest but never stops it. Bounded by the broker's prefetch.
final class DeliveryLanes: Sendable {
    private struct State {
        var high: [Delivery] = []
        var highHead = 0
        var normal: [Delivery] = []
        var normalHead = 0
        var highInARow = 0
        var finished = false
        var waiter: UnsafeContinuation<Delivery?, Never>?

        /// The next delivery to run, by the lanes' rule; nil when both are empty.
        mutating func take(weight: Int) -> Delivery? {
            let highWaiting = highHead < high.count
            let normalWaiting = normalHead < normal.count
            if highWaiting, !normalWaiting || highInARow < weight {
                highInARow += 1
                return Self.pop(&high, &highHead)
            }
            guard normalWaiting else { return nil }
            highInARow = 0
            return Self.pop(&normal, &normalHead)
        }

        private static func pop(_ lane: inout [Delivery], _ head: inout Int) -> Delivery {
            let delivery = lane[head]
            head += 1
            if head == lane.count {
                lane.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 1_024 {
                lane.removeFirst(head)
                head = 0
            }
            return delivery
        }
    }

    private let state = Mutex(State())
    private let weight: Int

    init(weight: Int = 4) {
        self.weight = max(1, weight)
    }

    /// Whether a delivery is of a high-priority intent: its routing key says so.
    static func isHigh(_ delivery: Delivery) -> Bool {
        delivery.routingKey.hasSuffix(IntentPriority.highSuffix)
    }

    func add(_ delivery: Delivery) {
        let (waiter, taken) = state.withLock { state -> (UnsafeContinuation<Delivery?, Never>?, Delivery?) in
            if Self.isHigh(delivery) { state.high.append(delivery) } else { state.normal.append(delivery) }
            guard let waiter = state.waiter else { return (nil, nil) }
            state.waiter = nil
            // A waiter takes by the same rule: the delivery just added need not be the one it gets.
            return (waiter, state.take(weight: weight))
        }
        waiter?.resume(returning: taken)
    }

    /// No more deliveries will come: `next` returns what is left, then nil.
    func finish() {
        let waiter = state.withLock { state -> UnsafeContinuation<Delivery?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next delivery to run, waiting for one; nil once finished and empty. One caller at a time.
    func next() async -> Delivery? {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Delivery?, Never>) in
            let ready = state.withLock { state -> Delivery?? in
                if let delivery = state.take(weight: weight) { return .some(delivery) }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
