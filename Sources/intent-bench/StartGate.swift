import Foundation
import Synchronization

/// Lets threads connect and set up first, then starts them together at a time
/// the phase records, so set-up is not part of the measured time.
final class StartGate: Sendable {
    private let arrived = DispatchSemaphore(value: 0)
    private let opened = Mutex<Date?>(nil)

    /// Called by a thread once it is ready; blocks until the gate opens and
    /// returns the phase's start time.
    func arriveAndWait(control: PhaseControl) throws(BenchError) -> Date {
        arrived.signal()
        while true {
            if let start = opened.withLock({ $0 }) { return start }
            try control.check("waiting for the other threads to be ready")
            Thread.sleep(forTimeInterval: 0.0005)
        }
    }

    /// Waits until `count` threads have arrived. `threads` are watched for an early failure.
    func waitForArrivals(_ count: Int, threads: [any Joinable], control: PhaseControl) throws {
        var waiting = count
        while waiting > 0 {
            if arrived.wait(timeout: .now() + .milliseconds(20)) == .success {
                waiting -= 1
                continue
            }
            try control.rethrowFailure(of: threads)
            try control.check("waiting for \(waiting) thread(s) to connect")
        }
    }

    /// Releases every waiting thread; returns the start time they see.
    @discardableResult
    func open() -> Date {
        let start = Date()
        opened.withLock { $0 = start }
        return start
    }
}
