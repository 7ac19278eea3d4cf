import Foundation
import Synchronization

/// The deadline of one phase and a flag that tells its threads to give up, so a
/// phase fails with a reason instead of hanging.
final class PhaseControl: Sendable {
    let phase: String
    let deadline: Date
    let timeout: Double
    private let stopped = Atomic<Bool>(false)

    init(phase: String, timeout: Double) {
        self.phase = phase
        self.timeout = timeout
        deadline = Date().addingTimeInterval(timeout)
    }

    /// Asks every thread of the phase to stop at its next check.
    func stop() { stopped.store(true, ordering: .relaxed) }

    var isStopped: Bool { stopped.load(ordering: .relaxed) }

    /// Seconds left before the deadline (never negative).
    var remaining: Double { max(0, deadline.timeIntervalSinceNow) }

    /// Throws when the phase was stopped or its deadline passed; `doing` says what was awaited.
    func check(_ doing: @autoclosure () -> String) throws(BenchError) {
        try Interruption.check()
        if isStopped { throw .failed("\(phase): stopped while \(doing())") }
        if Date() >= deadline { throw .failed("\(phase): timed out after \(Int(timeout)) s while \(doing())") }
    }

    /// Throws the first failure among `threads`, after stopping the phase.
    func rethrowFailure(of threads: [any Joinable]) throws(BenchError) {
        if let failed = threads.first(where: { $0.failure != nil }), let error = failed.failure {
            stop()
            throw BenchError.from(error, phase: "\(phase) (\(failed.name))")
        }
    }

    /// Waits until every thread finished; the first failure, or the deadline,
    /// stops the phase and is thrown. `alsoCheck` runs between polls.
    func join(_ threads: [any Joinable], alsoCheck: () throws -> Void = {}) throws {
        while true {
            try rethrowFailure(of: threads)
            if threads.allSatisfy(\.isFinished) { return }
            do {
                try alsoCheck()
                try check("waiting for \(threads.filter { !$0.isFinished }.map(\.name).joined(separator: ", "))")
            } catch {
                stop()
                throw error
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
}

/// A SIGINT or SIGTERM the run received. Every phase gives up at its next check, so an interrupted run ends by the
/// path a failed phase takes: its services stopped and every queue and exchange it made deleted, instead of leaving
/// quorum queues the broker keeps ticking from then on. A second signal ends the process at once.
enum Interruption {
    private static let received = Atomic<Int32>(0)

    /// The signal received first, if any.
    static var signal: Int32? {
        let number = received.load(ordering: .relaxed)
        return number == 0 ? nil : number
    }

    /// Catches SIGINT and SIGTERM from now on. A handler (not an ignored signal) so that a child process, the C
    /// ceiling, starts with the default dispositions.
    static func install() {
        for number in [SIGINT, SIGTERM] {
            Glibc.signal(number) { number in
                // Only what is safe in a signal handler: an atomic exchange, then `_exit` on the second signal.
                if Interruption.received.exchange(number, ordering: .relaxed) != 0 { _exit(128 + number) }
            }
        }
    }

    /// Throws when a signal was received.
    static func check() throws(BenchError) {
        if let signal { throw .interrupted(signal) }
    }
}
