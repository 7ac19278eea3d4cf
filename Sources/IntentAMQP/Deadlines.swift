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
        /// Since `origin`: a `Duration` has a layout known where it is used, an `Instant` (not frozen) does not,
        /// and every copy, destroy and dictionary operation of an entry holding one went through the runtime.
        var deadline: Duration
        var action: @Sendable () -> Void
    }

    /// What the deadlines count from.
    private let origin = ContinuousClock.now

    private struct State {
        var entries: [Int: Entry] = [:]
        /// Whether the thread is asleep (or on its way to sleep) for want of any entry.
        var asleep = false
        /// How many times the thread went to sleep, and how many of those sleeps a `schedule` ended: for tests.
        var sleeps = 0
        var signals = 0
    }

    private let state = Mutex(State())
    private let nextToken = Atomic<Int>(0)
    /// Signaled once for each time the thread went to sleep, by the first action scheduled after it did.
    private let work = DispatchSemaphore(value: 0)

    /// A deadline thread of its own: `shared` is the process's, and tests make their own, with `wentIdle` called
    /// on the thread each time it is about to sleep.
    init(wentIdle: (@Sendable () -> Void)? = nil) {
        let thread = Thread.named("iq-deadlines") { [self] in
            while true {
                // Every 20 ms while actions wait, whatever their number (one wake-up serves a load's thousands);
                // not at all while none does. Whoever finds `asleep` set clears it and signals, so each sleep
                // gets one signal, and one signal ends it: none is left over to cost a round later.
                let idle = state.withLock { state in
                    state.asleep = state.entries.isEmpty
                    if state.asleep { state.sleeps += 1 }
                    return state.asleep
                }
                if idle {
                    wentIdle?()
                    work.wait()
                }
                Thread.sleep(forTimeInterval: 0.02)
                fire()
            }
        }
        thread.start()
    }

    /// Runs `action` (on the deadline thread) once `seconds` have passed, unless cleared first.
    public func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Int {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        let deadline = origin.duration(to: .now) + .microseconds(Self.microseconds(waiting: seconds))
        let wake = state.withLock { state in
            state.entries[token] = Entry(deadline: deadline, action: action)
            guard state.asleep else { return false }
            state.asleep = false
            state.signals += 1
            return true
        }
        if wake { work.signal() }
        return token
    }

    /// How many times the thread went to sleep, and how many of those sleeps were ended by a signal, for tests.
    var sleepsAndSignals: (sleeps: Int, signals: Int) { state.withLock { ($0.sleeps, $0.signals) } }

    /// Forgets a scheduled action by its token, so it never runs; does nothing once it has run.
    public func clear(_ token: Int) {
        _ = state.withLock { $0.entries.removeValue(forKey: token) }
    }

    private func fire() {
        let now = origin.duration(to: .now)
        let due = state.withLock { state -> [Entry] in
            let late = state.entries.filter { $0.value.deadline <= now }
            for token in late.keys { state.entries[token] = nil }
            return Array(late.values)
        }
        for entry in due { entry.action() }
    }
}
