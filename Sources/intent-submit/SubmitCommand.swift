import Foundation
import IntentAMQP
import IntentCLI
import IntentKit

/// `intent-submit`: publishes one intent and prints its id once the broker confirmed it.
struct SubmitCommand {
    static let tool = "intent-submit"
    static let usage = "intent-submit <Type> [name=value ...] [--parameters JSON] [--id ID] [--wait [--timeout S]] [--json]"
    static let help = """
        Submit an intent to IntentQueue and print its id once the broker has confirmed it.

        Usage: \(usage)

        Arguments:
          <Type>              the intent type, e.g. SendMessage (must be served by a running worker)
          name=value          a parameter; a list is written with commas: recipients=Alice,Bob

        Options:
          --parameters JSON   parameters as one JSON object; name=value pairs override its keys
          --id ID             the intent id (default: a new UUID); resubmitting an id never repeats its effects
          --wait              follow the intent until it ends or needs input
          --timeout S         seconds --wait waits (default 30)
          --json              print JSON instead of text
          -h, --help          show this help

        Environment:
          INTENT_BROKER_URL   amqp://user:password@host:port/vhost (default \(BrokerURL.defaultURL))
          INTENT_BROKER_URL_FILE  a file (mode 600) holding the URL instead
          INTENT_STATUS_DB    the status store read by --wait

        Exit codes: 0 submitted (with --wait: success), 1 failure or canceled, 2 no worker serves the type,
        3 not terminal when --wait ended (needsInput, or timed out), 64 usage error, 69 broker unreachable.
        """

    var type: String
    var parameters: [String: JSONValue]
    var id: String
    var wait: Bool
    var timeout: Double
    var json: Bool

    /// Parses and validates; `nil` means `--help` was asked for.
    static func parse(_ words: [String]) throws(UsageError) -> SubmitCommand? {
        let arguments = try Arguments(
            words, flags: ["--help", "--wait", "--json"], options: ["--id", "--parameters", "--timeout"])
        if arguments.has("--help") { return nil }
        guard let type = arguments.positionals.first else { throw UsageError("missing the intent type") }
        guard !type.contains("="), type.utf8.count <= 255,
              type.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
        else {
            throw UsageError("'\(type)' is not an intent type name (letters, digits, '_' and '-' only)")
        }
        var parameters: [String: JSONValue] = [:]
        if let text = try arguments.value("--parameters") {
            guard case .object(let object)? = try? JSONValue.parse(Data(text.utf8)) else {
                throw UsageError("--parameters must be a JSON object, such as '{\"recipients\":[\"Alice\"]}'")
            }
            parameters = object
        }
        for pair in arguments.positionals.dropFirst() {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError("'\(pair)' is not a name=value parameter")
            }
            parameters[String(pair[..<equals])] = .string(String(pair[pair.index(after: equals)...]))
        }
        let id = try arguments.value("--id") ?? UUID().uuidString.lowercased()
        guard !id.isEmpty, id.utf8.count <= 255, !id.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw UsageError("--id must be 1 to 255 bytes with no spaces")
        }
        let timeout = try arguments.seconds("--timeout")
        if timeout != nil, !arguments.has("--wait") { throw UsageError("--timeout only applies with --wait") }
        return SubmitCommand(
            type: type, parameters: parameters, id: id, wait: arguments.has("--wait"), timeout: timeout ?? 30,
            json: arguments.has("--json"))
    }

    func run() -> Int32 {
        let url: BrokerURL
        do {
            url = try Environment.brokerURL()
        } catch {
            return Terminal.fail(Self.tool, error.description, code: ExitCode.usage)
        }
        let envelope = IntentEnvelope(id: id, type: type, parameters: parameters, submittedAt: Date().timeIntervalSince1970)
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
        guard wait else {
            Terminal.write(json ? JSONValue.object(["id": .string(id), "type": .string(type), "state": "queued"]).jsonString : id)
            return ExitCode.success
        }
        if !json { Terminal.write(id) }
        do {
            let status = try StatusReport.read(id: id, storePath: Environment.statusStorePath(), timeout: timeout)
            if json {
                Terminal.write(status.map { StatusReport.jsonString($0) }
                    ?? JSONValue.object(["id": .string(id), "type": .string(type), "state": "queued"]).jsonString)
            } else {
                Terminal.write(status.map { StatusReport.human($0, id: id) } ?? "\(id): no status recorded within \(timeout) s")
            }
            guard let status else { return ExitCode.notTerminal }
            return StatusReport.exitCode(for: status)
        } catch {
            return Terminal.fail(Self.tool, "status store unreachable: \(error)", code: ExitCode.unavailable)
        }
    }
}
