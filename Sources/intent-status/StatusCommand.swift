import Foundation
import IntentCLI
import IntentKit
import IntentStore

/// `intent-status`: what the status store knows.
struct StatusCommand {
    static let tool = "intent-status"
    static let usage = "intent-status <id> [--wait [--timeout S]] [--json] | intent-status list [--state S] [--type T] [--limit N] [--json]"
    static let help = """
        Show what IntentQueue's status store knows about intents.

        Usage:
          intent-status <id> [--wait [--timeout S]] [--json]
          intent-status list [--state S] [--type T] [--limit N] [--json]

        Options:
          --wait              wait until the intent ends or needs input
          --timeout S         seconds --wait waits (default 30)
          --state S           list only this state: \(IntentState.allCases.map(\.rawValue).joined(separator: ", "))
          --type T            list only this intent type
          --limit N           list at most N intents, newest first (default 50)
          --json              print JSON instead of text
          -h, --help          show this help

        Environment:
          INTENT_STATUS_DB    the status store (default ~/.local/state/intentqueue/status.sqlite)

        Exit codes: 0 success, 1 failure or canceled, 3 not terminal (including needsInput) or the wait
        timed out, 4 unknown id, 64 usage error, 69 status store unreachable.
        """

    enum Action {
        case show(id: String, timeout: Double?)
        case list(state: IntentState?, type: String?, limit: Int)
    }

    var action: Action
    var json: Bool

    static func parse(_ words: [String]) throws(UsageError) -> StatusCommand? {
        let arguments = try Arguments(
            words, flags: ["--help", "--wait", "--json"], options: ["--timeout", "--state", "--type", "--limit"])
        if arguments.has("--help") { return nil }
        guard let first = arguments.positionals.first else { throw UsageError("missing an intent id or 'list'") }
        guard arguments.positionals.count == 1 else {
            throw UsageError("unexpected argument '\(arguments.positionals[1])'")
        }
        let json = arguments.has("--json")
        if first == "list" {
            for option in ["--timeout"] where arguments.options[option] != nil {
                throw UsageError("\(option) does not apply to list")
            }
            if arguments.has("--wait") { throw UsageError("--wait does not apply to list") }
            var state: IntentState?
            if let text = try arguments.value("--state") {
                guard let parsed = IntentState(rawValue: text) else {
                    throw UsageError("unknown state '\(text)'; states are \(IntentState.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                state = parsed
            }
            let limit = try arguments.integer("--limit", in: 1...100_000) ?? 50
            return StatusCommand(action: .list(state: state, type: try arguments.value("--type"), limit: limit), json: json)
        }
        for option in ["--state", "--type", "--limit"] where arguments.options[option] != nil {
            throw UsageError("\(option) only applies to list")
        }
        let timeout = try arguments.seconds("--timeout")
        if timeout != nil, !arguments.has("--wait") { throw UsageError("--timeout only applies with --wait") }
        return StatusCommand(action: .show(id: first, timeout: arguments.has("--wait") ? (timeout ?? 30) : nil), json: json)
    }

    func run() -> Int32 {
        let path = Environment.statusStorePath()
        do {
            switch action {
            case .show(let id, let timeout):
                let status = try StatusReport.read(id: id, storePath: path, timeout: timeout)
                Terminal.write(json ? StatusReport.json(status, id: id) : StatusReport.human(status, id: id))
                return StatusReport.exitCode(for: status)
            case .list(let state, let type, let limit):
                let statuses = try StatusStore(readingFrom: path).list(state: state, type: type, limit: limit)
                if json {
                    Terminal.write(StatusReport.jsonString(statuses))
                } else if statuses.isEmpty {
                    Terminal.write("no intents")
                } else {
                    statuses.forEach { Terminal.write(StatusReport.line($0)) }
                }
                return ExitCode.success
            }
        } catch {
            return Terminal.fail(Self.tool, "status store unreachable: \(error)", code: ExitCode.unavailable)
        }
    }
}
