import Foundation
import IntentAMQP
import IntentKit
import IntentStore

/// Waits for an intent to reach a state, woken by the status events
/// themselves: a server-named queue bound to the events that can end a wait
/// (`*.success`, `*.failure`, `*.canceled`, `*.needsInput`). When an event for
/// the intent arrives, the status is read again every 2 ms until the store
/// shows it (the recorder commits within a few milliseconds). Outcomes that
/// publish no event (a cancel, an expired question, a dead letter) are caught
/// by a read every half second; without a broker, it polls the store.
public enum StatusWaiter {
    /// The default end of a wait: a terminal state, or a question for the user.
    public static func answeredOrEnded(_ status: IntentStatus) -> Bool {
        status.state.isTerminal || status.state == .needsInput
    }

    /// The routing keys of the events that may end a wait.
    public static let wakingStates: [IntentState] = [.success, .failure, .canceled, .needsInput]

    public static func wait(
        id: String, timeout: Double, brokerURL: BrokerURL?, topology: Topology = Topology(),
        done: (IntentStatus) -> Bool, read: () throws -> IntentStatus?
    ) throws -> IntentStatus? {
        let deadline = Date().addingTimeInterval(timeout)
        // Bound before the first read, so no event can slip between the read and the wait.
        var feed = brokerURL.flatMap { url in
            try? StatusFeed(url: url, bindings: wakingStates.map { (topology.statusExchange, "*.\($0.rawValue)") })
        }
        defer { feed?.close() }
        var last = try read()
        if let last, done(last) { return last }
        var eagerUntil = Date.distantPast
        var nextRead = Date().addingTimeInterval(0.5)
        var pollDelay = 0.005
        while true {
            let now = Date()
            if now >= deadline { return last }
            let eager = now < eagerUntil
            if let live = feed {
                do {
                    let wait = min(deadline.timeIntervalSince(now), eager ? 0.002 : max(0.001, nextRead.timeIntervalSince(now)))
                    if let delivery = try live.next(timeout: wait), delivery.messageID == id {
                        eagerUntil = Date().addingTimeInterval(2)
                    }
                } catch {
                    live.close()
                    feed = nil
                }
                if !eager, Date() < nextRead, Date() >= eagerUntil { continue }
                nextRead = Date().addingTimeInterval(0.5)
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
