import Foundation
import IntentAMQP
import IntentKit

/// The deployment files and what the code says they must agree with, for DeployFilesTests.
enum Deploy {
    static let units = ["intent-worker.service", "intent-recorder.service", "intent-worker@.service"]

    /// The Debian runtime package of each -dev package Package.swift names as a provider.
    static let runtimePackage = ["librabbitmq-dev": "librabbitmq4", "libsqlite3-dev": "libsqlite3-0", "libmicrohttpd-dev": "libmicrohttpd12"]

    /// The service keys of the compose specification this project may use; a typo is not one.
    static let composeServiceKeys: Set<String> = [
        "build", "cap_add", "cap_drop", "command", "configs", "container_name", "depends_on", "deploy", "entrypoint",
        "env_file", "environment", "expose", "extra_hosts", "healthcheck", "hostname", "image", "init", "labels",
        "logging", "networks", "ports", "profiles", "pull_policy", "read_only", "restart", "secrets", "security_opt",
        "stop_grace_period", "stop_signal", "tmpfs", "ulimits", "user", "volumes", "working_dir",
    ]

    static func path(_ relative: String) -> String {
        Paths.repository.appendingPathComponent(relative).standardizedFileURL.path
    }

    static func read(_ relative: String) throws -> String {
        try String(contentsOfFile: path(relative), encoding: .utf8)
    }

    // MARK: compose.yaml

    static func compose() throws -> YAMLNode {
        try YAMLNode.parse(try read("compose.yaml"))
    }

    static func service(_ name: String) throws -> YAMLNode? {
        try compose()["services"]?[name]
    }

    /// What compose makes of `${NAME:-default}` with NAME unset, and of `$$`.
    static func interpolated(_ text: String) -> String {
        var result = text
        while let match = result.firstMatch(of: try! Regex(#"\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}"#)) {
            result.replaceSubrange(match.range, with: match.output[1].substring ?? "")
        }
        return result.replacingOccurrences(of: "$$", with: "$")
    }

    /// "30s", "1m30s", "2min", "500ms" or a bare number of seconds.
    static func seconds(_ duration: String) -> Double? {
        if let plain = Double(duration) { return plain }
        let unit = try! Regex(#"([0-9]+(?:\.[0-9]+)?)(ms|us|min|h|m|s)"#)
        var total = 0.0
        var covered = 0
        for match in duration.matches(of: unit) {
            guard let value = match.output[1].substring.flatMap({ Double($0) }), let name = match.output[2].substring else { return nil }
            total += value * (["ms": 0.001, "us": 0.000_001, "min": 60, "h": 3600, "m": 60, "s": 1][String(name)] ?? 0)
            covered += match.output[0].substring?.count ?? 0
        }
        return covered == duration.count && covered > 0 ? total : nil
    }

    // MARK: Package.swift and the sources

    /// The -dev packages of C targets that include the headers themselves, with no provider in Package.swift:
    /// rabbitmq-c's, whose library CRabbitMQ loads when the first connection opens.
    static let headersIncluded = ["librabbitmq-dev"]

    static func aptProviders() throws -> Set<String> {
        let manifest = try read("Package.swift")
        var providers = Set(headersIncluded)
        for list in manifest.matches(of: try Regex(#"\.apt\(\[([^\]]*)\]\)"#)) {
            let inner = String(list.output[1].substring ?? "")
            providers.formUnion(inner.matches(of: try Regex(#""([^"]+)""#)).compactMap { $0.output[1].substring.map(String.init) })
        }
        return providers
    }

    static func packageExecutables() throws -> Set<String> {
        Set(
            try read("Package.swift").matches(of: try Regex(#"\.executable\(\s*name:\s*"([^"]+)""#))
                .compactMap { $0.output[1].substring.map(String.init) })
    }

    /// intent-worker's `--grace` default, read from its option parsing.
    static func defaultGrace() throws -> Double {
        let source = try read("Sources/IntentQueue/WorkerCommand.swift")
        guard let match = source.firstMatch(of: try Regex(#"seconds\("--grace"\)\s*\?\?\s*([0-9.]+)"#)),
            let value = match.output[1].substring.flatMap({ Double($0) })
        else { throw LookupFailure(what: "the --grace default in WorkerCommand.swift") }
        return value
    }

    static func grace(in command: [String]) -> Double? {
        guard let flag = command.firstIndex(of: "--grace"), flag + 1 < command.count else { return nil }
        return Double(command[flag + 1])
    }

    /// The intent types the Hairdressers app registers, which the example workers bind.
    static func servedTypes() throws -> [String] {
        let folder = path("Sources/Hairdressers")
        var types: [String] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: folder).sorted() where file.hasSuffix(".swift") {
            let source = try String(contentsOfFile: folder + "/" + file, encoding: .utf8)
            types += source.matches(of: try Regex(#"static let typeName = "([^"]+)""#)).compactMap { $0.output[1].substring.map(String.init) }
        }
        return types
    }

    // MARK: deploy/Dockerfile

    static func dockerfile() throws -> Dockerfile {
        try Dockerfile(try read("deploy/Dockerfile"))
    }

    /// The products the build stage builds (`--product NAME`).
    static func dockerfileProducts() throws -> Set<String> {
        guard let build = try dockerfile().stages.first else { return [] }
        let runs = build.arguments(of: "RUN").joined(separator: "\n")
        return Set(runs.matches(of: try Regex(#"--product\s+([A-Za-z0-9_-]+)"#)).compactMap { $0.output[1].substring.map(String.init) })
    }

    // MARK: deploy/definitions.json

    static func definitions() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path("deploy/definitions.json")))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw LookupFailure(what: "a JSON object in deploy/definitions.json")
        }
        return object
    }

    static func definitionUsers() throws -> [String] {
        (try definitions()["users"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }

    enum Argument: Hashable, CustomStringConvertible {
        case string(String)
        case integer(Int64)

        var description: String {
            switch self {
            case .string(let text): "\"\(text)\""
            case .integer(let number): "\(number)"
            }
        }
    }

    struct Binding: Hashable, CustomStringConvertible {
        var source: String
        var destination: String
        var key: String
        var arguments: [String: Argument] = [:]

        var description: String { "\(source) → \(destination) '\(key)' \(arguments)" }
    }

    struct ExpectedTopology {
        var exchanges: [String: String] = [:]
        var queues: [String: [String: Argument]] = [:]
        var bindings: Set<Binding> = []
    }

    /// What `Topology.declareWork` (which includes `declareLedger`, `declareRetries` and
    /// `declareCancellations`) declares
    /// for the Hairdressers types, with the names and numbers of `Topology()`.
    static func expectedTopology() throws -> ExpectedTopology {
        let topology = Topology()
        var expected = ExpectedTopology()
        expected.exchanges = [
            topology.intentsExchange: "topic", topology.statusExchange: "topic",
            topology.deadLetterExchange: "fanout", topology.retryExchange: "headers",
            topology.cancelExchange: "fanout", topology.statusRequestExchange: "direct",
        ]
        let quorum: [String: Argument] = ["x-queue-type": .string("quorum")]
        expected.queues[topology.ledgerQueue] = quorum
        expected.queues[topology.deadLetterQueue] = quorum
        for queue in [topology.workQueue, topology.highPriorityQueue] {
            expected.queues[queue] = quorum.merging([
                "x-delivery-limit": .integer(topology.deliveryLimit),
                "x-dead-letter-exchange": .string(topology.deadLetterExchange),
            ]) { $1 }
        }
        expected.queues[topology.cancelStream] = ["x-queue-type": .string("stream"), "x-max-age": .string("7D")]
        expected.bindings = [
            Binding(source: topology.statusExchange, destination: topology.ledgerQueue, key: "#"),
            Binding(source: topology.deadLetterExchange, destination: topology.ledgerQueue, key: ""),
            Binding(source: topology.deadLetterExchange, destination: topology.deadLetterQueue, key: ""),
            Binding(source: topology.cancelExchange, destination: topology.cancelStream, key: ""),
        ]
        for delay in Set(topology.retryDelays) {
            let retry = topology.retryQueue(forDelay: Double(delay))
            expected.queues[retry.queue] = [
                "x-queue-type": .string("quorum"),
                "x-message-ttl": .integer(Int64(retry.seconds) * 1000),
                "x-dead-letter-exchange": .string(topology.intentsExchange),
            ]
            expected.bindings.insert(
                Binding(
                    source: topology.retryExchange, destination: retry.queue, key: "",
                    arguments: ["x-match": .string("all-with-x"), Topology.retryBucketHeader: .string(retry.bucket)]))
        }
        for type in try servedTypes() {
            expected.bindings.insert(Binding(source: topology.intentsExchange, destination: topology.workQueue, key: type))
            expected.bindings.insert(Binding(source: topology.intentsExchange, destination: topology.ledgerQueue, key: type))
            let high = type + IntentPriority.highSuffix
            expected.bindings.insert(Binding(source: topology.intentsExchange, destination: topology.highPriorityQueue, key: high))
            expected.bindings.insert(Binding(source: topology.intentsExchange, destination: topology.ledgerQueue, key: high))
        }
        return expected
    }

    /// A definitions `arguments` object, telling numbers from strings as the broker does.
    static func arguments(_ value: Any?) throws -> [String: Argument] {
        guard let object = value as? [String: Any] else { throw LookupFailure(what: "an arguments object, found \(value ?? "nothing")") }
        var result: [String: Argument] = [:]
        for (key, value) in object {
            if let text = value as? String {
                result[key] = .string(text)
            } else if let number = value as? NSNumber, number.doubleValue == Double(number.int64Value) {
                result[key] = .integer(number.int64Value)
            } else {
                throw LookupFailure(what: "a string or integer for argument \(key), found \(value)")
            }
        }
        return result
    }

    // MARK: the machine

    /// Whether `.gitignore` rules (basename patterns, later rules winning, `!` re-including) ignore `name`.
    static func gitIgnores(_ name: String, rules: [String]) -> Bool {
        var ignored = false
        for rule in rules {
            let negated = rule.hasPrefix("!")
            let pattern = negated ? String(rule.dropFirst()) : rule
            if fnmatch(pattern, name, 0) == 0 { ignored = !negated }
        }
        return ignored
    }

    static var pythonHasYAML: Bool { succeeds(["python3", "-c", "import yaml"]) }

    static var hasOpenSSL: Bool { succeeds(["openssl", "version"]) && succeeds(["bash", "--version"]) }

    private static func succeeds(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    struct LookupFailure: Error, CustomStringConvertible {
        var what: String
        var description: String { "cannot find \(what)" }
    }
}
