import Foundation
import IntentAMQP
import IntentCLI
import IntentClient
import IntentKit
import Synchronization

/// `intent-status watch`: prints status events as workers publish them, from
/// a server-named queue that the broker deletes when this client goes.
struct StatusWatch {
    var client: IntentClient
    var type: String?
    var state: IntentState?
    /// Everyone's events, not only the user's own (operators).
    var everyone = false
    var json: Bool

    /// Set by SIGINT/SIGTERM; the loop looks at it at least every 250 ms.
    private static let interrupted = Atomic<Bool>(false)

    func run() -> Int32 {
        // A parent may start us with signals blocked (the mask is inherited): unblock the two we stop on.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        for number in [SIGINT, SIGTERM] {
            signal(number) { _ in StatusWatch.interrupted.store(true, ordering: .relaxed) }
            sigaddset(&stopSignals, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        let key = client.watchKey(type: type, state: state, everyone: everyone)
        do {
            try client.watch(
                type: type, state: state, everyone: everyone, until: { Self.interrupted.load(ordering: .relaxed) },
                // Said once the queue is bound: every event published from then on is printed.
                onReady: { Terminal.writeError("intent-status: watching \(key) on \(client.brokerURL); SIGINT stops") },
                onEvent: { event in Terminal.write(json ? String(decoding: event.encoded(), as: UTF8.self) : Self.line(event)) },
                onUnreadable: { delivery in
                    Terminal.writeError("intent-status: skipped an unreadable status event (routing key \(delivery.routingKey))")
                })
            return ExitCode.success
        } catch {
            return Terminal.fail(StatusCommand.tool, error.message, code: ExitCode.of(error))
        }
    }

    /// `time  id  type  state[ code][ turn n][ progress]` for a person.
    static func line(_ event: StatusEvent) -> String {
        var text = "\(Terminal.timestamp(seconds: event.at))  \(event.id)  \(event.type)  \(event.state.rawValue)"
        if let response = event.response { text += " \(response.code)" }
        if let turn = event.turn, turn > 0 { text += "  turn \(turn)" }
        if let dueAt = event.dueAt { text += "  due \(Terminal.timestamp(seconds: dueAt))" }
        if let progress = event.progress {
            let percent = progress.fraction.map { String(format: "%.0f%%", $0 * 100) }
            let detail = [percent, progress.message].compactMap { $0 }.joined(separator: " ")
            if !detail.isEmpty { text += "  \(detail)" }
        }
        if let message = event.response?.message, !message.isEmpty, event.state != .success { text += "  \(message)" }
        return text.escapingControlCharacters
    }
}
