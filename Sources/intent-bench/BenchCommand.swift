import Foundation
import IntentAMQP
import IntentCLI
import IntentKit
import IntentWorker

/// `intent-bench`: measures the raw broker ceiling of IntentQueue's message
/// pattern, then IntentQueue end to end at full speed and at a fixed offered load.
@main
struct BenchCommand: Command {
    static let tool = "intent-bench"
    static let usage =
        "intent-bench [--intents N] [--producers P] [--workers W] [--concurrency C] [--prefetch N] [--window N] [--rate R] "
        + "[--latency-intents M] [--skip-ceiling] [--ceiling-events 1|2] [--c-ceiling PATH [--c-effects]] [--scheduling batch|normal] [--timeout S] [--dir PATH] "
        + "[--json] [--keep]"
    static let help = """
        Benchmark IntentQueue against the broker's ceiling for the same message pattern, in one run.

        Usage: \(usage)

        Phases:
          ceiling      N messages in IntentQueue's exact pattern (confirmed persistent publish to the work and ledger
                       quorum queues; per message one confirmed status publish (the outcome of a quick run; two
                       with --ceiling-events 2, as when inProgress is published too), then an ack; the ledger
                       batched into SQLite) with no decoding, handler or status logic
          ceiling (C)  with --c-ceiling, the same pattern by an independent C program (deploy/ceiling/ceiling.c), at
                       full speed and, with a latency phase, at its rate; with --c-effects at that rate once more, its
                       worker committing each intent's effect (synced, grouped as read) before publishing its events
          end to end   N SendMessage intents from P producers through W workers and the recorder, all guarantees on,
                       until every intent is success in the status store; Message rows checked (one per intent)
          latency      M intents offered at R intents/s (open loop); submit → terminal percentiles from the store

        Options:
          --intents N          intents in the ceiling and end-to-end phases (default 20000)
          --producers P        producer threads, each with its own connection (default 2)
          --workers W          in-process WorkerService instances (default 1)
          --concurrency C      handlers at once per worker (default 32)
          --prefetch N         unacked deliveries per worker and in the ceilings (default 2 × C, as in intent-worker)
          --window N           unconfirmed publishes a producer keeps in flight (default 128)
          --rate R             offered intents/s in the latency phase (default 1000)
          --latency-intents M  intents in the latency phase; 0 skips it (default 5000)
          --skip-ceiling       run only the IntentQueue phases
          --ceiling-events N   status events per intent in the ceiling phases: 1 (default) or 2
          --c-ceiling PATH     also run the C ceiling program at PATH (deploy/ceiling.sh builds it and passes it)
          --c-effects          with --c-ceiling and a latency phase: the C pattern at the latency phase's rate with
                               once-only effects too (the floor of IntentQueue's guarantees at that load)
          --scheduling P       batch (default, as in intent-worker) or normal: the Linux scheduling policy of every
                               thread of this process and of the C ceiling program it starts
          --timeout S          seconds each phase may take (default 60 + N/200; latency: 60 + M/R)
          --dir PATH           where the run's SQLite files go (default the temporary folder)
          --json               print one JSON object instead of the table
          --keep               keep the run's SQLite files (its queues and exchanges are deleted either way)
          -h, --help           show this help

        Workers and the recorder run inside this process, on the run's own queues and exchanges
        (intentbench.<time>-<random>.*), so memory and CPU figures are this process's.

        Environment:
          INTENT_BROKER_URL    amqp://user:password@host:port/vhost (default \(BrokerURL.defaultURL))

        SIGINT or SIGTERM stops the running phase; the run's queues and exchanges are deleted and its files removed
        (kept with --keep), and it exits 130 or 143. A second signal exits at once and leaves them.

        Exit codes: 0 done, 1 a phase failed or timed out (or --dir is unusable), 64 usage error, 69 broker unreachable,
        130 / 143 interrupted by SIGINT / SIGTERM.
        """

    var intents: Int
    var producers: Int
    var workers: Int
    var concurrency: Int
    /// Unacked deliveries the broker may send each worker (and the ceilings' consumers) ahead; nil: intent-worker's default.
    var prefetch: Int?
    var window: Int
    var rate: Int
    var latencyIntents: Int
    var skipCeiling: Bool
    var ceilingEvents: Int
    var cCeiling: String?
    var cEffects: Bool
    var timeout: Double?
    var directory: String
    var json: Bool
    var keep: Bool
    var scheduling: CPUScheduling

    static let recorderBatch = 500

    /// Parses and validates; `nil` means `--help` was asked for.
    static func parse(_ words: [String]) throws(UsageError) -> BenchCommand? {
        let arguments = try Arguments(
            words, flags: ["--help", "--skip-ceiling", "--json", "--keep", "--c-effects"],
            options: [
                "--intents", "--producers", "--workers", "--concurrency", "--prefetch", "--window", "--rate", "--latency-intents",
                "--timeout", "--dir", "--ceiling-events", "--c-ceiling", "--scheduling",
            ])
        if arguments.has("--help") { return nil }
        if let extra = arguments.positionals.first { throw UsageError("unexpected argument '\(extra)'") }
        let command = BenchCommand(
            intents: try arguments.integer("--intents", in: 1...10_000_000) ?? 20_000,
            producers: try arguments.integer("--producers", in: 1...64) ?? 2,
            workers: try arguments.integer("--workers", in: 1...64) ?? 1,
            concurrency: try arguments.integer("--concurrency", in: 1...1_000) ?? 32,
            prefetch: try arguments.integer("--prefetch", in: 1...65_535),
            window: try arguments.integer("--window", in: 1...10_000) ?? 128,
            rate: try arguments.integer("--rate", in: 1...1_000_000) ?? 1_000,
            latencyIntents: try arguments.integer("--latency-intents", in: 0...10_000_000) ?? 5_000,
            skipCeiling: arguments.has("--skip-ceiling"),
            ceilingEvents: try arguments.integer("--ceiling-events", in: 1...2) ?? 1, cCeiling: try arguments.value("--c-ceiling"),
            cEffects: arguments.has("--c-effects"), timeout: try arguments.seconds("--timeout"),
            directory: try arguments.value("--dir") ?? FileManager.default.temporaryDirectory.path,
            json: arguments.has("--json"), keep: arguments.has("--keep"), scheduling: try CPUScheduling(arguments))
        if command.skipCeiling, command.cCeiling != nil { throw UsageError("--c-ceiling and --skip-ceiling exclude each other") }
        if command.cEffects, command.cCeiling == nil || command.latencyIntents == 0 {
            throw UsageError("--c-effects needs --c-ceiling and a latency phase (--latency-intents above 0)")
        }
        if command.producers > command.intents {
            throw UsageError("--producers (\(command.producers)) cannot exceed --intents (\(command.intents))")
        }
        return command
    }

    func run() async -> Int32 {
        let start = ProcessMetrics.sample()
        // As intent-worker does, before the services start their threads (which inherit it); the C ceiling, a child
        // process, inherits it too, so that every side of the comparison runs under the same policy.
        if let warning = scheduling.applyOrWarn() { progress(warning) }
        let url: BrokerURL
        do {
            url = try Environment.brokerURL()
        } catch {
            return Terminal.fail(Self.tool, error.description, code: ExitCode.usage)
        }
        do {
            let connection = try AMQPConnection(url: url, connectTimeout: 3, rpcTimeout: 5)
            connection.close()
        } catch {
            return Terminal.fail(
                Self.tool, error.kind == .library ? error.description : "broker unreachable: \(error)",
                code: error.kind == .configuration ? ExitCode.usage : ExitCode.unavailable)
        }
        // From here on a SIGINT or SIGTERM stops the phase and deletes what the run made in the broker.
        Interruption.install()
        let run: BenchRun
        do {
            run = try BenchRun(baseDirectory: directory)
        } catch {
            return Terminal.fail(Self.tool, "cannot create a folder in \(directory): \(error)", code: ExitCode.failed)
        }
        let report: BenchReport
        do {
            report = try measure(url: url, run: run, start: start)
        } catch {
            let failure = BenchError.from(error, phase: Self.tool)
            deleteTopologies(of: run, url: url)
            if Interruption.signal != nil, !keep {
                run.removeDirectory()
                return Terminal.fail(Self.tool, failure.description, code: failure.exitCode)
            }
            return Terminal.fail(Self.tool, "\(failure.description) (files kept in \(run.directory))", code: failure.exitCode)
        }
        Terminal.write(json ? report.json() : report.table())
        if keep {
            progress("kept \(run.directory)")
        } else {
            run.removeDirectory()
        }
        deleteTopologies(of: run, url: url)
        return ExitCode.success
    }

    /// Deletes what the run made in the broker, every phase's, and says how much.
    private func deleteTopologies(of run: BenchRun, url: BrokerURL) {
        let deleted = run.deleteTopologies(url: url)
        progress("deleted the run's \(deleted) queues and exchanges (\(run.name).*) from the broker")
    }

    /// Runs the phases in order and gathers their figures.
    private func measure(url: BrokerURL, run: BenchRun, start: ProcessMetrics) throws -> BenchReport {
        let logger = Logger(label: Self.tool, level: .warning, sink: Terminal.logSink(json: false))
        let prefetch = Int(
            WorkerConfiguration(brokerURL: url, concurrency: concurrency, prefetch: self.prefetch.map { UInt16($0) }).prefetch)
        let phaseTimeout = timeout ?? 60 + Double(intents) / 200
        let broker = BrokerProcess.find(host: url.host, port: url.port)
        var ceiling: PhaseResult?
        var afterCeiling: Int?
        var cCeilingResult: PhaseResult?
        var cCeilingPaced: PhaseResult?
        var cCeilingEffects: PhaseResult?
        if !skipCeiling {
            progress("ceiling: \(intents) messages in IntentQueue's pattern…")
            var pattern = CeilingPhase(
                url: url, topology: try run.topology("ceiling"), intents: intents, producers: producers, window: window,
                prefetch: UInt16(clamping: prefetch), batchSize: Self.recorderBatch, statusEvents: ceilingEvents,
                storePath: run.path("ceiling.sqlite"), timeout: phaseTimeout, broker: broker)
            ceiling = try pattern.run()
            afterCeiling = ProcessMetrics.sample().residentBytes
            if let cCeiling {
                progress("ceiling (C): the same \(intents) messages by \(cCeiling)…")
                pattern.topology = try run.topology("cceiling")
                cCeilingResult = try CCeilingPhase(executable: cCeiling, pattern: pattern, run: run).measure()
                if latencyIntents > 0 {
                    // The pattern's own cost and latency at the latency phase's load: the floor under IntentQueue's.
                    progress("ceiling (C): \(latencyIntents) messages at \(rate)/s…")
                    pattern.topology = try run.topology("cceilingpaced")
                    pattern.intents = latencyIntents
                    pattern.timeout = timeout ?? 60 + Double(latencyIntents) / Double(rate)
                    cCeilingPaced = try CCeilingPhase(executable: cCeiling, pattern: pattern, run: run, rate: Double(rate)).measure()
                    if cEffects {
                        progress("ceiling (C): \(latencyIntents) messages at \(rate)/s, each intent's effect committed before its events…")
                        pattern.topology = try run.topology("cceilingeffects")
                        cCeilingEffects = try CCeilingPhase(
                            executable: cCeiling, pattern: pattern, run: run, rate: Double(rate), effects: true
                        ).measure()
                    }
                }
            }
        }
        progress("end to end: \(intents) intents at full speed, then \(latencyIntents) at \(rate)/s…")
        let outcome = try EndToEndPhase(
            url: url, topology: try run.topology("e2e"), intents: intents, producers: producers, workers: workers,
            concurrency: concurrency, prefetch: UInt16(clamping: prefetch), window: window, rate: Double(rate),
            latencyIntents: latencyIntents,
            timeout: phaseTimeout, latencyTimeout: timeout ?? 60 + Double(latencyIntents) / Double(rate),
            statusPath: run.path("status.sqlite"), appPath: run.path("hairdressers.sqlite"), logger: logger, broker: broker
        ).run()
        let end = ProcessMetrics.sample()
        return BenchReport(
            settings: BenchReport.Settings(
                broker: url.description, brokerPID: broker?.pid, run: run.name, intents: intents, producers: producers,
                workers: workers, concurrency: concurrency, prefetch: prefetch, window: window, rate: Double(rate),
                latencyIntents: latencyIntents, recorderBatch: Self.recorderBatch, ceilingEvents: ceilingEvents,
                scheduling: CPUScheduling.current?.rawValue ?? "mixed"),
            ceiling: ceiling, cCeiling: cCeilingResult, cCeilingPaced: cCeilingPaced,
            cCeilingEffects: cCeilingEffects, endToEnd: outcome.fullSpeed, latency: outcome.fixedLoad,
            memory: BenchReport.Memory(
                start: start.residentBytes, afterCeiling: afterCeiling, servicesReady: outcome.residentReady,
                afterEndToEnd: outcome.residentAfterFullSpeed, afterLatency: outcome.residentAfterFixedLoad,
                end: end.residentBytes,
                // VmHWM can trail VmRSS by a moment: the kernel syncs per-thread counters lazily.
                peak: [
                    end.peakResidentBytes, end.residentBytes, outcome.residentAfterFullSpeed,
                    outcome.residentAfterFixedLoad ?? 0, afterCeiling ?? 0,
                ].max() ?? 0))
    }

    /// A progress line on standard error, so standard output holds only the result.
    private func progress(_ text: String) {
        Terminal.writeError("\(Self.tool): \(text)")
    }
}
