import Foundation
import IntentAMQP
import IntentCLI
import IntentGateway
import IntentKit

/// `intent-gateway`: IntentQueue over HTTP — the `/v1` API and the dashboard.
@main
struct GatewayCommand: Command {
    static let tool = "intent-gateway"
    static let usage =
        "intent-gateway [--listen HOST:PORT] [--tokens FILE] [--broker-threads N] [--cors-origin ORIGIN] [--max-connections N] [--max-waits-per-user N] [--idle-timeout S] [--trust-user U]... [--log-level L] [--json-logs]"
    static let help = """
        Serve IntentQueue over HTTP: submit, read, wait for, answer, cancel and follow intents under /v1,
        the dashboard at /, /healthz and /metrics. The gateway talks to the broker like the other tools and
        never opens the status store (the recorder answers its reads).

        Usage: \(usage)

        Options:
          --listen HOST:PORT    where to serve HTTP (default 127.0.0.1:8080; port 0 picks a free one)
          --tokens FILE         the bearer tokens, one 'token user role' per line, role producer or operator;
                                mode 600 (default $INTENT_GATEWAY_TOKENS, else $INTENT_STATE_DIR/gateway-tokens)
          --broker-threads N    threads talking to the broker, each with its own connections (default 8)
          --cors-origin ORIGIN  let pages from ORIGIN call the API (default: CORS off)
          --max-connections N   HTTP connections open at once (default 16384)
          --max-waits-per-user N  long polls and event streams one token's user holds open at once (default 256; more: 429)
          --idle-timeout S      seconds before an idle connection is closed (default 30)
          --trust-user U        a broker user no token may name (the workers' and the recorder's, when not
                                intent-worker and intent-recorder, which are refused anyway); repeatable
          --log-level L         debug, info, notice, warning or error (default info)
          --json-logs           log JSON lines
          -h, --help            show this help

        Environment:
          INTENT_BROKER_URL     the broker as the gateway's own user, which needs RabbitMQ's `impersonator` tag to
                                publish with each token's user as `user_id` (default \(BrokerURL.defaultURL))
          INTENT_BROKER_URL_FILE  a file (mode 600) holding the URL instead
          INTENT_GATEWAY_TOKENS   the token file, when --tokens is not given

        Exit codes: 0 stopped by SIGTERM or SIGINT, 64 usage error (a bad option, an unreadable token file),
        69 cannot listen, or rabbitmq-c cannot be loaded.
        """

    var host = "127.0.0.1"
    var port: UInt16 = 8080
    var tokensPath: String
    /// Broker users no token may name, besides the deploy files' worker and recorder users and the gateway's own.
    var trustedUsers: Set<String> = []
    var brokerThreads = 8
    var corsOrigin: String?
    var maximumConnections = 16_384
    var maximumHeldPerUser = 256
    var idleTimeout = 30
    var logLevel = Logger.Level.info
    var jsonLogs = false

    static func parse(_ words: [String]) throws(UsageError) -> GatewayCommand? {
        let arguments = try Arguments(
            words, flags: ["--help", "--json-logs"],
            options: [
                "--listen", "--tokens", "--broker-threads", "--cors-origin", "--max-connections", "--max-waits-per-user", "--idle-timeout",
                "--log-level", "--trust-user",
            ])
        if arguments.has("--help") { return nil }
        guard arguments.positionals.isEmpty else { throw UsageError("unexpected argument '\(arguments.positionals[0])'") }
        let environment = Environment.values
        let defaultTokens = environment["INTENT_GATEWAY_TOKENS"] ?? (Environment.stateDirectory() + "/gateway-tokens")
        var command = GatewayCommand(tokensPath: try arguments.value("--tokens") ?? defaultTokens)
        if let listen = try arguments.value("--listen") {
            guard let colon = listen.lastIndex(of: ":"), let port = UInt16(listen[listen.index(after: colon)...]) else {
                throw UsageError("--listen takes HOST:PORT, such as 127.0.0.1:8080, not '\(listen)'")
            }
            command.host = String(listen[..<colon]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            command.port = port
        }
        command.brokerThreads = try arguments.integer("--broker-threads", in: 1...256) ?? 8
        command.corsOrigin = try arguments.value("--cors-origin")
        command.maximumConnections = try arguments.integer("--max-connections", in: 16...1_000_000) ?? 16_384
        command.maximumHeldPerUser = try arguments.integer("--max-waits-per-user", in: 1...1_000_000) ?? 256
        command.idleTimeout = try arguments.integer("--idle-timeout", in: 1...3600) ?? 30
        if let level = try arguments.value("--log-level") {
            guard let parsed = Logger.Level.allCases.first(where: { $0.name == level }) else {
                throw UsageError("--log-level takes debug, info, notice, warning or error, not '\(level)'")
            }
            command.logLevel = parsed
        }
        command.jsonLogs = arguments.has("--json-logs")
        command.trustedUsers = Set(arguments.options["--trust-user"] ?? [])
        return command
    }

    func run() async -> Int32 {
        let logger = Logger(label: Self.tool, level: logLevel, sink: Terminal.logSink(json: jsonLogs))
        let url: BrokerURL
        let tokens: GatewayTokens
        do {
            url = try Environment.brokerURL()
            // Never as a trusted user: the workers' and the recorder's (the deploy files' and --trust-user's).
            tokens = try GatewayTokens.load(path: tokensPath, refusing: GatewayTokens.defaultTrustedUsers.union(trustedUsers))
        } catch let error as UsageError {
            return Terminal.fail(Self.tool, error.description, code: ExitCode.usage)
        } catch {
            return Terminal.fail(Self.tool, "\(error)", code: ExitCode.usage)
        }
        do {
            try AMQPConnection.loadLibrary()
        } catch {
            return Terminal.fail(Self.tool, "\(error)", code: ExitCode.unavailable)
        }
        Self.raiseOpenFileLimit(to: maximumConnections + 256)
        var configuration = Gateway.Configuration(brokerURL: url, tokens: tokens, logger: logger)
        configuration.host = host
        configuration.port = port
        configuration.brokerThreads = brokerThreads
        configuration.corsOrigin = corsOrigin
        configuration.limits.maximumConnections = maximumConnections
        configuration.maximumHeldPerUser = maximumHeldPerUser
        configuration.limits.idleTimeout = idleTimeout
        let gateway: Gateway
        do {
            gateway = try Gateway(configuration)
        } catch {
            return Terminal.fail(Self.tool, "\(error)", code: ExitCode.unavailable)
        }
        let shown = host.contains(":") ? "[\(host)]" : host
        logger.info("listening on http://\(shown):\(gateway.port) (\(tokens.count) tokens; broker \(url))")
        let signal = await Self.waitForSignal()
        logger.info("stopping on signal \(signal)")
        gateway.stop()
        return ExitCode.success
    }

    /// Waits for SIGTERM or SIGINT; returns its number.
    static func waitForSignal() async -> Int32 {
        await withCheckedContinuation { continuation in
            let queue = DispatchQueue(label: "intent-gateway.signals")
            let once = OnceFlag()
            var sources: [any DispatchSourceSignal] = []
            for number in [SIGTERM, SIGINT] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler {
                    if once.take() { continuation.resume(returning: number) }
                }
                source.resume()
                sources.append(source)
            }
            // The sources live as long as the process.
            _ = Unmanaged.passRetained(SourceHolder(sources))
        }
    }

    /// Lets the process hold as many sockets as connections are allowed (up to the hard limit).
    static func raiseOpenFileLimit(to wanted: Int) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        let target = min(rlim_t(wanted), limit.rlim_max)
        if limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
    }
}

private final class OnceFlag: @unchecked Sendable {
    // @unchecked: only touched on the signal queue.
    private var taken = false
    func take() -> Bool {
        defer { taken = true }
        return !taken
    }
}

private final class SourceHolder {
    let sources: [any DispatchSourceSignal]
    init(_ sources: [any DispatchSourceSignal]) { self.sources = sources }
}
