import Foundation
import IntentAMQP
import IntentKit
import IntentStore

/// Waits for an intent to reach a state, woken by the status events
/// themselves: a server-named queue bound to the events that can end a wait
/// (`*.success`, `*.failure`, `*.canceled`, `*.needsInput`). When an event for
/// the intent arrives, the status is read again after 2 ms, then at growing
/// intervals (up to 50 ms) until the store shows it (the recorder usually
/// commits within a few milliseconds; a remote read is a question to it). A read
/// every half second covers a lost notice, and without a broker it polls the
/// store.
///
/// Read-your-writes: the answer is always a status read from the store (or,
/// remotely, from the recorder, which writes what it has read before it
/// answers), never one made up from the event. So when a wait reports a
/// state, any read that follows — local or remote, from any tool — reports
/// that state or a later one.
public enum StatusWaiter {
    /// The default end of a wait: a terminal state, or a question for the user.
    public static func answeredOrEnded(_ status: IntentStatus) -> Bool {
        status.state.isTerminal || status.state == .needsInput
    }

    /// The routing keys of the events that may end a wait.
    public static let wakingStates: [IntentState] = [.success, .failure, .canceled, .needsInput]

    /// How long after the intent's event the store is read eagerly: first 2 ms after it, each next read half as
    /// long again after the last, up to `slowestEagerRead` apart.
    public static let eagerReading = 2.0
    /// The longest time between two eager reads (a wait that stays unmet asks the recorder ~20 times a second, not 500).
    public static let slowestEagerRead = 0.05

    /// When a wait with a feed reads the store: at once on its intent's own event, then eagerly for
    /// `eagerReading` seconds (2 ms after, each next read half as long again after the last, up to
    /// `slowestEagerRead`), and otherwise every half second. Another event of the same owner wakes the wait but
    /// does not make it read before its time: a remote read is a question that makes the recorder write out what
    /// it holds, and under a load of the owner's other intents a read per event would be one per event.
    struct ReadPacer {
        private(set) var eagerUntil = Date.distantPast
        private(set) var eagerDelay = 0.002
        private(set) var nextRead: Date

        init(now: Date) {
            nextRead = now.addingTimeInterval(0.5)
        }

        /// How long to wait for an event before deciding whether to read.
        func wait(now: Date) -> Double {
            max(now < eagerUntil ? 0.0005 : 0.001, nextRead.timeIntervalSince(now))
        }

        /// Whether to read now, after a wait that was `woken` by the intent's own event or not.
        mutating func shouldRead(now: Date, woken: Bool) -> Bool {
            if woken {
                eagerUntil = now.addingTimeInterval(StatusWaiter.eagerReading)
                eagerDelay = 0.002
                nextRead = now.addingTimeInterval(eagerDelay)
                return true
            }
            guard now >= nextRead else { return false }
            if now < eagerUntil {
                eagerDelay = min(eagerDelay * 1.5, StatusWaiter.slowestEagerRead)
                nextRead = now.addingTimeInterval(eagerDelay)
            } else {
                nextRead = now.addingTimeInterval(0.5)
            }
            return true
        }
    }

    /// The events that can end a wait, on a queue of this client's: made before
    /// a submission (or the first read), so no event can slip past. They are
    /// bound for `owner`'s intents (the connection's own user by default):
    /// the broker lets a producer bind to its own events only. Nil when the
    /// broker cannot be reached within `timeout` (or 3 s), or refuses the
    /// binding; the wait then polls.
    public static func feed(url: BrokerURL, owner: String? = nil, topology: Topology = Topology(), timeout: Double = 3) -> StatusFeed? {
        let word = StatusEvent.routingWord(for: owner ?? url.user)
        return try? StatusFeed(
            url: url, bindings: wakingStates.map { (topology.statusExchange, "\(word).*.\($0.rawValue)") },
            connectTimeout: max(0.1, min(3, timeout)))
    }

    /// Waits up to `timeout` seconds. `feed` is one made earlier with
    /// `feed(url:)`, which its maker closes; without one, the wait makes (and
    /// closes) its own from `brokerURL`.
    public static func wait(
        id: String, timeout: Double, brokerURL: BrokerURL?, topology: Topology = Topology(), feed given: StatusFeed? = nil,
        done: (IntentStatus) -> Bool, read: () throws -> IntentStatus?
    ) throws -> IntentStatus? {
        let deadline = Date().addingTimeInterval(timeout)
        // Bound before the first read, so no event can slip between the read and the wait.
        let made = given == nil ? brokerURL.flatMap { Self.feed(url: $0, topology: topology, timeout: timeout) } : nil
        defer { made?.close() }
        var feed = given ?? made
        var last = try read()
        if let last, done(last) { return last }
        var pacer = ReadPacer(now: Date())
        var pollDelay = 0.005
        while true {
            let now = Date()
            if now >= deadline { return last }
            if let live = feed {
                var woken = false
                do {
                    let wait = min(deadline.timeIntervalSince(now), pacer.wait(now: now))
                    if let delivery = try live.next(timeout: wait), delivery.messageID == id,
                        let decoded = try? StatusEvent.decode(delivery.body), decoded.id == id
                    {
                        woken = true
                    }
                } catch {
                    feed = nil  // the broker went away: poll the store from now on (its owner closes the feed)
                }
                if feed != nil, !pacer.shouldRead(now: Date(), woken: woken) { continue }
            } else {
                Thread.sleep(forTimeInterval: min(pollDelay, max(0, deadline.timeIntervalSinceNow)))
                pollDelay = min(pollDelay * 1.5, 0.05)
            }
            if let status = try read() {
                last = status
                if done(status) { return status }
            }
        }
    }
}
