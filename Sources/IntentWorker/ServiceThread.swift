import Foundation
import IntentAMQP
import Synchronization

/// What a service that lives on a thread of its own shares with that thread:
/// the request to stop, and a pause that ends as soon as it comes.
final class StopRequest: Sendable {
    private let requested = Atomic<Bool>(false)

    func request() { requested.store(true, ordering: .sequentiallyConsistent) }

    var isRequested: Bool { requested.load(ordering: .sequentiallyConsistent) }

    /// Sleeps up to `seconds`, looking every 50 ms whether a stop was requested. Timed on the monotonic clock: a wall
    /// clock stepped back during the pause does not make it longer.
    func pause(_ seconds: Double) {
        let deadline = ProcessInfo.processInfo.systemUptime + max(0, min(seconds, 86_400))
        while !isRequested {
            let left = deadline - ProcessInfo.processInfo.systemUptime
            guard left > 0 else { return }
            Thread.sleep(forTimeInterval: min(0.05, left))
        }
    }
}

/// Runs `body` on a new thread named `name`, off the cooperative pool (it
/// blocks on sockets and SQLite); returns, or throws its error, when it ends.
func runOnThread(named name: String, _ body: @escaping @Sendable () throws -> Void) async throws {
    let failure = Mutex<(any Error)?>(nil)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        let thread = Thread.named(name) {
            do {
                try body()
            } catch {
                failure.withLock { $0 = error }
            }
            continuation.resume()
        }
        thread.start()
    }
    if let error = failure.withLock({ $0 }) { throw error }
}
