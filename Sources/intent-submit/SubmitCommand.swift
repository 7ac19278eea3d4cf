import Foundation
import IntentAMQP
import IntentCLI
import IntentKit
import IntentStore

/// `intent-submit`: publishes one intent and prints its id once the broker confirmed it.
struct SubmitCommand {
    static let tool = "intent-submit"
    static let usage = "intent-submit <Type> [name=value ...] [--parameters JSON] [--id ID] [--group G] [--wait [--timeout S]] [--json] | --answer ID name=value... | --confirm ID | --deny ID"
    static let help = """
        Submit an intent to IntentQueue and print its id once the broker has confirmed it.

        Usage: \(usage)

        Arguments:
          <Type>              the intent type, e.g. SendMessage (must be served by a running worker)
          name=value          a parameter; a list is written with commas: recipients=Alice,Bob

        Answering an intent that waits in needsInput (read from INTENT_STATUS_DB):
          --answer ID name=value...   give the asked parameters; the rest stay as they were; resolution runs again
          --confirm ID                confirm what it asks to confirm (a value, or the whole intent)
          --as-operator               answer (confirm, deny) another owner's intent; the worker accepts it
                                      only from a broker user it knows as an operator (--operator-user)
          --deny ID                   refuse it: the intent ends failure/denied (unless a confirmation
                                      was handled first: a worker decides, and --wait shows which)

        Options:
          --parameters JSON   parameters as one JSON object; name=value pairs override its keys
          --id ID             the intent id (default: a new UUID); resubmitting an id never repeats its effects
          --group G           the conversation it belongs to (intent-status delete --group G removes them together)
          --wait              follow the intent until it ends or needs input
          --timeout S         seconds --wait waits (default 30)
          --json              print JSON instead of text
          -h, --help          show this help

        Environment:
          INTENT_BROKER_URL   amqp://user:password@host:port/vhost (default \(BrokerURL.defaultURL));
                              the nodes of a cluster as several URLs separated by commas
          INTENT_BROKER_URL_FILE  a file (mode 600) holding the URL instead
          INTENT_STATUS_DB    the status store read by --wait

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
            options: ["--id", "--parameters", "--timeout", "--group", "--answer", "--confirm", "--deny"])
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
            for excluded in ["--id", "--group"] where arguments.options[excluded] != nil {
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
        let id = conversation.first?.1 ?? givenID ?? UUID().uuidString.lowercased()
        guard !id.isEmpty, id.utf8.count <= 255, !id.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw UsageError("--id must be 1 to 255 bytes with no spaces")
        }
        let timeout = try arguments.seconds("--timeout")
        if timeout != nil, !arguments.has("--wait") { throw UsageError("--timeout only applies with --wait") }
        let group = try arguments.value("--group")
        if let group, group.isEmpty || group.utf8.count > 255 { throw UsageError("--group must be 1 to 255 bytes") }
        return SubmitCommand(
            mode: mode, type: type, parameters: parameters, id: id, group: group, wait: arguments.has("--wait"),
            timeout: timeout ?? 30, json: arguments.has("--json"), asOperator: arguments.has("--as-operator"), lenient: !pairs.isEmpty)
    }

    func run() -> Int32 {
        let url: BrokerURL
        do {
            url = try Environment.brokerURL()
        } catch {
            return Terminal.fail(Self.tool, error.description, code: ExitCode.usage)
        }
        var envelope = IntentEnvelope(
            id: id, type: type, parameters: parameters, submittedAt: Date().timeIntervalSince1970, group: group, lenientParameters: lenient)
        if mode != .submit {
            switch conversationStep(me: url.user) {
            case .failure(let code, let reason): return Terminal.fail(Self.tool, reason, code: code)
            case .envelope(let next): envelope = next
            }
        }
        // For --wait, the events are followed from before the submission: a fast
        // handler's outcome cannot be published before anyone listens.
        let feed = wait ? StatusWaiter.feed(url: url, timeout: timeout) : nil
        let submittedAt = Date().timeIntervalSince1970
        defer { feed?.close() }
        do {
            let publisher = try IntentPublisher(url: url)
            defer { publisher.close() }
            try publisher.submit(envelope)
        } catch {
            switch error.kind {
            case .unroutable: return Terminal.fail(Self.tool, error.detail, code: ExitCode.refused)
            case .configuration: return Terminal.fail(Self.tool, error.description, code: ExitCode.usage)
            default: return Terminal.fail(Self.tool, "broker unreachable: \(error)", code: ExitCode.unavailable)
            }
        }
        let type = envelope.type
        guard wait else {
            Terminal.write(json ? JSONValue.object(["id": .string(id), "type": .string(type), "state": "queued"]).jsonString : id)
            return ExitCode.success
        }
        if !json { Terminal.write(id) }
        do {
            // An answer waits for its own turn's outcome, not the question it answered.
            let minimumTurn = envelope.turn
            let me = url.user
            let asOperator = self.asOperator
            let type = envelope.type
            let status = try StatusReport.read(
                id: id, storePath: Environment.statusStorePath(), timeout: timeout, brokerURL: url, feed: feed,
                refusals: (me, submittedAt)
            ) { status in
                // Another owner's intent under this id is not this submission's answer: its refusal is.
                if !asOperator, let owner = status.owner, owner != me, !StatusReport.isRefusal(status) { return false }
                // Nor is an intent of another type under this id: the worker refuses this one.
                if status.type != type, !StatusReport.isRefusal(status) { return false }
                return status.state.isTerminal || ((status.turn ?? 0) >= minimumTurn && status.state == .needsInput)
            }
            if json {
                Terminal.write(status.map { StatusReport.jsonString($0) }
                    ?? JSONValue.object(["id": .string(id), "type": .string(type), "state": "queued"]).jsonString)
            } else {
                Terminal.write(status.map { StatusReport.human($0, id: id) } ?? "\(id): no status recorded within \(timeout) s")
            }
            guard let status else { return ExitCode.notTerminal }
            if StatusReport.isRefusal(status) {
                return Terminal.fail(Self.tool, "refused: \(status.response?.message ?? "")", code: ExitCode.forbidden)
            }
            return StatusReport.exitCode(for: status)
        } catch {
            return Terminal.fail(Self.tool, "status store unreachable: \(error)", code: ExitCode.unavailable)
        }
    }
}


extension SubmitCommand {
    enum Step {
        case envelope(IntentEnvelope)
        case failure(Int32, String)
    }

    /// For --answer, --confirm and --deny: the next turn of a waiting intent,
    /// built from what the status store knows about it.
    func conversationStep(me: String) -> Step {
        let status: IntentStatus
        do {
            guard let found = try StatusStore(readingFrom: Environment.statusStorePath()).status(id: id) else {
                return .failure(ExitCode.unknown, "\(id) is unknown to the status store")
            }
            status = found
        } catch {
            return .failure(ExitCode.unavailable, "status store unreachable: \(error)")
        }
        guard status.state == .needsInput else {
            return .failure(ExitCode.refused, "\(id) is not waiting for an answer: it is \(status.state.rawValue)")
        }
        if let owner = status.owner, owner != me, !asOperator {
            return .failure(ExitCode.forbidden, "\(id) is \(owner)'s intent: only its owner (or an operator, with --as-operator) may answer it")
        }
        let asked = status.resolutions ?? []
        let confirmable = asked.filter { if case .confirmationRequired = $0.result { return true } else { return false } }.map(\.parameter)
        let turn = status.turn ?? 0
        switch mode {
        case .deny:
            guard !confirmable.isEmpty else {
                return .failure(ExitCode.refused, "\(id) is not asking for a confirmation; answer it with --answer")
            }
            // A request a worker decides: denied, unless a confirmation got there first.
            var denial = IntentEnvelope.request(.deny, id: id, type: status.type, turn: turn + 1)
            denial.group = status.group
            return .envelope(denial)
        case .confirm:
            guard !confirmable.isEmpty else {
                return .failure(ExitCode.refused, "\(id) is not asking for a confirmation; answer it with --answer")
            }
            return .envelope(nextTurn(of: status, answers: [:], confirming: confirmable))
        case .answer:
            let known = Set(status.parameters?.objectValue?.keys.map { $0 } ?? []).union(asked.map(\.parameter))
            if let unknown = parameters.keys.first(where: { !known.contains($0) }) {
                return .failure(ExitCode.usage, "\(status.type) has no parameter '\(unknown)' (it knows \(known.sorted().joined(separator: ", ")))")
            }
            return .envelope(nextTurn(of: status, answers: parameters, confirming: []))
        case .submit:
            return .failure(ExitCode.software, "not a conversation step")
        }
    }

    private func nextTurn(of status: IntentStatus, answers: [String: JSONValue], confirming: [String]) -> IntentEnvelope {
        var merged = status.parameters?.objectValue ?? [:]
        for (name, value) in answers { merged[name] = value }
        let confirmed = Array(Set((status.confirmed ?? []) + confirming)).sorted()
        // The merged parameters may mix the submission's with strings typed now.
        return IntentEnvelope(
            id: id, type: status.type, parameters: merged, submittedAt: Date().timeIntervalSince1970,
            turn: (status.turn ?? 0) + 1, answers: answers, confirmed: confirmed.isEmpty ? nil : confirmed, group: status.group,
            lenientParameters: true)
    }
}
