import Foundation
import IntentAMQP
import IntentCLI
import IntentKit
import Synchronization

/// `intent-status watch`: prints status events as workers publish them, from
/// a server-named queue that the broker deletes when this client goes.
struct StatusWatch {
    var type: String?
    var state: IntentState?
    /// Everyone's events, not only the user's own (operators).
    var everyone = false
    var json: Bool

    /// Set by SIGINT/SIGTERM; the loop looks at it at least every 250 ms.
    private static let interrupted = Atomic<Bool>(false)

    func run() -> Int32 {
        let url: BrokerURL
        do {
            url = try Environment.brokerURL()
        } catch {
            return Terminal.fail(StatusCommand.tool, error.description, code: ExitCode.usage)
        }
        let topology = Topology()
        let owner = everyone ? "*" : StatusEvent.routingWord(for: url.user)
        let key = "\(owner).\(type ?? "*").\(state?.rawValue ?? "*")"
        let feed: StatusFeed
        do {
            feed = try StatusFeed(url: url, bindings: [(topology.statusExchange, key)])
        } catch where error.replyCode == 403 {
            return Terminal.fail(
                StatusCommand.tool, "the broker refused to let \(url.user) follow \(everyone ? "everyone's" : "these") events (\(error.detail)); --all is for operators",
                code: ExitCode.forbidden)
        } catch {
            return Terminal.fail(StatusCommand.tool, "broker unreachable: \(error)", code: ExitCode.unavailable)
        }
        defer { feed.close() }
        // A parent may start us with signals blocked (the mask is inherited): unblock the two we stop on.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        for number in [SIGINT, SIGTERM] {
            signal(number) { _ in StatusWatch.interrupted.store(true, ordering: .relaxed) }
            sigaddset(&stopSignals, number)
        }
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        Terminal.writeError("intent-status: watching \(key) on \(url); SIGINT stops")
        while !Self.interrupted.load(ordering: .relaxed) {
            let delivery: Delivery?
            do {
                delivery = try feed.next(timeout: 0.25)
            } catch {
                return Terminal.fail(StatusCommand.tool, "the broker connection ended: \(error)", code: ExitCode.unavailable)
            }
            guard let delivery else { continue }
            guard let event = try? StatusEvent.decode(delivery.body) else {
                Terminal.writeError("intent-status: skipped an unreadable status event (routing key \(delivery.routingKey))")
                continue
            }
            Terminal.write(json ? String(decoding: event.encoded(), as: UTF8.self) : Self.line(event))
        }
        return ExitCode.success
    }

    /// `time  id  type  state[ code][ turn n][ progress]` for a person.
    static func line(_ event: StatusEvent) -> String {
        var text = "\(Terminal.timestamp(seconds: event.at))  \(event.id)  \(event.type)  \(event.state.rawValue)"
        if let response = event.response { text += " \(response.code)" }
        if let turn = event.turn, turn > 0 { text += "  turn \(turn)" }
        if let progress = event.progress {
            let percent = progress.fraction.map { String(format: "%.0f%%", $0 * 100) }
            let detail = [percent, progress.message].compactMap { $0 }.joined(separator: " ")
            if !detail.isEmpty { text += "  \(detail)" }
        }
        if let message = event.response?.message, !message.isEmpty, event.state != .success { text += "  \(message)" }
        return text.escapingControlCharacters
    }
}
