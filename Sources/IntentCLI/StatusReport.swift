import Foundation
import IntentAMQP
import IntentClient
import IntentKit
import IntentStore

/// Statuses for people and programs: rendering and exit codes.
public enum StatusReport {
    /// 0 success; 1 failure or canceled; 3 anything not terminal; 4 unknown.
    public static func exitCode(for status: IntentStatus?) -> Int32 {
        guard let status else { return ExitCode.unknown }
        switch status.state {
        case .success: return ExitCode.success
        case .failure, .canceled: return ExitCode.failed
        case .queued, .scheduled, .inProgress, .needsInput, .cancelRequested: return ExitCode.notTerminal
        }
    }

    /// The JSON printed by `--json`: the status, or `{"id":…,"state":"unknown"}`.
    public static func json(_ status: IntentStatus?, id: String) -> String {
        guard let status else {
            return JSONValue.object(["id": .string(id), "state": "unknown", "terminal": false]).jsonString
        }
        return jsonString(status)
    }

    public static func jsonString(_ status: IntentStatus) -> String {
        status.jsonValue.jsonString
    }

    public static func jsonString(_ statuses: [IntentStatus]) -> String {
        JSONValue.array(statuses.map(\.jsonValue)).jsonString
    }

    /// A few aligned lines for a person, after the app's own view of the intent when it has one.
    public static func human(_ status: IntentStatus?, id: String) -> String {
        guard let status else { return "\(id.escapingControlCharacters): unknown (the status store has never seen this id)" }
        var lines = ["\(status.type) \(status.id): \(status.state.rawValue)"]
        if let rendered = status.view {
            lines += rendered.split(separator: "\n", omittingEmptySubsequences: false).map { "  │ " + $0 }
        }
        func add(_ label: String, _ value: String) {
            let padded = label.isEmpty ? String(repeating: " ", count: 14) : label + ":" + String(repeating: " ", count: max(1, 13 - label.count))
            lines.append("  " + padded + value)
        }
        if let response = status.response {
            add(status.state == .success ? "response" : "code", response.code)
            if let message = response.message, !message.isEmpty { add("message", message) }
        }
        if let dueAt = status.dueAt, status.state == .scheduled || status.state == .cancelRequested {
            add("due", Terminal.timestamp(seconds: dueAt))
        }
        if let progress = status.progress, status.state == .inProgress {
            let percent = progress.fraction.map { String(format: "%.0f%%", $0 * 100) }
            add("progress", [percent, progress.message].compactMap { $0 }.joined(separator: " "))
        }
        let rendered = status.view != nil
        for resolution in status.resolutions ?? [] {
            // The app's view already shows what resolved; keep what still matters.
            if rendered, case .success = resolution.result { continue }
            if rendered, case .notRequired = resolution.result { continue }
            // A question reads in its own words, with its options by title.
            if resolution.result.needsInput, let prompt = resolution.prompt {
                add(resolution.label, prompt.full)
                if case .disambiguation(let options) = resolution.result {
                    let titles = resolution.optionTitles ?? options.map(\.displayString)
                    add("", "options: " + titles.joined(separator: " | "))
                }
                continue
            }
            add(resolution.label, describe(resolution.result))
        }
        for turn in status.history ?? [] {
            let asked = turn.question.filter { $0.result.needsInput }
                .map { $0.prompt.map { "\($0.full)" } ?? "\($0.label) \(describe($0.result))" }.joined(separator: "; ")
            add("turn \(turn.turn)", "asked: \(asked.isEmpty ? "-" : asked)")
            if let answer = turn.answer {
                let text = answer.objectValue.map {
                    $0.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.displayString)" }.joined(separator: ", ")
                }
                add("", "answered: \((text?.isEmpty ?? true) ? "confirmed" : text!)")
            }
        }
        add("attempts", "\(status.attempts)")
        if let submitted = status.submittedAt { add("submitted", Terminal.timestamp(seconds: submitted)) }
        add("updated", Terminal.timestamp(seconds: status.updatedAt))
        if let finished = status.finishedAt { add("finished", Terminal.timestamp(seconds: finished)) }
        // Each line made safe for a terminal: what it quotes came from message bodies.
        return lines.map(\.escapingControlCharacters).joined(separator: "\n")
    }

    /// One line per intent, for `list`.
    public static func line(_ status: IntentStatus) -> String {
        let code = status.response.map { " \($0.code)" } ?? ""
        return "\(status.id)  \(status.type)  \(status.state.rawValue)\(code)  \(Terminal.timestamp(seconds: status.updatedAt))"
            .escapingControlCharacters
    }

    public static func describe(_ result: ResolutionResult) -> String {
        switch result {
        case .success(let value): "resolved to \(value.displayString)"
        case .needsValue: "needs a value"
        case .disambiguation(let options): "needs a choice among: " + options.map(\.displayString).joined(separator: " | ")
        case .confirmationRequired(let value): "needs confirmation of \(value.displayString)"
        case .notRequired: "not required"
        case .unsupported(let reason): "unsupported: \(reason)"
        }
    }
}
