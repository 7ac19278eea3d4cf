import Synchronization

/// Runs an action once a deadline passes, unless it is cleared first: how the
/// pipeline enforces a handler's time limit. The worker gives it its one timer
/// thread (`Deadlines`); without one, each limit sleeps in a task of its own.
public protocol DeadlineScheduler: Sendable {
    /// Runs `action` once `seconds` have passed, unless `clear` is called with the token first.
    func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Int
    /// Cancels the deadline `token` names (as `schedule` returned it), so that its action never runs; one already passed is left as it is.
    func clear(_ token: Int)
}

extension DeadlineScheduler {
    /// The longest wait a deadline is given, about 31 years: a longer one (a time limit of 10^13 s, say) waits that
    /// long, where counting it in microseconds would overflow.
    public static var longest: Double { 1_000_000_000 }

    /// `seconds` as the microseconds a deadline waits: none for a negative one, at most `longest`.
    public static func microseconds(waiting seconds: Double) -> Int64 {
        Int64(min(max(0, seconds), longest) * 1_000_000)
    }
}

/// A deadline per task: each sleeps until its time and is canceled when
/// cleared. Enough for tests and tools; a worker uses its timer thread.
public final class TaskDeadlines: DeadlineScheduler {
    private let tasks = Mutex<[Int: Task<Void, Never>]>([:])
    private let nextToken = Atomic<Int>(0)

    /// A scheduler with no deadlines yet.
    public init() {}

    /// Starts a task that sleeps `seconds` and then runs `action`, unless cleared first; returns the token to clear it with.
    public func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Int {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        // Stored before the task can look for itself: it runs only if still there.
        tasks.withLock { tasks in
            tasks[token] = Task { [weak self] in
                try? await Task.sleep(for: .microseconds(Self.microseconds(waiting: seconds)))
                guard self?.tasks.withLock({ $0.removeValue(forKey: token) }) != nil else { return }
                action()
            }
        }
        return token
    }

    /// Cancels the deadline's task, so that its action never runs.
    public func clear(_ token: Int) {
        tasks.withLock { $0.removeValue(forKey: token) }?.cancel()
    }
}

/// Resumes a handler's continuation once, whichever of its run and its deadline comes first. Not generic:
/// a generic class's instances look up the metadata of what they hold as they go, on every run.
final class FirstOutcome: Sendable {
    // Unsafe rather than checked: `take()` resumes it at most once, and the handler's task at least once.
    private let continuation: Mutex<UnsafeContinuation<IntentResponse, any Error>?>

    init(_ continuation: UnsafeContinuation<IntentResponse, any Error>) {
        self.continuation = Mutex(continuation)
    }

    func resume(with result: Result<IntentResponse, any Error>) {
        continuation.withLock { $0.take() }?.resume(with: result)
    }
}

/// A handler running in its caller's task, raced against its deadline: the first of the two to come decides the
/// outcome. The deadline cancels the task only until the handler's return is recorded (`pass` cancels under the
/// lock `finish` takes once it has returned), so a caller that finds its task uncanceled after `finish` stays so;
/// one that finds it canceled got `timedOut`.
final class DeadlineRace: Sendable {
    /// Plain references: the current task is kept only inside `cancelHandler` (an `UnsafeCurrentTask` is a
    /// resilient type, copied through its value witnesses).
    private struct State {
        var decided = false
        /// Cancels the task the handler runs in; dropped once the handler has returned.
        var cancelHandler: (() -> Void)?
        /// The task reporting the deadline's outcome, once it has passed first.
        var reporting: Task<Void, Never>?
    }

    private let state: Mutex<State>

    /// Made in the task the handler runs in. The task is kept past `withUnsafeCurrentTask`, which is sound here
    /// because `cancel()` may be called from any thread, the closure holds a strong reference to the task, and
    /// `finish()` drops it (under the lock) before the handler's task can go on past the handler.
    init() {
        let cancel = withUnsafeCurrentTask { task -> (() -> Void)? in
            guard let task else { return nil }
            return { task.cancel() }
        }
        state = Mutex(State(cancelHandler: cancel))
    }

    /// The deadline passed: unless the handler's return was recorded, starts the task that reports it (`report`
    /// makes it) and cancels the handler's. The handler's cancellation handlers run here, on the deadline's thread.
    func pass(_ report: () -> Task<Void, Never>) {
        state.withLock { state in
            guard !state.decided else { return }
            state.decided = true
            state.reporting = report()
            state.cancelHandler?()
        }
    }

    /// The handler returned: nil when it came first (its result stands), else the task reporting the deadline.
    func finish() -> Task<Void, Never>? {
        state.withLock { state in
            state.decided = true
            state.cancelHandler = nil
            return state.reporting
        }
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
