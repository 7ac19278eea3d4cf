import Foundation
import Synchronization

/// Bounds how long a write to the broker may block.
///
/// rabbitmq-c 0.11 waits without a deadline in `amqp_basic_publish` when the
/// broker stops reading (frozen, or blocking publishers under a memory alarm).
/// The owner thread arms the watchdog around each send; if the send is still
/// running at the deadline, the watchdog thread shuts the socket down with
/// `shutdown(2)`, which makes the blocked call fail so the owner reconnects.
/// The watchdog never calls into rabbitmq-c, so the connection still has a
/// single owner.
final class SendWatchdog: Sendable {
    static let shared = SendWatchdog()

    private struct Armed {
        var socket: Int32
        var deadline: ContinuousClock.Instant
    }

    private let armed = Mutex<[Int: Armed]>([:])
    private let nextToken = Atomic<Int>(0)

    private init() {
        let thread = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: 0.1)
                sweep()
            }
        }
        thread.name = "intentqueue.send-watchdog"
        thread.start()
    }

    /// Starts watching a send on `socket`; returns a token for `disarm`.
    func arm(socket: Int32, seconds: Double) -> Int {
        let token = nextToken.add(1, ordering: .relaxed).newValue
        let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
        armed.withLock { $0[token] = Armed(socket: socket, deadline: deadline) }
        return token
    }

    func disarm(_ token: Int) {
        _ = armed.withLock { $0.removeValue(forKey: token) }
    }

    private func sweep() {
        let now = ContinuousClock.now
        let expired = armed.withLock { armed -> [Int32] in
            let late = armed.filter { $0.value.deadline <= now }
            for token in late.keys { armed[token] = nil }
            return late.values.map(\.socket)
        }
        for socket in expired {
            _ = shutdown(socket, Int32(SHUT_RDWR))
        }
    }
}
