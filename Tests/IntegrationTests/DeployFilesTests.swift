import Foundation
import IntentAMQP
import Testing

/// compose.yaml, deploy/Dockerfile, deploy/definitions.json and the systemd
/// units, checked without Docker or a broker: they parse, name what the code
/// names, and agree with the code's defaults (Package.swift, Topology, BrokerURL,
/// intent-worker's options).
@Suite struct DeployFilesTests {
    // MARK: compose.yaml

    @Test func composeParsesWithTheThreeServices() throws {
        let compose = try Deploy.compose()
        let services = try #require(compose["services"]?.entries, "compose.yaml has no services mapping")
        #expect(Set(services.keys).isSuperset(of: ["rabbitmq", "intent-worker", "intent-recorder"]), "services: \(services.keys.sorted())")

        let topLevel: Set<String> = ["name", "services", "volumes", "secrets", "configs", "networks"]
        #expect(Set(try #require(compose.entries).keys).isSubset(of: topLevel))
        for (name, service) in services {
            let keys = Set(try #require(service.entries, "service \(name) is not a mapping").keys)
            #expect(
                keys.isSubset(of: Deploy.composeServiceKeys),
                "service \(name) has unknown keys \(keys.subtracting(Deploy.composeServiceKeys).sorted())")
            if let restart = service["restart"]?.string {
                #expect(["no", "always", "on-failure", "unless-stopped"].contains(restart), "\(name): restart \(restart)")
            }
            for (dependency, condition) in service["depends_on"]?.entries ?? [:] {
                #expect(services[dependency] != nil, "\(name) depends on a missing service \(dependency)")
                let kind = condition["condition"]?.string ?? ""
                #expect(
                    ["service_started", "service_healthy", "service_completed_successfully"].contains(kind),
                    "\(name) → \(dependency): condition '\(kind)'")
            }
            if let healthcheck = service["healthcheck"]?.entries {
                #expect(Set(healthcheck.keys).isSubset(of: ["test", "interval", "timeout", "retries", "start_period", "start_interval", "disable"]))
                for key in ["interval", "timeout", "start_period"] {
                    if let duration = healthcheck[key]?.string { #expect(Deploy.seconds(duration) != nil, "\(name): \(key) '\(duration)'") }
                }
            }
            if let grace = service["stop_grace_period"]?.string { #expect(Deploy.seconds(grace) != nil, "\(name): stop_grace_period '\(grace)'") }
        }
    }

    @Test(.enabled(if: Deploy.pythonHasYAML, "needs python3 with PyYAML"))
    func composeParsesTheSameWithPyYAML() async throws {
        let ours = try Deploy.compose()
        let script = """
            import json, sys, yaml
            def plain(value):
                if isinstance(value, dict): return {str(k): plain(v) for k, v in value.items()}
                if isinstance(value, list): return [plain(v) for v in value]
                if value is None: return ""
                if isinstance(value, bool): return "true" if value else "false"
                return str(value)
            print(json.dumps(plain(yaml.safe_load(open(sys.argv[1]))), sort_keys=True))
            """
        let result = try await run("/usr/bin/env", ["python3", "-c", script, Deploy.path("compose.yaml")], timeout: 30)
        #expect(result.exitCode == 0, "\(result)")
        let theirs = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
        let theirsText = String(decoding: try JSONSerialization.data(withJSONObject: theirs, options: .sortedKeys), as: UTF8.self)
        #expect(ours.description == theirsText)
    }

    @Test(arguments: [
        ("services:\n\tworker: {}\n", "tabs"),
        ("services:\n  a: 1\n   b: 2\n", "misaligned key"),
        ("services:\n  a: 1\n  a: 2\n", "duplicate key"),
        ("name: \"open\n", "unterminated quote"),
        ("x: &anchor 1\ny: *anchor\n", "anchor"),
        ("ports: [\"a\", \"b\"\n", "unterminated flow"),
        ("a: b: c\n", "mapping value in a plain scalar"),
    ])
    func theComposeParserRefusesWhatItCannotRead(yaml: String, what: String) {
        #expect(throws: YAMLError.self, "\(what)") { try YAMLNode.parse(yaml) }
    }

    @Test func theComposeParserReadsBlockScalarsAndItemMappings() throws {
        let node = try YAMLNode.parse(
            """
            a:
              - |
                line one
                  indented
              - key: value
                other: 'it''s'
            b: >-
              folded
              text
            c: ["x", y]  # comment
            """)
        #expect(node["a"]?.items?.first?.string == "line one\n  indented\n")
        #expect(node["a"]?.items?.last?["other"]?.string == "it's")
        #expect(node["b"]?.string == "folded text")
        #expect(node["c"]?.strings == ["x", "y"])
    }

    @Test func theWorkerScales() throws {
        let worker = try #require(try Deploy.service("intent-worker"))
        #expect(worker["container_name"] == nil, "a container name forbids --scale")
        #expect(worker["ports"] == nil, "a fixed host port forbids --scale")
        #expect(worker["hostname"] == nil)
        let command = try #require(worker["command"]?.strings)
        #expect(command.first == "intent-worker")
        #expect(!command.contains("--with-recorder") && !command.contains("--recorder-only"), "the recorder must run once, not in every worker")
        let recorder = try #require(try Deploy.service("intent-recorder"))
        #expect(recorder["command"]?.strings?.prefix(2) == ["intent-worker", "--recorder-only"])
    }

    @Test func servicesBuiltFromTheDockerfileUseIt() throws {
        let services = try #require(try Deploy.compose()["services"]?.entries)
        let products = try Deploy.dockerfileProducts()
        var built: [String] = []
        for (name, service) in services {
            guard let build = service["build"] else { continue }
            built.append(name)
            let context = build["context"]?.string ?? build.string ?? "."
            let dockerfile = build["dockerfile"]?.string ?? "Dockerfile"
            let path = Paths.repository.appendingPathComponent(context).appendingPathComponent(dockerfile).standardizedFileURL.path
            #expect(path == Deploy.path("deploy/Dockerfile"), "\(name) builds \(path)")
            #expect(FileManager.default.fileExists(atPath: path), "\(name): \(path) is missing")
            let executable = try #require(service["command"]?.strings?.first, "\(name) has no command")
            #expect(products.contains(executable), "\(name) runs \(executable), which deploy/Dockerfile does not build (\(products.sorted()))")
        }
        #expect(Set(built).isSuperset(of: ["intent-worker", "intent-recorder"]), "built: \(built)")
        let images = Set(built.compactMap { services[$0]?["image"]?.string })
        #expect(images.count == 1, "the services built from the Dockerfile should share one image: \(images)")
    }

    @Test func secretsComeFromGitIgnoredFilesNotFromTheComposeFile() throws {
        let compose = try Deploy.compose()
        let text = try Deploy.read("compose.yaml")
        let declared = try #require(compose["secrets"]?.entries, "no top-level secrets")
        let ignoreRules = try Deploy.read("deploy/secrets/.gitignore").split(separator: "\n").map(String.init)
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
        let readme = try Deploy.read("deploy/secrets/README.md")
        for (name, secret) in declared {
            let file = try #require(secret["file"]?.string, "secret \(name) has no file")
            #expect(file.hasPrefix("./deploy/secrets/"), "secret \(name) is read from \(file)")
            let fileName = URL(fileURLWithPath: file).lastPathComponent
            #expect(Deploy.gitIgnores(fileName, rules: ignoreRules), "deploy/secrets/.gitignore does not ignore \(fileName)")
            #expect(readme.contains(fileName), "deploy/secrets/README.md does not say how to make \(fileName)")
        }
        for (service, definition) in try #require(compose["services"]?.entries) {
            let used = (definition["secrets"]?.items ?? []).compactMap { $0.string ?? $0["source"]?.string }
            for name in used { #expect(declared[name] != nil, "\(service) uses an undeclared secret \(name)") }
            let environment = definition["environment"]?.entries ?? [:]
            #expect(environment["INTENT_BROKER_URL"] == nil, "\(service) puts the broker URL in the compose file")
            if let file = environment["INTENT_BROKER_URL_FILE"]?.string {
                #expect(used.map { "/run/secrets/\($0)" }.contains(file), "\(service) reads \(file), which is not one of its secrets")
            } else if definition["build"] != nil {
                Issue.record("\(service) runs an IntentQueue tool without INTENT_BROKER_URL_FILE")
            }
        }
        #expect(text.firstMatch(of: try Regex(#"amqps?://[^\s/@:]*:[^\s/@]+@"#)) == nil, "compose.yaml holds a broker URL with a password")
        #expect(text.range(of: "RABBITMQ_DEFAULT_PASS") == nil)

        // The broker renders a hash for every user of the definitions from <user>.password.
        let brokerSecrets = Set((try Deploy.service("rabbitmq")?["secrets"]?.items ?? []).compactMap(\.string))
        for user in try Deploy.definitionUsers() {
            #expect(brokerSecrets.contains("\(user).password"), "the rabbitmq service lacks the secret \(user).password")
        }
    }

    @Test func theBrokerIsPublishedOnLoopbackOnlyAtTheCodesPort() throws {
        let port = try BrokerURL(BrokerURL.defaultURL).port
        let services = try #require(try Deploy.compose()["services"]?.entries)
        let published = (services["rabbitmq"]?["ports"]?.items ?? []).compactMap(\.string)
        #expect(!published.isEmpty, "the broker publishes no port")
        var containerPorts: [String: String] = [:]
        for mapping in published {
            let parts = Deploy.interpolated(mapping).split(separator: ":").map(String.init)
            #expect(parts.count == 3 && parts[0] == "127.0.0.1", "\(mapping) is not bound to 127.0.0.1")
            if parts.count == 3 { containerPorts[parts[2]] = parts[1] }
        }
        #expect(containerPorts["\(port)"] == "\(port)", "AMQP: \(published) vs BrokerURL's default port \(port)")
        #expect(containerPorts["15672"] != nil, "the management UI is not published")
        // The gateway serves HTTP, on the host's loopback only.
        let gateway = (services["intent-gateway"]?["ports"]?.items ?? []).compactMap(\.string).map(Deploy.interpolated)
        #expect(gateway == ["127.0.0.1:8080:8080"], "the gateway publishes \(gateway)")
        for (name, service) in services where name != "rabbitmq" && name != "intent-gateway" {
            #expect(service["ports"] == nil, "\(name) publishes ports")
        }
    }

    @Test func theContainerBrokerConfigIsDeployRabbitmqConfListeningOnTheCodesPort() throws {
        let port = try BrokerURL(BrokerURL.defaultURL).port
        let rabbitmq = try #require(try Deploy.service("rabbitmq"))
        let script = try #require(rabbitmq["command"]?.strings?.joined(separator: "\n"))
        // The command rewrites the loopback listener of deploy/rabbitmq.conf: it must find exactly that line.
        #expect(script.contains("s/^listeners\\.tcp\\.default *=.*/listeners.tcp.default = \(port)/"))
        let conf = try Deploy.read("deploy/rabbitmq.conf").split(separator: "\n", omittingEmptySubsequences: false)
        let listeners = conf.filter { $0.firstMatch(of: try! Regex(#"^listeners\.tcp\.default *="#)) != nil }
        #expect(listeners.count == 1, "deploy/rabbitmq.conf has \(listeners.count) listeners.tcp.default lines")
        let rendered = conf.filter { !listeners.contains($0) }.joined(separator: "\n")
        #expect(rendered.firstMatch(of: try Regex(#"@[A-Z_]+@"#)) == nil, "a placeholder the container never fills: \(rendered)")
        #expect(script.contains("load_definitions = "), "the broker does not load the definitions")
        // Every file the command uses is mounted read-only from the repository.
        let mounts = (rabbitmq["volumes"]?.items ?? []).compactMap(\.string)
        for file in ["deploy/rabbitmq.conf", "deploy/definitions.json", "deploy/render-definitions.sh"] {
            let mount = mounts.first { $0.hasPrefix("./\(file):") }
            let target = try #require(mount?.split(separator: ":").dropFirst().first.map(String.init), "\(file) is not mounted")
            #expect(mount?.hasSuffix(":ro") == true, "\(file) is mounted writable")
            #expect(script.contains(target), "the command never uses \(target)")
            #expect(FileManager.default.fileExists(atPath: Deploy.path(file)))
        }
        #expect(rabbitmq["hostname"] != nil, "without a fixed hostname the node name, and so its data, changes with each container")
        #expect(mounts.contains { $0.hasSuffix(":/var/lib/rabbitmq") && !$0.hasPrefix(".") }, "the broker's data is not on a named volume")
    }

    @Test func healthChecksGateTheStart() throws {
        let port = try BrokerURL(BrokerURL.defaultURL).port
        let services = try #require(try Deploy.compose()["services"]?.entries)
        let brokerCheck = try #require(services["rabbitmq"]?["healthcheck"]?["test"]?.strings)
        #expect(brokerCheck.joined(separator: " ").contains("rabbitmq-diagnostics -q ping"), "\(brokerCheck)")
        #expect(services["rabbitmq"]?["restart"]?.string == "unless-stopped")
        for name in ["intent-worker", "intent-recorder"] {
            let service = try #require(services[name])
            let check = try #require(service["healthcheck"]?["test"]?.strings, "\(name) has no health check")
            #expect(check.first == "CMD-SHELL" && check.count == 2, "\(name): \(check)")
            let shell = check.last ?? ""
            #expect(shell.contains("kill -0 1"), "\(name): the check does not ask whether the process is alive")
            // /proc/net/tcp writes the remote port in upper-case hex, then the state (01 = established).
            #expect(shell.contains(":\(String(port, radix: 16, uppercase: true)) 01 "), "\(name): the check looks for another port than \(port)")
            #expect(service["depends_on"]?["rabbitmq"]?["condition"]?.string == "service_healthy", "\(name) starts before the broker is healthy")
            #expect(service["restart"]?.string == "unless-stopped", "\(name): restart")
        }
    }

    @Test func theStoresLiveOnNamedVolumes() throws {
        let compose = try Deploy.compose()
        let volumes = Set(try #require(compose["volumes"]?.entries).keys)
        for (service, variable) in [("intent-recorder", "INTENT_STATUS_DB"), ("intent-worker", "HAIRDRESSERS_DB")] {
            let definition = try #require(compose["services"]?[service])
            let path = try #require(definition["environment"]?[variable]?.string, "\(service) does not set \(variable)")
            let mounts = (definition["volumes"]?.items ?? []).compactMap(\.string).map { $0.split(separator: ":").map(String.init) }
            let holding = mounts.first { $0.count >= 2 && path.hasPrefix($0[1] + "/") }
            let volume = try #require(holding?.first, "\(service): \(path) is on no volume")
            #expect(volumes.contains(volume), "\(service): \(path) is on \(volume), not a named volume")
        }
    }

    @Test func stopTimeoutsExceedTheWorkersGracePeriod() throws {
        let defaultGrace = try Deploy.defaultGrace()
        for name in ["intent-worker", "intent-recorder"] {
            let service = try #require(try Deploy.service(name))
            let command = try #require(service["command"]?.strings)
            let grace = Deploy.grace(in: command) ?? defaultGrace
            let stop = try #require(service["stop_grace_period"]?.string.flatMap(Deploy.seconds), "\(name) keeps Docker's 10 s stop timeout")
            #expect(stop > grace, "\(name): stop_grace_period \(stop) s ≤ --grace \(grace) s")
        }
        for unit in Deploy.units {
            let parsed = try SystemdUnit(try Deploy.read("deploy/systemd/\(unit)"))
            let command = (parsed.value("ExecStart") ?? "").split(separator: " ").map(String.init)
            let grace = Deploy.grace(in: command) ?? defaultGrace
            let stop = try #require(parsed.value("TimeoutStopSec").flatMap(Deploy.seconds), "\(unit) has no TimeoutStopSec")
            #expect(stop > grace, "\(unit): TimeoutStopSec \(stop) s ≤ --grace \(grace) s")
            #expect(parsed.value("KillSignal") == "SIGTERM", "\(unit): KillSignal")
        }
    }

    @Test func composeInterpolatesOnlyVariablesWithDefaults() throws {
        let text = try Deploy.read("compose.yaml")
        // "$$" is a literal dollar; "${NAME:-default}" a deliberate setting; any other "$" would be
        // replaced by compose with an empty string.
        let stray = text.replacingOccurrences(of: "$$", with: "")
            .replacing(try Regex(#"\$\{[A-Z_][A-Z0-9_]*:-[^}]*\}"#), with: "")
        #expect(!stray.contains("$"), "compose.yaml has a '$' compose would interpolate")
    }

    // MARK: deploy/Dockerfile

    @Test func theBuildStageInstallsTheSystemLibraryHeaders() throws {
        let dockerfile = try Deploy.dockerfile()
        let build = try #require(dockerfile.stages.first)
        #expect(build.base.hasPrefix("swift:") && build.base.hasSuffix("-bookworm"), "build stage base \(build.base)")
        let providers = try Deploy.aptProviders()
        #expect(!providers.isEmpty, "Package.swift names no apt providers")
        #expect(build.aptPackages.isSuperset(of: providers), "build stage lacks \(providers.subtracting(build.aptPackages).sorted())")
    }

    @Test func theRuntimeStageIsSlimAndHasOnlyRuntimeLibraries() throws {
        let dockerfile = try Deploy.dockerfile()
        #expect(dockerfile.stages.count >= 2, "not a multi-stage build")
        let runtime = try #require(dockerfile.stages.last)
        #expect(runtime.base.hasSuffix("-slim"), "runtime base \(runtime.base)")
        let packages = runtime.aptPackages
        for provider in try Deploy.aptProviders() {
            let library = try #require(Deploy.runtimePackage[provider], "no known runtime package for \(provider): add it to Deploy.runtimePackage")
            #expect(packages.contains(library), "the runtime stage lacks \(library) (for \(provider))")
        }
        #expect(packages.filter { $0.hasSuffix("-dev") }.isEmpty, "headers in the runtime image: \(packages.sorted())")
        // The tools carry the Swift runtime (built with --static-swift-stdlib): no shared Swift libraries to copy.
        let builds = try #require(dockerfile.stages.first).arguments(of: "RUN").joined(separator: "\n")
            .components(separatedBy: "swift build").dropFirst()
        #expect(!builds.isEmpty && builds.allSatisfy { $0.hasPrefix(" -c release --static-swift-stdlib") }, "\(Array(builds))")
        #expect(
            !runtime.arguments(of: "COPY").contains { $0.contains("/usr/lib/swift/linux/") },
            "Swift's shared runtime libraries are copied, though the tools link it statically")
        #expect(
            runtime.arguments(of: "ENV").contains { $0.contains("swift-backtrace=/usr/libexec/swift/linux/swift-backtrace-static") },
            "a statically linked tool is not told where the backtracer is")
        let user = try #require(runtime.arguments(of: "USER").last, "the image runs as root")
        #expect(!["root", "0"].contains(user.split(separator: ":").first.map(String.init) ?? ""), "USER \(user)")
        #expect(runtime.arguments(of: "VOLUME").contains { $0.contains("/var/lib/intentqueue") })
    }

    @Test func theDockerfileBuildsThePackagesExecutables() throws {
        let products = try Deploy.dockerfileProducts()
        #expect(products == ["intent-worker", "intent-submit", "intent-status", "intent-gateway"])
        let executables = try Deploy.packageExecutables()
        #expect(products.isSubset(of: executables), "not executables of Package.swift: \(products.subtracting(executables).sorted())")
        let dockerfile = try Deploy.dockerfile()
        let build = try #require(dockerfile.stages.first).arguments(of: "RUN").joined(separator: "\n")
        for product in products { #expect(build.contains("$bin/\(product)"), "\(product) is built but not staged") }
        let runtime = try #require(dockerfile.stages.last)
        #expect(runtime.arguments(of: "COPY").contains("--from=build /staging/ /usr/local/bin/"), "the binaries do not reach /usr/local/bin")
    }

    @Test func theSwiftImageIsAtLeastTheToolsVersion() throws {
        let base = try #require(try Deploy.dockerfile().stages.first?.base)
        let version = base.dropFirst("swift:".count).prefix { $0 != "-" }
        let manifest = try Deploy.read("Package.swift")
        let tools = try #require(manifest.firstMatch(of: try Regex(#"swift-tools-version:\s*([0-9.]+)"#))?.output[1].substring)
        let number = { (text: Substring) in text.split(separator: ".").compactMap { Int($0) } }
        #expect(number(version).lexicographicallyPrecedes(number(tools)) == false, "swift:\(version) is older than swift-tools-version \(tools)")
    }

    // MARK: deploy/definitions.json

    @Test func theDefinitionsDeclareTopologysExchangesAndQueues() throws {
        let definitions = try Deploy.definitions()
        let expected = try Deploy.expectedTopology()
        var exchanges: [String: String] = [:]
        for exchange in definitions["exchanges"] as? [[String: Any]] ?? [] {
            let name = exchange["name"] as? String ?? "?"
            exchanges[name] = exchange["type"] as? String
            #expect(
                exchange["vhost"] as? String == "/" && exchange["durable"] as? Bool == true && exchange["auto_delete"] as? Bool == false,
                "exchange \(name) is not durable in /")
        }
        #expect(exchanges == expected.exchanges)
        var queues: [String: [String: Deploy.Argument]] = [:]
        for queue in definitions["queues"] as? [[String: Any]] ?? [] {
            let name = queue["name"] as? String ?? "?"
            queues[name] = try Deploy.arguments(queue["arguments"])
            #expect(
                queue["vhost"] as? String == "/" && queue["durable"] as? Bool == true && queue["auto_delete"] as? Bool == false,
                "queue \(name) is not durable in /")
        }
        #expect(Set(queues.keys) == Set(expected.queues.keys))
        for (name, arguments) in expected.queues {
            #expect(queues[name] == arguments, "queue \(name): the broker would refuse the code's redeclaration")
        }
    }

    @Test func theDefinitionsBindWhatTheWorkersBind() throws {
        let definitions = try Deploy.definitions()
        let expected = try Deploy.expectedTopology()
        var bindings: Set<Deploy.Binding> = []
        for binding in definitions["bindings"] as? [[String: Any]] ?? [] {
            #expect(binding["vhost"] as? String == "/" && binding["destination_type"] as? String == "queue")
            bindings.insert(
                Deploy.Binding(
                    source: binding["source"] as? String ?? "?", destination: binding["destination"] as? String ?? "?",
                    key: binding["routing_key"] as? String ?? "?", arguments: try Deploy.arguments(binding["arguments"])))
        }
        #expect(bindings.subtracting(expected.bindings).isEmpty, "bindings Topology does not make: \(bindings.subtracting(expected.bindings))")
        #expect(expected.bindings.subtracting(bindings).isEmpty, "bindings missing: \(expected.bindings.subtracting(bindings))")
    }

    /// A tripwire on Topology.swift: when it gains an exchange type, a queue
    /// argument or a declaration, definitions.json and Deploy.expectedTopology
    /// need the same change.
    @Test func topologySourceDeclaresNothingTheDefinitionsMiss() throws {
        let source = try Deploy.read("Sources/IntentAMQP/Topology.swift")
        let expected = try Deploy.expectedTopology()
        let types = Set(
            source.matches(of: try Regex(#"declareExchange\(\s*\w+\s*,\s*type:\s*"(\w+)""#)).compactMap { $0.output[1].substring.map(String.init) })
        #expect(types == Set(expected.exchanges.values), "exchange types in Topology.swift: \(types.sorted())")
        let keys = Set(source.matches(of: try Regex(#""(x-[a-z-]+)""#)).compactMap { $0.output[1].substring.map(String.init) })
        // Headers of messages, not arguments of a declaration or a binding: nothing in the definitions.
        let messageHeaders: Set<String> = [
            Topology.retriesHeader, Topology.storageRetriesHeader, Topology.syncHeader, Topology.ownerHeader, Topology.releasedHeader,
            Topology.trustedSenderHeader, Topology.anonymousSenderHeader, Topology.announcedHeader,
        ]
        let known: Set<String> = [
            "x-queue-type", "x-delivery-limit", "x-dead-letter-exchange", "x-message-ttl", "x-max-age", "x-match",
            Topology.retryBucketHeader,
        ]
        let unknown = keys.subtracting(known).subtracting(messageHeaders)
        #expect(unknown.isEmpty, "arguments the definitions do not model: \(unknown.sorted())")
        #expect(source.matches(of: try Regex(#"\.declareExchange\("#)).count == 7, "Topology declares (or looks for) another number of exchanges")
        #expect(
            source.matches(of: try Regex(#"\.declareQueue\("#)).count == 6,
            "Topology declares another number of queues (one is the recorder's request queue, which lives with it)")
        #expect(
            source.matches(of: try Regex(#"\.bindQueue\("#)).count == 10,
            "Topology makes another number of bindings (one binds the recorder's request queue)")
    }

    @Test func theDefinitionsHoldNoPasswordAndGrantLeastPrivilege() throws {
        let definitions = try Deploy.definitions()
        let text = try Deploy.read("deploy/definitions.json")
        let users = definitions["users"] as? [[String: Any]] ?? []
        for user in users {
            let name = user["name"] as? String ?? "?"
            #expect(user["password"] == nil, "\(name) has a plaintext password")
            #expect(user["password_hash"] as? String == "", "\(name) has a password hash in the repository")
            // deploy/render-definitions.sh finds each user by this exact text.
            #expect(text.contains("{\"name\": \"\(name)\", \"password_hash\": \"\""), "\(name) is not written the way render-definitions.sh reads it")
        }
        var grants: [String: (configure: String, write: String, read: String)] = [:]
        for permission in definitions["permissions"] as? [[String: Any]] ?? [] {
            let user = permission["user"] as? String ?? "?"
            #expect(grants[user] == nil, "\(user) has two permission entries")
            #expect(permission["vhost"] as? String == "/")
            grants[user] = (permission["configure"] as? String ?? "", permission["write"] as? String ?? "", permission["read"] as? String ?? "")
        }
        #expect(Set(grants.keys) == Set(users.compactMap { $0["name"] as? String }), "users and permissions differ")

        let topology = Topology()
        let expected = try Deploy.expectedTopology()
        let durable = Set(expected.exchanges.keys).union(expected.queues.keys)
        // Names no definition holds: the default exchange (which permissions call amq.default) and
        // a server-named queue (StatusFeed: watch, --wait).
        let serverNamed = "amq.gen-Xy1_z-9"
        let everything = durable.union(["amq.default", serverNamed])
        let retryQueues = Set(expected.queues.keys).filter { $0.hasPrefix(topology.retryExchange + ".") }
        func allowed(_ pattern: String) throws -> Set<String> {
            let regex = try NSRegularExpression(pattern: pattern)  // RabbitMQ matches unanchored, as here
            return everything.filter { regex.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }
        }
        let exchanges: Set<String> = [topology.intentsExchange, topology.statusExchange, topology.deadLetterExchange]

        let requests = topology.statusRequestExchange  // the recorder's request exchange and queue share the name

        // intent-submit: passive exchange.declare of intents and intents.cancel (no configure on any
        // shared object), basic.publish to intents (submissions, answers, confirmations, denials and
        // cancel requests) and to intents.cancel (the cancel hint); never to intents.status, whose
        // events only workers and the recorder publish. --wait and watch declare a server-named queue
        // (configure), bind it to intents.status (write on it, read on the exchange; the topic
        // permission lets the binding name the user's own events only) and consume it (read).
        // --remote: a request through intents.status.requests (never the default exchange, which
        // reaches every queue by name); consuming amq.rabbitmq.reply-to needs nothing.
        let producer = try #require(grants["intent-producer"])
        #expect(try allowed(producer.configure) == [serverNamed], "a producer configures its own server-named queues only")
        #expect(try allowed(producer.write) == [topology.intentsExchange, topology.cancelExchange, requests, serverNamed])
        #expect(try allowed(producer.read) == [topology.statusExchange, serverNamed])

        // intent-worker: declares everything; binds work, ledger, dead, retry and cancellation queues
        // (write on the queue, read on the source exchange); declaring a queue with a dead-letter
        // exchange needs read on the queue and write on that exchange; consumes work and the
        // cancellation stream; publishes status, retries and its sync marker to intents.cancel.
        let worker = try #require(grants["intent-worker"])
        #expect(try allowed(worker.configure) == durable.subtracting([requests]))
        #expect(try allowed(worker.write) == durable, "with --scheduler, a worker asks the recorder for the schedules")
        let workerReads = exchanges.union([
            topology.retryExchange, topology.workQueue, topology.highPriorityQueue, topology.cancelExchange, topology.cancelStream,
        ])
        .union(retryQueues)
        #expect(try allowed(worker.read) == workerReads, "the worker needs no read on the ledger")

        // The recorder: declares the exchanges, the ledger and the status request exchange and queue,
        // binds the ledger to status and dead letters and its request queue to its exchange, consumes
        // the ledger and the requests, answers on the default exchange (direct reply-to), announces the
        // outcome it decides itself (a dead letter) on intents.status, and asks workers to expire old
        // questions through intents.
        let recorder = try #require(grants["intent-recorder"])
        #expect(try allowed(recorder.configure) == exchanges.union([topology.ledgerQueue, requests]))
        #expect(try allowed(recorder.write) == [topology.intentsExchange, topology.ledgerQueue, topology.statusExchange, requests, "amq.default"])
        #expect(try allowed(recorder.read) == [topology.statusExchange, topology.deadLetterExchange, topology.ledgerQueue, requests])

        // intent-status requeue: basic.get from the dead-letter queue, basic.publish to intents.
        // intent-status cancel: passive declares, then the hint to intents.cancel and the request to intents.
        // --remote: a request through intents.status.requests; watch --all and --wait: a server-named
        // queue bound to intents.status, any owner's events (the operator's topic permission).
        let operatorGrant = try #require(grants["intent-operator"])
        #expect(try allowed(operatorGrant.configure) == [serverNamed])
        #expect(try allowed(operatorGrant.write) == [topology.intentsExchange, topology.cancelExchange, requests, serverNamed])
        #expect(try allowed(operatorGrant.read) == [topology.deadLetterQueue, topology.statusExchange, serverNamed])

        // Topic permissions on intents.status: a producer publishes nothing there and binds only to
        // its own events (the key's first word is the owner); an operator reads every owner's.
        let topics = definitions["topic_permissions"] as? [[String: Any]] ?? []
        func topic(_ user: String) -> (write: String, read: String)? {
            topics.first { $0["user"] as? String == user && $0["exchange"] as? String == topology.statusExchange }
                .map { ($0["write"] as? String ?? "", $0["read"] as? String ?? "") }
        }
        #expect(topic("intent-producer")?.write == "^$" && topic("intent-producer")?.read == "^{username}\\.")
        #expect(topic("intent-operator")?.write == "^$" && topic("intent-operator")?.read == ".*")
        // Server-named queues (watch, --wait) are bounded: a slow reader drops its oldest events.
        let policies = definitions["policies"] as? [[String: Any]] ?? []
        let clientQueues = try #require(policies.first { $0["pattern"] as? String == "^amq\\.gen-" })
        let policy = try #require(clientQueues["definition"] as? [String: Any])
        #expect(policy["max-length"] as? Int != nil && policy["overflow"] as? String == "drop-head")
        // And by size: a producer's own events are up to 1 MiB each, and it may make many such queues.
        #expect((policy["max-length-bytes"] as? Int).map { $0 <= 64 << 20 } == true)
        // The cancellation stream, which producers write their hints to, is bounded by size as well as by age.
        let cancellations = try #require(policies.first { $0["name"] as? String == "intentqueue-cancellations" })
        let streamPattern = try Regex(try #require(cancellations["pattern"] as? String))
        #expect(topology.cancelStream.wholeMatch(of: streamPattern) != nil)
        #expect(((cancellations["definition"] as? [String: Any])?["max-length-bytes"] as? Int).map { $0 <= 1 << 30 } == true)
        // The work and retry queues dead-letter at least once (a retry whose time is up stays until the work queue
        // has it; a poison message until the dead-letter queue has it): by a policy, which existing quorum queues
        // take without being declared again.
        let deadLettering = try #require(policies.first { $0["name"] as? String == "intentqueue-dead-letter-at-least-once" })
        let strategy = try #require(deadLettering["definition"] as? [String: Any])
        #expect(strategy["dead-letter-strategy"] as? String == "at-least-once" && strategy["overflow"] as? String == "reject-publish")
        let pattern = try Regex(try #require(deadLettering["pattern"] as? String))
        let delayQueues = topology.retryDelays.map { topology.retryQueue(forDelay: Double($0)).queue }
        for queue in [topology.workQueue, topology.highPriorityQueue] + delayQueues {
            #expect(queue.firstMatch(of: pattern) != nil, "\(queue)")
        }
        for queue in [topology.ledgerQueue, topology.deadLetterQueue, topology.cancelStream, topology.statusRequestQueue] {
            #expect(queue.firstMatch(of: pattern) == nil, "\(queue)")
        }
    }

    @Test(.enabled(if: Deploy.hasOpenSSL, "needs openssl"))
    func renderDefinitionsFillsInEveryHashAndNothingElse() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iq-render-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let users = try Deploy.definitionUsers()
        for user in users {
            try "secret-of-\(user)\n".write(to: directory.appendingPathComponent("\(user).password"), atomically: true, encoding: .utf8)
        }
        let script = Deploy.path("deploy/render-definitions.sh")
        let result = try await run("/usr/bin/env", ["bash", script, directory.path], timeout: 30)
        #expect(result.exitCode == 0, "\(result)")
        var rendered = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        var hashes: Set<String> = []
        for user in rendered["users"] as? [[String: Any]] ?? [] {
            let hash = user["password_hash"] as? String ?? ""
            // rabbit_password_hashing_sha256: 4 bytes of salt, then 32 of SHA-256.
            #expect(Data(base64Encoded: hash)?.count == 36, "\(user["name"] ?? "?"): hash '\(hash)'")
            hashes.insert(hash)
        }
        #expect(hashes.count == users.count)
        rendered["users"] = (rendered["users"] as? [[String: Any]])?.map { user in user.merging(["password_hash": ""]) { $1 } }
        let original = try Deploy.definitions()
        #expect(NSDictionary(dictionary: rendered).isEqual(to: original), "rendering changed more than the hashes")

        try FileManager.default.removeItem(at: directory.appendingPathComponent("\(users[0]).password"))
        let missing = try await run("/usr/bin/env", ["bash", script, directory.path], timeout: 30)
        #expect(missing.exitCode != 0 && missing.stderr.contains("\(users[0]).password"), "\(missing)")
    }

    // MARK: deploy/systemd

    @Test(arguments: Deploy.units)
    func theSystemdUnitRestartsAndTakesItsURLAsACredential(unit: String) throws {
        let parsed = try SystemdUnit(try Deploy.read("deploy/systemd/\(unit)"))
        #expect(parsed.value("Restart") == "always")
        #expect(parsed.value("RestartSec").flatMap(Deploy.seconds) != nil)
        let credential = try #require(parsed.value("LoadCredential"), "no LoadCredential=")
        let name = try #require(credential.split(separator: ":").first.map(String.init))
        #expect(credential.hasPrefix("\(name):/etc/intentqueue/"), "LoadCredential=\(credential)")
        #expect(parsed.environment["INTENT_BROKER_URL_FILE"] == "%d/\(name)", "the tool does not read the credential")
        #expect(parsed.environment["INTENT_BROKER_URL"] == nil)
        #expect(parsed.value("User").map { $0 != "root" && $0 != "0" } ?? (parsed.value("DynamicUser") == "yes"), "runs as root")
        #expect(parsed.value("StateDirectory") == "intentqueue")
        for variable in ["INTENT_STATUS_DB", "HAIRDRESSERS_DB"] {
            if let path = parsed.environment[variable] { #expect(path.hasPrefix("/var/lib/intentqueue/"), "\(variable)=\(path)") }
        }
        for (key, value) in [("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes")] {
            #expect(parsed.value(key) == value, "\(key)=\(parsed.value(key) ?? "unset")")
        }
        let command = (parsed.value("ExecStart") ?? "").split(separator: " ").map(String.init)
        #expect(command.first == "/usr/local/bin/intent-worker")
        let isRecorder = unit.hasPrefix("intent-recorder")
        #expect(command.contains("--recorder-only") == isRecorder)
        #expect(parsed.environment[isRecorder ? "INTENT_STATUS_DB" : "HAIRDRESSERS_DB"] != nil)
    }
}
