import Foundation
import Synchronization

/// One thread that runs an action when a deadline passes: every handler's time
/// limit, and the guard on blocking sends, share it.
///
/// Racing each handler against its own `Task.sleep` keeps a timer and a task
/// alive until the deadline even after the handler returns — for a ten-minute
/// limit, memory that grows with every intent. Here a finished handler just
/// removes its entry.
public final class Deadlines: Sendable {
    public static let shared = Deadlines()

    private struct Entry {
        var deadline: ContinuousClock.Instant
        var action: @Sendable () -> Void
    }

    private let entries = Mutex<[Int: Entry]>([:])
    private let nextToken = Atomic<Int>(0)

    private init() {
        let thread = Thread { [self] in
            while true {
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
        entries.withLock { $0[token] = Entry(deadline: deadline, action: action) }
        return token
    }

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
        due.forEach { $0.action() }
    }
}

/// Resumes a continuation once, whichever of several racers comes first.
final class FirstOutcome<Value: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<Value, any Error>?>

    init(_ continuation: CheckedContinuation<Value, any Error>) {
        self.continuation = Mutex(continuation)
    }

    func resume(with result: Result<Value, any Error>) {
        continuation.withLock { $0.take() }?.resume(with: result)
    }
}

/// A task that may be canceled before it is even stored.
final class CancelableTask: Sendable {
    private let state = Mutex<(task: Task<Void, Never>?, canceled: Bool)>((nil, false))

    func set(_ task: Task<Void, Never>) {
        let cancelNow = state.withLock { state -> Bool in
            state.task = task
            return state.canceled
        }
        if cancelNow { task.cancel() }
    }

    /// The task, once set.
    var task: Task<Void, Never>? { state.withLock { $0.task } }

    func cancel() {
        state.withLock { state -> Task<Void, Never>? in
            state.canceled = true
            return state.task
        }?.cancel()
    }
}
