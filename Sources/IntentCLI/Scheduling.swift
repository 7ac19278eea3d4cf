import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How a long-running process (a worker, the recorder, the benchmark) asks Linux to schedule its threads.
///
/// An intent crosses several threads of a worker: the I/O thread reads its delivery, a task runs it, the database
/// queue commits it, and each hand-off wakes a sleeping thread. Under Linux's default policy a thread woken that way
/// often preempts the thread that woke it, which then waits to get its core back: two context switches for one
/// hand-off. Under `SCHED_BATCH` a woken thread never preempts a running one (it takes an idle core, or waits its
/// turn), with the same share of the CPU as before (its nice value is unchanged). On the 2-core build machine that is
/// 11–19 % of a worker's and recorder's CPU per intent at full speed and 3–8 % at 1,000 intents/s (see Performance.md,
/// "Threads that do not preempt each other").
public enum CPUScheduling: String, Sendable, CaseIterable {
    /// `SCHED_BATCH`: a woken thread does not preempt a running one. The default of `intent-worker` and `intent-bench`.
    case batch
    /// The system's own policy (`SCHED_OTHER`).
    case normal

    /// The policy's number in Linux's `<sched.h>` (Swift's Glibc module leaves `SCHED_BATCH` out).
    var policy: Int32 {
        switch self {
        case .batch: 3
        case .normal: 0
        }
    }

    /// What a command line's `--scheduling` says; `batch` when it says nothing.
    public init(_ arguments: Arguments) throws(UsageError) {
        guard let text = try arguments.value("--scheduling") else {
            self = .batch
            return
        }
        try self.init(option: text)
    }

    /// The value of a `--scheduling` option.
    init(option text: String) throws(UsageError) {
        guard let value = Self(rawValue: text) else {
            throw UsageError("--scheduling takes \(Self.allCases.map(\.rawValue).joined(separator: " or ")), not '\(text)'")
        }
        self = value
    }

    /// A thread's policy could not be set: the process runs on, under the policy it had.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The thread (its id in `/proc/self/task`) that kept its policy.
        public var thread: Int32
        /// What `sched_setscheduler` said.
        public var message: String

        /// Says which thread kept its policy, and why.
        public var description: String { "thread \(thread) keeps its scheduling policy: \(message)" }
    }

    /// Puts every thread of this process under the policy; a thread started later inherits it from the thread that
    /// starts it. Threads that start while this runs are looked at again until none is left under another policy.
    /// Throws the first thread that could not be changed (a sandbox may forbid it), after trying all of them. Without
    /// `/proc` (a sandbox may hide it), only the calling thread is set: call it before the process starts threads.
    public func apply() throws(Failure) {
        #if os(Linux)
            var failure: Failure?
            // Each pass sets the threads still under another policy; a thread started during a pass, by a thread not
            // yet set, is found by the next. Bounded, in case a thread keeps refusing.
            for _ in 0..<8 {
                var changed = 0
                for thread in Self.threads() where sched_getscheduler(thread) != policy {
                    var parameters = sched_param(sched_priority: 0)
                    if sched_setscheduler(thread, policy, &parameters) == 0 {
                        changed += 1
                    } else if errno != ESRCH {  // ESRCH: the thread has ended since it was listed.
                        failure = failure ?? Failure(thread: thread, message: String(cString: strerror(errno)))
                    }
                }
                if changed == 0 { break }
            }
            if let failure { throw failure }
        #endif
    }

    /// `apply()`, for a process that runs on whatever it says: nil when every thread took the policy, or else the
    /// warning its log should carry.
    public func applyOrWarn() -> String? {
        do {
            try apply()
            return nil
        } catch {
            return "--scheduling \(rawValue) not applied to every thread: \(error)"
        }
    }

    /// The policy every thread of this process is under (without `/proc`, the calling thread's), or nil when they differ.
    public static var current: CPUScheduling? {
        #if os(Linux)
            let policies = Set(threads().map { sched_getscheduler($0) })
            guard policies.count == 1, let policy = policies.first else { return nil }
            return allCases.first { $0.policy == policy }
        #else
            return nil
        #endif
    }

    /// The ids of this process's threads; without `/proc`, the calling thread alone (0: the caller, to the kernel).
    static func threads() -> [Int32] {
        let listed = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { Int32($0) }
        return listed.isEmpty ? [0] : listed
    }
}
