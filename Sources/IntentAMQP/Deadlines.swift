import Foundation
import IntentKit
import Synchronization

/// One thread that runs an action when a deadline passes: every handler's time
/// limit (the worker hands it to the pipeline), and the guard on blocking
/// sends, share it.
///
/// Racing each handler against its own `Task.sleep` keeps a timer and a task
/// alive until the deadline even after the handler returns — for a ten-minute
/// limit, memory that grows with every intent. Here a finished handler just
/// removes its entry.
public final class Deadlines: DeadlineScheduler {
    /// The process's one deadline thread, started on first use.
    public static let shared = Deadlines()

    private struct Entry {
        var deadline: ContinuousClock.Instant
        var action: @Sendable () -> Void
    }

    private let entries = Mutex<[Int: Entry]>([:])
    private let nextToken = Atomic<Int>(0)
    /// Signaled when an action is scheduled while none is: the thread sleeps on it while it has nothing to run.
    private let work = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in
            while true {
                // Every 20 ms while actions wait, whatever their number (one wake-up serves a load's thousands);
                // none at all while none does. A signal left over from an action cleared meanwhile costs one round.
                if entries.withLock({ $0.isEmpty }) { work.wait() }
                Thread.sleep(forTimeInterval: 0.02)
                fire()
            }
        }
        thread.name = "intentqueue.deadlines"
        thread.start()
    }

    /// Runs `action` (on the deadline thread) once `seconds` have passed, unless cleared first.
    public func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Int {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        let deadline = ContinuousClock.now.advanced(by: .microseconds(Int64(seconds * 1_000_000)))
        let first = entries.withLock { entries in
            defer { entries[token] = Entry(deadline: deadline, action: action) }
            return entries.isEmpty
        }
        if first { work.signal() }
        return token
    }

    /// Forgets a scheduled action by its token, so it never runs; does nothing once it has run.
    public func clear(_ token: Int) {
        _ = entries.withLock { $0.removeValue(forKey: token) }
    }

    private func fire() {
        let now = ContinuousClock.now
        let due = entries.withLock { entries -> [Entry] in
            let late = entries.filter { $0.value.deadline <= now }
            for token in late.keys { entries[token] = nil }
            return Array(late.values)
        }
        for entry in due { entry.action() }
    }
}
