import Foundation
import IntentAMQP
import IntentCLI
import IntentClient
import IntentKit
import IntentStore

/// `intent-status`: what the status store knows.
@main
struct StatusCommand: Command {
    static let tool = "intent-status"
    static let usage =
        "intent-status <id> [--wait [--timeout S]] [--remote] [--json] | list [--state S] [--type T] [--limit N] [--remote] [--json] | dead [--limit N] [--remote] [--json] | watch [--type T] [--state S] [--all] [--json] | requeue <id> | cancel <id> [--remote] | delete (<id>... | --group G | --all) | schedules [--json] | schedule <name> --every D [--starting T] <Type> [name=value...] | pause|resume|unschedule <name>"
    static let help = """
        Show what IntentQueue's status store knows about intents.

        Usage:
          intent-status <id> [--wait [--timeout S]] [--remote] [--json]
          intent-status list [--state S] [--type T] [--limit N] [--remote] [--json]
          intent-status dead [--limit N] [--remote] [--json]   intents the broker dead-lettered (delivery limit, unreadable)
          intent-status watch [--type T] [--state S] [--all] [--json]
                                                      follow the events of your own intents as they are published,
                                                      until SIGINT; --all: everyone's (operators: the broker refuses
                                                      it to others)
          intent-status requeue <id>                  put a dead-lettered intent back in the work queue
          intent-status cancel <id> [--timeout S] [--remote] [--json]
                                                      cancel an unfinished intent: a worker decides, atomically
                                                      with the intent's effects, and this waits for its word —
                                                      canceled, or the outcome the intent already had
          intent-status delete <id>... | --group G | --all [--unfinished]
                                                      remove stored interactions of finished intents: the recorder,
                                                      the store's only writer, does it (your own intents; --all, or
                                                      anyone's, for operators); --unfinished removes unfinished ones
                                                      too (a scheduled intent no worker kept then never runs, and a
                                                      question never expires: cancel them instead)

          intent-status schedules [--json]            the recurring schedules (your own; everyone's, for operators)
          intent-status schedule <name> --every D [--starting T] <Type> [name=value...]
                                                      submit a new intent of Type every D (90s, 10m, 2h, 1d) from T
                                                      (ISO 8601; default now), each under the id <name>@<due time>;
                                                      a worker run with --scheduler submits them
          intent-status pause|resume|unschedule <name>
                                                      stop submitting its intents, start again, or remove it

        Options:
          --wait              wait until the intent ends or needs input (woken by its status event)
          --timeout S         seconds --wait (or cancel) waits (default 30)
          --remote            ask the recorder over the broker instead of reading INTENT_STATUS_DB: same
                              answers and exit codes (without the flag, a machine that has no database
                              file asks the recorder too)
          --state S           list only this state: \(IntentState.allCases.map(\.rawValue).joined(separator: ", "))
          --type T            list only this intent type
          --limit N           list at most N intents, newest first (default 50; at most 10000 with --remote)
          --json              print JSON instead of text
          -h, --help          show this help

        Environment:
          INTENT_STATUS_DB    the status store, read when this machine has it (default
                              ~/.local/state/intentqueue/status.sqlite)
          INTENT_BROKER_URL   the broker, for --remote, watch, --wait, cancel, delete and requeue; several URLs
                              separated by commas for a cluster (or INTENT_BROKER_URL_FILE, a file of mode 600)

        Exit codes: 0 success, 1 failure or canceled, 3 not terminal (including needsInput) or the wait
        timed out, 4 unknown id (requeue: not in the dead-letter queue), 64 usage error,
        69 status store, broker or (for --remote) recorder unreachable, 77 not yours to read or delete.
        cancel: 0 canceled, 1 the intent had already ended otherwise (its outcome is printed), 2 no worker
        serves its type, 3 requested but not decided within --timeout (no worker took it yet), 4 unknown id.
        """

    enum Action {
        case show(id: String, timeout: Double?)
        case list(state: IntentState?, type: String?, limit: Int)
        case dead(limit: Int)
        case requeue(id: String)
        case cancel(id: String, timeout: Double)
        case delete(ids: [String]?, group: String?, unfinished: Bool)
        case watch(type: String?, state: IntentState?, everyone: Bool)
        case schedules
        case schedule(Schedule)
        case changeSchedule(name: String, paused: Bool, remove: Bool)
    }

    var action: Action
    var json: Bool
    /// Ask the recorder over the broker instead of reading the store file.
    var remote = false

    static func parse(_ words: [String]) throws(UsageError) -> StatusCommand? {
        let arguments = try Arguments(
            words, flags: ["--help", "--wait", "--json", "--all", "--remote", "--unfinished"],
            options: ["--timeout", "--state", "--type", "--limit", "--group", "--every", "--starting"])
        if arguments.has("--help") { return nil }
        guard let first = arguments.positionals.first else { throw UsageError("missing an intent id or 'list'") }
        let json = arguments.has("--json")
        let remote = arguments.has("--remote")
        if remote, ["delete", "requeue", "watch", "schedules", "schedule", "pause", "resume", "unschedule"].contains(first) {
            throw UsageError("--remote does not apply to \(first), which always uses the broker")
        }
        if arguments.has("--unfinished"), first != "delete" { throw UsageError("--unfinished only applies to delete") }
        var command = try parseAction(first, arguments: arguments, json: json)
        command.remote = remote
        if remote {
            switch command.action {
            case .list(_, _, let limit), .dead(let limit):
                guard limit <= StatusQuery.maximumLimit else {
                    throw UsageError(
                        "--limit with --remote is at most \(StatusQuery.maximumLimit) (the answer travels as one message); read the store locally for more"
                    )
                }
            default:
                break
            }
        }
        return command
    }

    private static func state(_ arguments: Arguments) throws(UsageError) -> IntentState? {
        guard let text = try arguments.value("--state") else { return nil }
        guard let parsed = IntentState(rawValue: text) else {
            throw UsageError("unknown state '\(text)'; states are \(IntentState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return parsed
    }

    private static func parseScheduling(_ first: String, arguments: Arguments, json: Bool) throws(UsageError) -> StatusCommand? {
        let words = Array(arguments.positionals.dropFirst())
        let others = arguments.options.keys.filter { $0 != "--every" && $0 != "--starting" }
        switch first {
        case "schedules":
            guard words.isEmpty, arguments.options.isEmpty else { throw UsageError("schedules takes only --json") }
            return StatusCommand(action: .schedules, json: json)
        case "pause", "resume", "unschedule":
            guard words.count == 1, arguments.options.isEmpty else { throw UsageError("\(first) takes one schedule name") }
            return StatusCommand(action: .changeSchedule(name: words[0], paused: first == "pause", remove: first == "unschedule"), json: json)
        case "schedule":
            guard others.isEmpty, !arguments.has("--wait") else { throw UsageError("schedule takes --every, --starting and --json") }
            guard words.count >= 2 else { throw UsageError("schedule takes a name, then an intent type and its name=value parameters") }
            if let problem = Schedule.problem(withName: words[0]) { throw UsageError(problem) }
            if let problem = IntentEnvelope.problem(withType: words[1]) { throw UsageError(problem) }
            guard let every = try arguments.duration("--every") else { throw UsageError("schedule needs --every, such as --every 2s or --every 1d") }
            guard Schedule.everyRange.contains(every) else { throw UsageError("--every is from 1 s to 366 days") }
            var parameters: [String: JSONValue] = [:]
            for pair in words.dropFirst(2) {
                guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                    throw UsageError("'\(pair)' is not a name=value parameter")
                }
                parameters[String(pair[..<equals])] = .string(String(pair[pair.index(after: equals)...]))
            }
            let starts = try arguments.instant("--starting") ?? Date().timeIntervalSince1970.rounded(.up)
            guard Schedule.startsRange.contains(starts) else { throw UsageError("--starting is a time from 1970 on") }
            return StatusCommand(
                action: .schedule(Schedule(name: words[0], type: words[1], parameters: parameters, every: every, starts: starts)), json: json)
        default:
            if arguments.options["--every"] != nil || arguments.options["--starting"] != nil {
                throw UsageError("--every and --starting only apply to schedule")
            }
            return nil
        }
    }

    private static func parseAction(_ first: String, arguments: Arguments, json: Bool) throws(UsageError) -> StatusCommand {
        if let scheduling = try parseScheduling(first, arguments: arguments, json: json) { return scheduling }
        if first == "watch" {
            guard arguments.positionals.count == 1 else { throw UsageError("unexpected argument '\(arguments.positionals[1])'") }
            for option in ["--timeout", "--limit", "--group"] where arguments.options[option] != nil {
                throw UsageError("\(option) does not apply to watch")
            }
            if arguments.has("--wait") { throw UsageError("watch takes only --type, --state, --all and --json") }
            let state = try state(arguments)
            if state == .queued {
                throw UsageError("watch follows the events workers publish; 'queued' is the broker's acceptance, which only the store records")
            }
            let type = try arguments.value("--type")
            // A type no intent can have would be watched for ever, silently.
            if let type, let problem = IntentEnvelope.problem(withType: type) { throw UsageError("--type: \(problem)") }
            return StatusCommand(action: .watch(type: type, state: state, everyone: arguments.has("--all")), json: json)
        }
        if first == "delete" {
            let ids = Array(arguments.positionals.dropFirst())
            let group = try arguments.value("--group")
            let choices = [!ids.isEmpty, group != nil, arguments.has("--all")].filter { $0 }.count
            guard choices == 1 else { throw UsageError("delete takes intent ids, or --group G, or --all (one of them)") }
            return StatusCommand(action: .delete(ids: ids.isEmpty ? nil : ids, group: group, unfinished: arguments.has("--unfinished")), json: json)
        }
        if arguments.has("--all") || arguments.options["--group"] != nil { throw UsageError("--all and --group only apply to delete") }
        if first == "cancel" {
            guard arguments.positionals.count == 2 else { throw UsageError("cancel takes exactly one intent id") }
            for option in ["--state", "--type", "--limit"] where arguments.options[option] != nil {
                throw UsageError("\(option) does not apply to cancel")
            }
            if arguments.has("--wait") { throw UsageError("cancel always waits for the decision (up to --timeout)") }
            return StatusCommand(action: .cancel(id: arguments.positionals[1], timeout: try arguments.seconds("--timeout") ?? 30), json: json)
        }
        if first == "requeue" {
            guard arguments.positionals.count == 2 else { throw UsageError("requeue takes exactly one intent id") }
            guard arguments.options.isEmpty, arguments.flags.isEmpty else { throw UsageError("requeue takes no options") }
            return StatusCommand(action: .requeue(id: arguments.positionals[1]), json: false)
        }
        guard arguments.positionals.count == 1 else {
            throw UsageError("unexpected argument '\(arguments.positionals[1])'")
        }
        if first == "dead" {
            for option in ["--timeout", "--state", "--type"] where arguments.options[option] != nil {
                throw UsageError("\(option) does not apply to dead")
            }
            if arguments.has("--wait") { throw UsageError("--wait does not apply to dead") }
            return StatusCommand(action: .dead(limit: try arguments.integer("--limit", in: 1...100_000) ?? 50), json: json)
        }
        if first == "list" {
            for option in ["--timeout"] where arguments.options[option] != nil {
                throw UsageError("\(option) does not apply to list")
            }
            if arguments.has("--wait") { throw UsageError("--wait does not apply to list") }
            let state = try state(arguments)
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

    func run() async -> Int32 {
        let client: IntentClient
        do {
            let url = try Environment.brokerURL()
            // --remote asks the recorder; otherwise the store file, when this machine has it.
            client = IntentClient(brokerURL: url, source: remote ? .remote : IntentClient.source(storePath: Environment.statusStorePath()))
        } catch {
            return Terminal.fail(Self.tool, error.description, code: ExitCode.usage)
        }
        do {
            switch action {
            case .show(let id, let timeout):
                let status = if let timeout { try client.wait(id: id, timeout: timeout) } else { try client.status(id: id) }
                Terminal.write(json ? StatusReport.json(status, id: id) : StatusReport.human(status, id: id))
                return StatusReport.exitCode(for: status)
            case .list(let state, let type, let limit):
                let statuses = try client.list(state: state, type: type, limit: limit)
                if json {
                    Terminal.write(StatusReport.jsonString(statuses))
                } else if statuses.isEmpty {
                    Terminal.write("no intents")
                } else {
                    for status in statuses { Terminal.write(StatusReport.line(status)) }
                }
                return ExitCode.success
            case .dead(let limit):
                let statuses = try client.deadLetters(limit: limit)
                if json {
                    Terminal.write(StatusReport.jsonString(statuses))
                } else if statuses.isEmpty {
                    Terminal.write("no dead-lettered intents")
                } else {
                    for status in statuses {
                        Terminal.write(StatusReport.line(status) + "  " + (status.response?.message ?? "").escapingControlCharacters)
                    }
                }
                return ExitCode.success
            case .watch(let type, let state, let everyone):
                return StatusWatch(client: client, type: type, state: state, everyone: everyone, json: json).run()
            case .requeue(let id):
                switch try client.requeue(id: id) {
                case .requeued(let type):
                    Terminal.write("\(id): requeued as \(type)")
                    return ExitCode.success
                case .notFound(let scanned):
                    return Terminal.fail(Self.tool, "\(id) is not in the dead-letter queue (\(scanned) messages looked at)", code: ExitCode.unknown)
                }
            case .cancel(let id, let timeout):
                return try cancel(id, timeout: timeout, client: client)
            case .schedules:
                let schedules = try client.schedules()
                Terminal.write(json ? JSONValue.array(schedules.map(\.jsonValue)).jsonString : Self.describe(schedules))
                return ExitCode.success
            case .schedule(let schedule):
                let added = try client.schedule(schedule)
                Terminal.write(json ? added.jsonValue.jsonString : Self.describe([added]))
                return ExitCode.success
            case .changeSchedule(let name, let paused, let remove):
                try client.changeSchedule(name, paused: paused, remove: remove)
                Terminal.write(remove ? "\(name): removed" : "\(name): \(paused ? "paused" : "resumed")")
                return ExitCode.success
            case .delete(let ids, let group, let unfinished):
                // Through the recorder, the store's only writer.
                let deletion = try client.delete(ids: ids, group: group, unfinished: unfinished)
                let removed = deletion.deleted
                let kept = deletion.keptUnfinished
                if json {
                    Terminal.write(deletion.jsonValue.jsonString)
                } else {
                    Terminal.write(
                        "deleted \(removed) intent\(removed == 1 ? "" : "s")"
                            + (kept == 0
                                ? ""
                                : "; kept \(kept) not finished (cancel \(kept == 1 ? "it" : "them") first, or delete with --unfinished)"))
                }
                return ExitCode.success
            }
        } catch {
            return Terminal.fail(Self.tool, error.message, code: ExitCode.of(error))
        }
    }

    /// One line per schedule: its name, type, period, owner and whether it is paused.
    static func describe(_ schedules: [Schedule]) -> String {
        guard !schedules.isEmpty else { return "no schedules" }
        return schedules.map { schedule in
            "\(schedule.name): \(schedule.type) every \(JSONValue.formatNumber(schedule.every)) s from \(Terminal.timestamp(seconds: schedule.starts))"
                + " (owner \(schedule.owner ?? "none"))\(schedule.paused ? ", paused" : "")"
        }.joined(separator: "\n")
    }

    /// Requests the cancel, then waits for the worker's decision: the intent's
    /// outcome as the store records it (canceled, or what it already was).
    private func cancel(_ id: String, timeout: Double, client: IntentClient) throws(IntentClientError) -> Int32 {
        switch try client.cancel(id: id, timeout: timeout) {
        case .canceled(let status):
            Terminal.write(json ? StatusReport.jsonString(status) : "\(id): canceled")
            return ExitCode.success
        case .alreadyEnded(let status):
            let outcome = status.state.rawValue + (status.response.map { " (\($0.code))" } ?? "")
            if json { Terminal.write(StatusReport.jsonString(status)) }
            return Terminal.fail(
                Self.tool,
                status.state == .canceled
                    ? "\(status.id) was already canceled"
                    : "\(status.id) had already been handled: it ended \(outcome); a cancel cannot undo that", code: ExitCode.failed)
        case .undecided(let status):
            Terminal.write(
                json
                    ? JSONValue.object(["id": .string(id), "cancel": "requested", "state": .string(status?.state.rawValue ?? "unknown")]).jsonString
                    : "\(id): cancel requested; no worker decided it within \(JSONValue.formatNumber(timeout)) s (it is canceled when one does, unless its outcome is decided first)"
            )
            return ExitCode.notTerminal
        case .refused(let status):
            return Terminal.fail(Self.tool, "the cancel was refused: \(status.response?.message ?? "")", code: ExitCode.forbidden)
        }
    }
}
