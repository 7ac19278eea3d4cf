import IntentAMQP
import IntentKit
import Synchronization

/// The deliveries a worker holds and has no runner for yet, in two lanes:
/// high-priority intents are taken first, and while both lanes wait, one
/// normal delivery after every `weight` high ones, so a flood of urgent work
/// slows the rest but never stops it. Bounded by the broker's prefetch.
///
/// The lanes also run them: at most `runners` tasks take deliveries from
/// them, each one delivery at a time. A delivery added while fewer run starts
/// one, and a runner that finds the lanes empty ends in the same step, so no
/// delivery is ever held with no runner to take it. A delivery thus starts one
/// hop from the thread that brought it (the I/O thread: no task in between),
/// and a busy runner goes on to the next without a hop at all — unless the
/// delivery's handler passed its time limit, which cancels the runner's task
/// (handlers run in it): the runner then goes on in a new task.
final class DeliveryLanes: Sendable {
    private struct State {
        var high: [Delivery] = []
        var highHead = 0
        var normal: [Delivery] = []
        var normalHead = 0
        var highInARow = 0
        var running = 0
        var run: (@Sendable (Delivery) async -> Void)?
        var finished = false
        var idle: UnsafeContinuation<Void, Never>?

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

        /// The continuation waiting for the end, once finished with no runner left (and so nothing held). The
        /// runners' body goes then too: it holds what the runs need (the worker), which would otherwise hold it.
        mutating func idleIfDone() -> UnsafeContinuation<Void, Never>? {
            guard finished, running == 0 else { return nil }
            run = nil
            defer { idle = nil }
            return idle
        }
    }

    private let state = Mutex(State())
    private let weight: Int
    private let runners: Int

    /// Lanes for at most `runners` runners at once.
    init(runners: Int, weight: Int = 4) {
        self.runners = max(1, runners)
        self.weight = max(1, weight)
    }

    /// Whether a delivery is of a high-priority intent: its routing key says so.
    static func isHigh(_ delivery: Delivery) -> Bool {
        delivery.routingKey.hasSuffix(IntentPriority.highSuffix)
    }

    /// Runs each delivery held or added from now on with `run`, in at most `runners` tasks at once. Call it once.
    func start(_ run: @escaping @Sendable (Delivery) async -> Void) {
        let count = state.withLock { state -> Int in
            state.run = run
            let held = (state.high.count - state.highHead) + (state.normal.count - state.normalHead)
            let count = min(held, runners - state.running)
            state.running += count
            return count
        }
        for _ in 0..<count { startRunner(run) }
    }

    /// Holds the delivery for a runner; starts one when fewer than `runners` run.
    func add(_ delivery: Delivery) {
        let run = state.withLock { state -> (@Sendable (Delivery) async -> Void)? in
            if Self.isHigh(delivery) { state.high.append(delivery) } else { state.normal.append(delivery) }
            guard let run = state.run, state.running < runners else { return nil }
            state.running += 1
            return run
        }
        if let run { startRunner(run) }
    }

    private func startRunner(_ run: @escaping @Sendable (Delivery) async -> Void) {
        Task {
            while let delivery = take() {
                await run(delivery)
                // A handler past its time limit was canceled in this task, which cannot be un-canceled: the
                // runner goes on in a new one (in the same count of runners), so no later delivery starts canceled.
                if Task.isCancelled {
                    startRunner(run)
                    return
                }
            }
        }
    }

    /// A runner's next delivery, by the lanes' rule; nil when there is none, and the runner has then ended.
    private func take() -> Delivery? {
        let (delivery, idle) = state.withLock { state -> (Delivery?, UnsafeContinuation<Void, Never>?) in
            if let delivery = state.take(weight: weight) { return (delivery, nil) }
            state.running -= 1
            return (nil, state.idleIfDone())
        }
        idle?.resume()
        return delivery
    }

    /// How many runners run now.
    var running: Int { state.withLock { $0.running } }

    /// No more deliveries will come; the runners take what is left. (One added after all the same is held, not run:
    /// its broker delivers it again once the connection closes.)
    func finish() {
        let idle = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            state.finished = true
            return state.idleIfDone()
        }
        idle?.resume()
    }

    /// Returns once `finish()` was called and the last runner has ended (every delivery held was taken and run).
    /// One caller at a time.
    func drained() async {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.finished, state.running == 0 { return true }
                state.idle = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}
