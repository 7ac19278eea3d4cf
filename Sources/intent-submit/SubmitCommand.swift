import Foundation
import IntentAMQP
import IntentCLI
import IntentClient
import IntentKit

/// `intent-submit`: publishes one intent and prints its id once the broker confirmed it.
@main
struct SubmitCommand: Command {
    static let tool = "intent-submit"
    static let usage =
        "intent-submit <Type> [name=value ...] [--parameters JSON] [--id ID] [--group G] [--at T | --in D] [--expires-in D | --expires-at T] [--dedupe-key K [--dedupe-for D]] [--priority high] [--wait [--timeout S]] [--json] | --answer ID name=value... | --confirm ID | --deny ID"
    static let help = """
        Submit an intent to IntentQueue and print its id once the broker has confirmed it.

        Usage: \(usage)

        Arguments:
          <Type>              the intent type, e.g. SendMessage (must be served by a running worker)
          name=value          a parameter; a list is written with commas: recipients=Alice,Bob

        Answering an intent that waits in needsInput (its question is read from INTENT_STATUS_DB when this
        machine has the file, else asked of the recorder over the broker):
          --answer ID name=value...   give the asked parameters; the rest stay as they were; resolution runs again
          --confirm ID                confirm what it asks to confirm (a value, or the whole intent)
          --as-operator               answer (confirm, deny) another owner's intent; the worker accepts it
                                      only from a broker user it knows as an operator (--operator-user)
          --deny ID                   refuse it: the intent ends failure/denied (unless a confirmation
                                      was handled first: a worker decides, and --wait shows which)

        Options:
          --parameters JSON   parameters as one JSON object; name=value pairs override its keys
          --id ID             the intent id (default: a new UUID); resubmitting an id never repeats its effects
          --group G           the conversation it belongs to (intent-status delete --group G removes its finished ones)
          --at T              run it at a time, ISO 8601 with its zone (2026-12-24T18:00:00Z): it is scheduled
                              until then, and may be canceled meanwhile (the recorder releases it when due)
          --in D              run it after a while: 90s, 10m, 2h, 7d
          --dedupe-key K      one intent per key: a submission of this type under key K by the same broker user
                              within --dedupe-for of the first (default 5m) is answered with the first's id
                              (said on stderr) instead of making another; needs the recorder running
          --dedupe-for D      the deduplication window: 90s, 10m, 2h, 7d (at most 30d)
          --priority P        high: taken ahead of normal work queued before it (an interactive request behind a
                              batch); normal (the default): in turn
          --expires-in D      not to be started after D from now (90s, 10m, 2h, 7d): a worker that takes it later
                              ends it failure/expired without running it; once begun, it runs to its end
          --expires-at T      the same at a time, ISO 8601 with its zone: 2026-12-24T18:00:00Z
          --wait              follow the intent until it ends or needs input
          --timeout S         seconds --wait waits (default 30)
          --json              print JSON instead of text
          -h, --help          show this help

        Environment:
          INTENT_BROKER_URL   amqp://user:password@host:port/vhost (default \(BrokerURL.defaultURL));
                              the nodes of a cluster as several URLs separated by commas
          INTENT_BROKER_URL_FILE  a file (mode 600) holding the URL instead
          INTENT_STATUS_DB    the status store read by --wait and the answers, when this machine has the file
                              (otherwise the recorder is asked over the broker)

        Exit codes: 0 submitted (with --wait: success), 1 failure or canceled, 2 no worker serves the type, or the
        intent is not waiting for an answer, 3 not terminal when --wait ended (needsInput, or timed out),
        4 unknown id (--answer, --confirm, --deny), 64 usage error, 69 broker or status store unreachable,
        77 not yours: the id belongs to another submitter (or another type), or the intent to another owner.
        """

    enum Mode: Equatable {
        case submit
        case answer
        case confirm
        case deny
    }

    var mode: Mode
    var type: String
    var parameters: [String: JSONValue]
    var id: String
    var group: String?
    /// Seconds since 1970 after which the intent may not start.
    var expiresAt: Double?
    /// Seconds since 1970 at which the intent is due (nil: at once).
    var dueAt: Double?
    /// One intent per key and window.
    var dedupeKey: String?
    var dedupeWindow = 300.0
    var priority = IntentPriority.normal
    var wait: Bool
    var timeout: Double
    var json: Bool
    /// Answer another owner's intent: the worker accepts it only from an operator.
    var asOperator = false
    /// Some parameters were typed as name=value: strings the worker reads as the types declared.
    var lenient = false

    /// Parses and validates; `nil` means `--help` was asked for.
    static func parse(_ words: [String]) throws(UsageError) -> SubmitCommand? {
        let arguments = try Arguments(
            words, flags: ["--help", "--wait", "--json", "--as-operator"],
            options: [
                "--id", "--parameters", "--timeout", "--group", "--answer", "--confirm", "--deny", "--expires-in", "--expires-at", "--at",
                "--in", "--dedupe-key", "--dedupe-for", "--priority",
            ])
        if arguments.has("--help") { return nil }
        var conversation: [(Mode, String, String)] = []
        for (option, mode) in [("--answer", Mode.answer), ("--confirm", .confirm), ("--deny", .deny)] {
            if let id = try arguments.value(option) { conversation.append((mode, id, option)) }
        }
        guard conversation.count <= 1 else { throw UsageError("--answer, --confirm and --deny exclude each other") }
        var mode = Mode.submit
        var type = ""
        var pairs = arguments.positionals.dropFirst(0)
        if let (chosen, id, option) = conversation.first {
            mode = chosen
            guard !id.isEmpty else { throw UsageError("\(option) needs an intent id") }
            for excluded in ["--id", "--group", "--expires-in", "--expires-at", "--at", "--in", "--dedupe-key", "--dedupe-for"]
            where arguments.options[excluded] != nil {
                throw UsageError("\(excluded) does not apply to \(option)")
            }
            if mode != .answer, !pairs.isEmpty || arguments.options["--parameters"] != nil {
                throw UsageError("\(option) takes no parameters")
            }
            if mode == .answer, pairs.isEmpty, arguments.options["--parameters"] == nil {
                throw UsageError("--answer needs the answered parameters, as name=value")
            }
        } else {
            guard let first = arguments.positionals.first else { throw UsageError("missing the intent type") }
            guard !first.contains("="), first.utf8.count <= 255,
                first.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
            else {
                throw UsageError("'\(first)' is not an intent type name (letters, digits, '_' and '-' only)")
            }
            type = first
            pairs = arguments.positionals.dropFirst()
        }
        var parameters: [String: JSONValue] = [:]
        if let text = try arguments.value("--parameters") {
            guard case .object(let object)? = try? JSONValue.parse(Data(text.utf8)) else {
                throw UsageError("--parameters must be a JSON object, such as '{\"recipients\":[\"Alice\"]}'")
            }
            parameters = object
        }
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError("'\(pair)' is not a name=value parameter")
            }
            parameters[String(pair[..<equals])] = .string(String(pair[pair.index(after: equals)...]))
        }
        let givenID = try arguments.value("--id")
        let id = conversation.first?.1 ?? givenID ?? IntentID.make()
        guard !id.isEmpty, id.utf8.count <= 255, !id.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw UsageError("--id must be 1 to 255 bytes with no spaces")
        }
        // The workers' own rule (control characters, '.' and '..'): an id they refuse is refused here, not dead-lettered.
        if let problem = IntentEnvelope.problem(withID: id) { throw UsageError("--id: \(problem)") }
        if conversation.isEmpty, IntentEnvelope.isScheduledRunID(id) {
            throw UsageError("--id: \(IntentEnvelope.scheduledRunIDProblem)")
        }
        let timeout = try arguments.seconds("--timeout")
        if timeout != nil, !arguments.has("--wait") { throw UsageError("--timeout only applies with --wait") }
        let group = try arguments.value("--group")
        if let group, group.isEmpty || group.utf8.count > 255 { throw UsageError("--group must be 1 to 255 bytes") }
        let expiresIn = try arguments.duration("--expires-in")
        let expiresAt = try arguments.instant("--expires-at")
        if expiresIn != nil, expiresAt != nil { throw UsageError("--expires-in and --expires-at exclude each other") }
        let at = try arguments.instant("--at")
        let after = try arguments.duration("--in")
        if at != nil, after != nil { throw UsageError("--at and --in exclude each other") }
        let dedupeKey = try arguments.value("--dedupe-key")
        if let dedupeKey, dedupeKey.isEmpty || dedupeKey.utf8.count > 255 { throw UsageError("--dedupe-key must be 1 to 255 bytes") }
        let dedupeWindow = try arguments.duration("--dedupe-for")
        if dedupeWindow != nil, dedupeKey == nil { throw UsageError("--dedupe-for only applies with --dedupe-key") }
        if let dedupeWindow, dedupeWindow > IntentClient.maximumDedupeWindow { throw UsageError("--dedupe-for may be at most 30d") }
        var command = SubmitCommand(
            mode: mode, type: type, parameters: parameters, id: id, group: group,
            expiresAt: expiresAt ?? expiresIn.map { Date().timeIntervalSince1970 + $0 },
            dueAt: at ?? after.map { Date().timeIntervalSince1970 + $0 }, wait: arguments.has("--wait"),
            timeout: timeout ?? 30, json: arguments.has("--json"), asOperator: arguments.has("--as-operator"), lenient: !pairs.isEmpty)
        if let text = try arguments.value("--priority") {
            guard let priority = IntentPriority(rawValue: text) else { throw UsageError("--priority must be high or normal, not '\(text)'") }
            command.priority = priority
        }
        command.dedupeKey = dedupeKey
        if let dedupeWindow { command.dedupeWindow = dedupeWindow }
        return command
    }

    func run() async -> Int32 {
        let url: BrokerURL
        do {
            url = try Environment.brokerURL()
        } catch {
            return Terminal.fail(Self.tool, error.description, code: ExitCode.usage)
        }
        // The store file when this machine has it; otherwise the recorder answers over the broker.
        let client = IntentClient(brokerURL: url, source: IntentClient.source(storePath: Environment.statusStorePath()))
        // Once the broker confirmed the submission, a failure to follow it must not read as a failure to submit it.
        var submitted: String?
        // Set from the publish on: a failure then (no confirm, the connection lost) leaves the submission unknown.
        var publishing: String?
        do {
            var envelope: IntentEnvelope
            switch mode {
            case .submit:
                envelope = IntentEnvelope(
                    id: id, type: type, parameters: parameters, submittedAt: Date().timeIntervalSince1970, group: group,
                    lenientParameters: lenient, expiresAt: expiresAt, dueAt: dueAt, priority: priority)
            case .answer: envelope = try client.answer(id: id, parameters, asOperator: asOperator)
            case .confirm: envelope = try client.confirmation(id: id, asOperator: asOperator)
            case .deny: envelope = try client.denial(id: id, asOperator: asOperator)
            }
            var deduplicated = false
            if let dedupeKey {
                // The recorder says which intent the key stands for; it is published (once, below) under that id.
                let standing = try client.deduplicated(envelope, by: dedupeKey, within: dedupeWindow)
                envelope.id = standing.envelope.id
                deduplicated = !standing.first
                if deduplicated {
                    Terminal.writeError(
                        "\(Self.tool): a submission with key '\(dedupeKey)' came within the last \(JSONValue.formatNumber(dedupeWindow)) s: its intent is \(standing.envelope.id)"
                    )
                }
            }
            let id = envelope.id
            publishing = id
            guard wait else {
                try client.submit(envelope)
                let state: JSONValue = (envelope.dueAt ?? 0) > Date().timeIntervalSince1970 ? "scheduled" : "queued"
                var accepted: [String: JSONValue] = ["id": .string(id), "type": .string(envelope.type), "state": state]
                if dedupeKey != nil { accepted["deduplicated"] = .bool(deduplicated) }
                Terminal.write(json ? JSONValue.object(accepted).jsonString : id)
                return ExitCode.success
            }
            let json = self.json
            let status = try client.submit(envelope, waitingUpTo: timeout, asOperator: asOperator) {
                submitted = id
                if !json { Terminal.write(id) }
            }
            if json {
                Terminal.write(
                    // No status read in time: its state is not known (the store may not even hold it yet), and is not made up.
                    status.map { StatusReport.jsonString($0) }
                        ?? JSONValue.object(["id": .string(id), "type": .string(envelope.type), "state": .null]).jsonString)
            } else {
                Terminal.write(status.map { StatusReport.human($0, id: id) } ?? "\(id): no status recorded within \(timeout) s")
            }
            guard let status else { return ExitCode.notTerminal }
            if IntentClient.isRefusal(status) {
                return Terminal.fail(Self.tool, "refused: \(status.response?.message ?? "")", code: ExitCode.forbidden)
            }
            return StatusReport.exitCode(for: status)
        } catch {
            if let submitted {
                let reason = "\(submitted) was submitted, but its status could not be followed: \(error.message)"
                return Terminal.fail(Self.tool, reason, code: ExitCode.of(error))
            }
            if let publishing, error.kind == .timeout || error.kind == .unavailable {
                // The broker may have taken it before the failure: the same id, given again, never runs it twice.
                let reason =
                    "\(error.message); \(publishing) may have been submitted: look it up (intent-status \(publishing)) or submit again with --id \(publishing)"
                return Terminal.fail(Self.tool, reason, code: ExitCode.of(error))
            }
            return Terminal.fail(Self.tool, error.message, code: ExitCode.of(error))
        }
    }
}
