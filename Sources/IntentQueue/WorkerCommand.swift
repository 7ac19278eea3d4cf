import Foundation
import IntentAMQP
import IntentCLI
import IntentKit
import IntentWorker

/// What a worker serves: its handlers, registered when it starts serving
/// (not for `--help`, nor for `--recorder-only`), and the words of its `--help`.
public struct WorkerApp: Sendable {
    /// The executable's name, in messages and the help.
    public var tool: String
    /// The help's first line: what this worker serves.
    public var summary: String
    /// More of the help: the app's own commands and environment.
    public var moreHelp: String
    /// Registers the app's handlers; an error stops the worker with exit 69.
    public var register: @Sendable (inout IntentRegistry) throws -> Void

    /// An app with this help, whose handlers `register` adds; `tool` is by default the executable's name.
    public init(
        tool: String = Worker.executableName, summary: String, moreHelp: String = "",
        register: @escaping @Sendable (inout IntentRegistry) throws -> Void
    ) {
        self.tool = tool
        self.summary = summary
        self.moreHelp = moreHelp
        self.register = register
    }
}

/// The one entry point of a worker: its command line (`--help` lists it),
/// its environment, its handlers, and a graceful stop on SIGTERM or SIGINT.
///
/// ```swift
/// try await Worker.serve(AddTodoHandler(database: database))
/// ```
public enum Worker {
    /// Serves these handlers until SIGTERM or SIGINT, configured by the
    /// command line and the environment, then exits the process.
    public static func serve<each H: IntentHandler>(_ handler: repeat each H) async throws -> Never {
        var registry = IntentRegistry()
        for handler in repeat each handler {
            try registry.register(handler)
        }
        let served = registry
        await serve(WorkerApp(summary: "Serve \(served.typeNames.joined(separator: ", ")) with IntentQueue.") { $0 = served })
    }

    /// Serves the app until SIGTERM or SIGINT, then exits the process.
    public static func serve(_ app: WorkerApp) async -> Never {
        Terminal.ignoreBrokenPipes()
        exit(await run(app, words: Array(CommandLine.arguments.dropFirst())))
    }

    /// Serves the app as the command line `words` say; returns the exit code.
    public static func run(_ app: WorkerApp, words: [String]) async -> Int32 {
        do {
            guard let command = try WorkerCommand.parse(words, app: app) else {
                Terminal.write(WorkerCommand.help(app))
                return ExitCode.success
            }
            return await command.run()
        } catch {
            return Terminal.usageFailure(error, tool: app.tool, usage: WorkerCommand.usage(app.tool))
        }
    }

    /// This executable's file name.
    public static var executableName: String {
        URL(fileURLWithPath: CommandLine.arguments.first ?? "worker").lastPathComponent
    }
}

/// A worker's command line: serves the app's intents, and hosts the status recorder when asked.
struct WorkerCommand {
    static func usage(_ tool: String) -> String {
        "\(tool) [--concurrency N] [--prefetch N] [--with-recorder | --recorder-only | --scheduler-only] [--scheduler] [--heartbeat S] [--grace S] [--allow-user U]... [--operator-user U]... [--trust-user U]... [--time-limit Type=S]... [--owner-limit Type=N]... [--owner-rate Type=N/D]... [--question-ttl S] [--lost-answer-grace S] [--started-event-delay S] [--retain D] [--ledger-retain D] [--query-share F] [--metrics-file PATH [--metrics-interval S]] [--scheduling batch|normal] [--log-format human|json] [--log-level L]"
    }

    static func help(_ app: WorkerApp) -> String {
        """
        \(app.summary) Runs the status recorder too when asked.

        Usage: \(usage(app.tool))
        \(app.moreHelp.isEmpty ? "" : "\n" + app.moreHelp + "\n")
        Options:
          --concurrency N       handlers running at once (default 8)
          --prefetch N          unacked deliveries the broker may send ahead from each of the two work queues
                                (normal and high priority; default 2 × concurrency)
          --with-recorder       also run the status recorder, which writes INTENT_STATUS_DB
          --recorder-only       run only the status recorder
          --scheduler           also run a scheduler, which submits the intents of the recurring schedules
                                (intent-status schedule); two may run, and none submits a due time twice
          --scheduler-only      run only a scheduler
          --heartbeat S         AMQP heartbeat in seconds (default 30)
          --grace S             seconds to finish in-flight intents on SIGTERM/SIGINT (default 20)
          --allow-user U        a broker user whose restricted intents are handled; repeatable
          --operator-user U     a broker user who may answer, cancel, requeue and (remotely) read any intent,
                                not only the ones it submitted; repeatable
          --trust-user U        a broker user whose status events the recorder records, and whose expiry
                                requests and republished intents workers believe: the workers' and the
                                recorder's users (each process trusts its own user anyway); repeatable
          --time-limit Type=S   the longest a handler of Type may run (default: the handler's own, 600 s)
          --owner-limit Type=N  at most N intents of Type running at once per owner, across the workers that share
                                its ledger (default: the handler's own limit, if any); the rest wait their turn
          --owner-rate Type=N/D at most N intents of Type starting within any D (such as 30s or 1m) per owner,
                                counted as --owner-limit is (default: the handler's own rate limit, if any)
          --question-ttl S      needsInput questions unanswered this long expire (the recorder asks a worker,
                                which fails them with expired unless an answer came first; default 86400)
          --lost-answer-grace S an intent whose answer the broker dead-lettered, unheard of this long, has its
                                question ended (failure/deadLettered) by a worker; requeue the answer before
                                then to run it instead (default 300)
          --started-event-delay S
                                a run's inProgress event is published after S seconds; a run that ends sooner
                                publishes its outcome alone, with its startedAt (default \(WorkerConfiguration.defaultStartedEventDelay); 0: at once)
          --retain D            the recorder removes intents finished longer ago than D, in small batches
                                (default 7d; a number of seconds or 30m, 12h, 7d; 'forever' keeps them)
          --ledger-retain D     the worker forgets, in its ledgers, intents decided longer ago than D, in small
                                batches: a copy of such an intent's submission then runs as a new intent
                                (default 31d; at least 1h, and kept an hour more than the longest time limit;
                                with --with-recorder, at least a day more than --retain, which the default
                                grows to; 'forever' keeps every decision). Keep it longer than the dedupe
                                windows producers use (intent-submit --dedupe-for, at most 30d)
          --query-share F       the share of the recorder's time one user's costly remote queries may take
                                (lists, dead letters, tallies, deletes; never a lookup of one intent): F seconds
                                of answering a second, 8 × F at once; past it the user is told to try again
                                shortly. Operators and trusted users are not counted (default 0.25; 'off')
          --metrics-file PATH   write Prometheus text metrics to PATH (atomically), for node_exporter's
                                textfile collector: intents by outcome, handle durations, queue depths
                                (exit 73 when PATH cannot be written)
          --metrics-interval S  seconds between metrics writes (default 5)
          --scheduling P        batch (default): Linux's SCHED_BATCH for every thread, so a thread woken by another
                                does not preempt it (less CPU per intent, the same share of the CPU);
                                normal: the system's default policy
          --log-format F        human (default) or json, one line per event on standard error
          --log-level L         trace, debug, info (default), notice, warning or error
          -h, --help            show this help

        Environment:
          INTENT_BROKER_URL     amqp://user:password@host:port/vhost (default \(BrokerURL.defaultURL));
                                the nodes of a cluster as several URLs separated by commas
          INTENT_BROKER_URL_FILE  a file (mode 600) holding the URL instead, for secrets managers
          INTENTQUEUE_FAULT     fault injection for tests: point[@idPrefix][:probability],… with points
                                afterReceive, afterHandle, afterStatusPublish, beforeAck (the worker kills itself)
          INTENT_STATUS_DB      the status store the recorder writes (default ~/.local/state/intentqueue/status.sqlite)
          INTENT_OUTCOMES_DB    the worker's own outcome ledger, for handlers that keep no database
                                (default ~/.local/state/intentqueue/outcomes.sqlite)

        The worker keeps retrying while the broker is away and resumes on its own. SIGTERM or SIGINT stops
        consuming, lets running handlers finish within the grace period, flushes their status events and exits 0.
        """
    }

    enum Mode {
        case worker, workerAndRecorder, recorderOnly, schedulerOnly
    }

    var app: WorkerApp
    var mode: Mode
    var concurrency: Int
    var prefetch: UInt16?
    var heartbeat: Int
    var grace: Double
    var jsonLogs: Bool
    var logLevel: Logger.Level
    var allowedUsers: Set<String> = []
    var operators: Set<String> = []
    var trustedUsers: Set<String> = []
    var timeLimits: [String: Double] = [:]
    var ownerLimits: [String: Int] = [:]
    var ownerRates: [String: RateLimit] = [:]
    /// Run a scheduler too (or only, in `schedulerOnly`).
    var scheduler = false
    var questionTTL: Double = 86_400
    var lostAnswerGrace: Double = 300
    var startedEventDelay = WorkerConfiguration.defaultStartedEventDelay
    var retention: Double? = 7 * 86_400
    var queryShare: Double? = 0.25
    var ledgerRetention: Double? = WorkerConfiguration.defaultLedgerRetention
    var metricsFile: String?
    var metricsInterval: Double = 5
    var scheduling: CPUScheduling

    static func parse(_ words: [String], app: WorkerApp) throws(UsageError) -> WorkerCommand? {
        let arguments = try Arguments(
            words, flags: ["--help", "--with-recorder", "--recorder-only", "--scheduler", "--scheduler-only"],
            options: [
                "--concurrency", "--prefetch", "--heartbeat", "--grace", "--log-format", "--log-level", "--allow-user",
                "--operator-user", "--trust-user", "--time-limit", "--owner-limit", "--owner-rate", "--question-ttl", "--lost-answer-grace",
                "--started-event-delay",
                "--retain", "--ledger-retain", "--query-share",
                "--metrics-file",
                "--metrics-interval", "--scheduling",
            ])
        if arguments.has("--help") { return nil }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        if arguments.has("--with-recorder"), arguments.has("--recorder-only") {
            throw UsageError("--with-recorder and --recorder-only exclude each other")
        }
        if arguments.has("--scheduler-only"), arguments.has("--with-recorder") || arguments.has("--recorder-only") || arguments.has("--scheduler") {
            throw UsageError("--scheduler-only excludes --with-recorder, --recorder-only and --scheduler")
        }
        let mode: Mode =
            arguments.has("--scheduler-only")
            ? .schedulerOnly
            : arguments.has("--recorder-only") ? .recorderOnly : arguments.has("--with-recorder") ? .workerAndRecorder : .worker
        let format = try arguments.value("--log-format") ?? "human"
        guard format == "human" || format == "json" else { throw UsageError("--log-format must be human or json, not '\(format)'") }
        let levelName = try arguments.value("--log-level") ?? "info"
        guard let level = Logger.Level.allCases.first(where: { $0.name == levelName }) else {
            throw UsageError("--log-level must be one of \(Logger.Level.allCases.map(\.name).joined(separator: ", ")), not '\(levelName)'")
        }
        let timeLimitShape = "Type=seconds (more than 0, at most 10^9), such as BookAppointment=30"
        let timeLimits = try perType("--time-limit", in: arguments, expecting: timeLimitShape) { text in
            Double(text).flatMap { $0 > 0 && $0 <= 1_000_000_000 ? $0 : nil }
        }
        let ownerLimits = try perType("--owner-limit", in: arguments, expecting: "Type=count (1 to 100000), such as BookAppointment=2") { text in
            Int(text).flatMap { (1...100_000).contains($0) ? $0 : nil }
        }
        let ownerRates = try perType("--owner-rate", in: arguments, expecting: "Type=count/duration, such as SendMessage=10/1m") {
            text -> RateLimit? in
            let parts = text.split(separator: "/", maxSplits: 1)
            guard parts.count == 2, let count = Int(parts[0]), (1...100_000).contains(count),
                let seconds = try? Arguments.duration(String(parts[1]), option: "--owner-rate"), seconds <= 86_400 * 366
            else { return nil }
            return RateLimit(count, per: seconds, by: .owner)
        }
        var retention: Double? = 7 * 86_400
        if let text = try arguments.value("--retain") {
            guard mode != .worker, mode != .schedulerOnly else {
                throw UsageError("--retain applies to the recorder (--with-recorder or --recorder-only)")
            }
            retention = text == "forever" ? nil : try Arguments.duration(text, option: "--retain")
        }
        var queryShare: Double? = 0.25
        if let text = try arguments.value("--query-share") {
            guard mode != .worker, mode != .schedulerOnly else {
                throw UsageError("--query-share applies to the recorder (--with-recorder or --recorder-only)")
            }
            if text == "off" {
                queryShare = nil
            } else {
                guard let share = Double(text), share.isFinite, share > 0, share <= 1 else {
                    throw UsageError("--query-share takes a share of a second over 0 and at most 1 (such as 0.25), or 'off', not '\(text)'")
                }
                queryShare = share
            }
        }
        var ledgerRetention: Double? = WorkerConfiguration.defaultLedgerRetention
        if let text = try arguments.value("--ledger-retain") {
            guard mode == .worker || mode == .workerAndRecorder else {
                throw UsageError("--ledger-retain applies to workers (not with --recorder-only or --scheduler-only)")
            }
            ledgerRetention = text == "forever" ? nil : try Arguments.duration(text, option: "--ledger-retain")
            if let seconds = ledgerRetention, seconds < 3_600 {
                throw UsageError("--ledger-retain takes at least 1h (a copy of a submission may come late), not '\(text)'")
            }
        }
        // The store counts from when the recorder recorded an outcome, the ledger from when a worker decided it
        // (earlier, by as long as the recorder lagged): a day apart at least.
        let storeMargin = 86_400.0
        if mode == .workerAndRecorder, arguments.options["--ledger-retain"] == nil, let ledger = ledgerRetention,
            retention.map({ ledger < $0 + storeMargin }) ?? true
        {
            // Unless told otherwise, the ledger remembers a day longer than the store beside it.
            ledgerRetention = retention.map { $0 + storeMargin }
        } else if mode == .workerAndRecorder, let ledger = ledgerRetention, retention.map({ ledger < $0 + storeMargin }) ?? true {
            throw UsageError(
                "--ledger-retain (\(JSONValue.formatNumber(ledger)) s) is not a day longer than --retain (\(retention.map { "\(JSONValue.formatNumber($0)) s" } ?? "forever")): the store would remember intents their ledger forgot"
            )
        }
        var startedEventDelay = WorkerConfiguration.defaultStartedEventDelay
        if let text = try arguments.value("--started-event-delay") {
            guard let seconds = Double(text), seconds >= 0, seconds <= 3_600 else {
                throw UsageError("--started-event-delay takes seconds from 0 to 3600, not '\(text)'")
            }
            startedEventDelay = seconds
        }
        if arguments.options["--metrics-interval"] != nil, arguments.options["--metrics-file"] == nil {
            throw UsageError("--metrics-interval only applies with --metrics-file")
        }
        var command = WorkerCommand(
            app: app, mode: mode,
            concurrency: try arguments.integer("--concurrency", in: 1...1_000) ?? 8,
            prefetch: try arguments.integer("--prefetch", in: 1...65_535).map { UInt16($0) },
            heartbeat: try arguments.integer("--heartbeat", in: 0...3_600) ?? 30,
            grace: try arguments.seconds("--grace") ?? 20,
            jsonLogs: format == "json", logLevel: level, allowedUsers: Set(arguments.options["--allow-user"] ?? []),
            operators: Set(arguments.options["--operator-user"] ?? []), trustedUsers: Set(arguments.options["--trust-user"] ?? []),
            timeLimits: timeLimits, questionTTL: try arguments.seconds("--question-ttl") ?? 86_400, startedEventDelay: startedEventDelay,
            retention: retention, metricsFile: try arguments.value("--metrics-file"),
            metricsInterval: try arguments.seconds("--metrics-interval") ?? 5, scheduling: try CPUScheduling(arguments))
        command.lostAnswerGrace = try arguments.seconds("--lost-answer-grace") ?? 300
        command.queryShare = queryShare
        command.ledgerRetention = ledgerRetention
        command.ownerLimits = ownerLimits
        command.ownerRates = ownerRates
        command.scheduler = mode == .schedulerOnly || arguments.has("--scheduler")
        return command
    }

    /// A repeatable `option Type=value` as values by type; `parse` reads a value, nil when it is not one.
    static func perType<Value>(
        _ option: String, in arguments: Arguments, expecting: String, _ parse: (Substring) -> Value?
    ) throws(UsageError) -> [String: Value] {
        var values: [String: Value] = [:]
        for item in arguments.options[option] ?? [] {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let value = parse(parts[1]) else { throw UsageError("\(option) takes \(expecting), not '\(item)'") }
            values[String(parts[0])] = value
        }
        return values
    }

    func run() async -> Int32 {
        let tool = app.tool
        let logger = Logger(label: tool, level: logLevel, sink: Terminal.logSink(json: jsonLogs))
        // First, while the process has few threads: every thread the services start inherits the policy.
        if let warning = scheduling.applyOrWarn() { logger.warning("\(warning)") }
        let url: BrokerURL
        do {
            url = try Environment.brokerURL()
        } catch {
            return Terminal.fail(tool, error.description, code: ExitCode.usage)
        }
        do {
            try AMQPConnection.loadLibrary()
        } catch {
            return Terminal.fail(tool, "\(error)", code: ExitCode.unavailable)
        }
        var services: [any Service] = []
        let metrics: Metrics? = metricsFile.map { _ in
            let metrics = Metrics()
            metrics.declareIntentQueueFamilies()
            return metrics
        }
        var servedTypes: Set<String>?
        if mode != .recorderOnly, mode != .schedulerOnly {
            var registry = IntentRegistry()
            do {
                try app.register(&registry)
            } catch {
                return Terminal.fail(tool, "cannot start the handlers: \(error)", code: ExitCode.unavailable)
            }
            servedTypes = Set(registry.typeNames)
            var faults = FaultInjection.none
            if let setting = Environment.values["INTENTQUEUE_FAULT"], !setting.isEmpty {
                switch FaultInjection.parse(setting) {
                case .success(let parsed): faults = parsed
                case .failure(let failure): return Terminal.fail(tool, "INTENTQUEUE_FAULT: \(failure.message)", code: ExitCode.usage)
                }
                logger.warning("fault injection is on: \(setting)")
            }
            var configuration = WorkerConfiguration(
                brokerURL: url, concurrency: concurrency, prefetch: prefetch, heartbeat: heartbeat, faults: faults)
            configuration.allowedUsers = allowedUsers
            configuration.operators = operators
            configuration.trustedUsers = trustedUsers
            configuration.timeLimits = timeLimits
            configuration.concurrencyLimits = ownerLimits.mapValues { ConcurrencyLimit($0, per: .owner) }
            configuration.rateLimits = ownerRates
            configuration.startedEventDelay = startedEventDelay
            configuration.ledgerRetention = ledgerRetention
            configuration.metrics = metrics
            configuration.outcomesPath =
                Environment.values["INTENT_OUTCOMES_DB"].flatMap { $0.isEmpty ? nil : $0 }
                ?? Environment.stateDirectory() + "/outcomes.sqlite"
            do {
                services.append(try WorkerService(registry: registry, configuration: configuration, logger: logger))
            } catch {
                return Terminal.fail(tool, "cannot open the outcome ledger at \(configuration.outcomesPath): \(error)", code: ExitCode.unavailable)
            }
        }
        if scheduler {
            services.append(Scheduler(configuration: .init(brokerURL: url), logger: logger))
        }
        if mode == .workerAndRecorder || mode == .recorderOnly {
            var configuration = StatusRecorder.Configuration(brokerURL: url, storePath: Environment.statusStorePath(), heartbeat: heartbeat)
            configuration.questionTimeToLive = questionTTL
            configuration.lostAnswerGrace = lostAnswerGrace
            configuration.operators = operators
            configuration.trustedPublishers = trustedUsers
            configuration.knownTypes = servedTypes
            configuration.retention = retention
            configuration.queryShare = queryShare
            configuration.metrics = metrics
            services.insert(StatusRecorder(configuration: configuration, logger: logger), at: 0)
        }
        // The metrics writer runs beside the group and stops after it, so its last
        // write holds the final counts of the services it watched.
        let writer = zip(metricsFile, metrics).map { path, metrics in
            MetricsWriter(configuration: .init(path: path, interval: metricsInterval, brokerURL: url), metrics: metrics, logger: logger)
        }
        do {
            try writer?.prepare()
        } catch {
            return Terminal.fail(tool, "cannot write the metrics file \(metricsFile ?? ""): \(error)", code: ExitCode.cannotCreate)
        }
        let writing = writer.map { writer in Task { try await writer.run() } }
        let group = ServiceGroup(services: services, gracePeriod: grace, logger: logger)
        do {
            let ending = try await group.run(ready: { logger.info("ready; SIGTERM or SIGINT stops gracefully") })
            if case .deadlineExceeded = ending {
                logger.warning("exiting with handlers still running: their intents go back to the queue")
            }
            writer?.stop()
            try? await writing?.value
            return ExitCode.success
        } catch {
            logger.error("stopped: \(error)")
            writer?.stop()
            try? await writing?.value
            return ExitCode.unavailable
        }
    }
}

/// Both values, or nil when either is missing.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
