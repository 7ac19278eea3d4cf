import Foundation
import IntentKit

/// Bounds how long a write to the broker may block.
///
/// rabbitmq-c 0.11 waits without a deadline in `amqp_basic_publish` when the
/// broker stops reading (frozen, or blocking publishers under a memory alarm).
/// The owner thread arms the watchdog around each send; if the send is still
/// running at the deadline, the deadline thread shuts the socket down with
/// `shutdown(2)`, which makes the blocked call fail so the owner reconnects.
/// It never calls into rabbitmq-c, so the connection keeps a single owner.
enum SendWatchdog {
    /// Starts watching a send on `socket`; returns a token for `disarm`.
    static func arm(socket: Int32, seconds: Double) -> Int {
        Deadlines.shared.schedule(after: seconds) { _ = shutdown(socket, Int32(SHUT_RDWR)) }
    }

    static func disarm(_ token: Int) {
        Deadlines.shared.clear(token)
    }
}
