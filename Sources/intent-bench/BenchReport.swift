import Foundation
import IntentKit

/// The figures of one run, as one table for people or one JSON object for machines.
struct BenchReport {
    struct Settings {
        var broker: String
        /// The local broker process whose CPU is reported, if found.
        var brokerPID: Int32?
        var run: String
        var intents: Int
        var producers: Int
        var workers: Int
        var concurrency: Int
        var prefetch: Int
        var window: Int
        var rate: Double
        var latencyIntents: Int
        var recorderBatch: Int
        var ceilingEvents: Int
        /// The scheduling policy of this process's threads at the end of the run (`CPUScheduling`), or "mixed".
        var scheduling: String
    }

    /// VmRSS samples of this process, bytes.
    struct Memory {
        var start: Int
        var afterCeiling: Int?
        var servicesReady: Int
        var afterEndToEnd: Int
        var afterLatency: Int?
        var end: Int
        var peak: Int
    }

    var settings: Settings
    var ceiling: PhaseResult?
    /// The same pattern by the independent C program, when it ran.
    var cCeiling: PhaseResult?
    /// The C program again at the latency phase's offered rate.
    var cCeilingPaced: PhaseResult?
    /// The C program at that rate with each intent's effect committed before its events (`--c-effects`).
    var cCeilingEffects: PhaseResult?
    var endToEnd: PhaseResult
    var latency: PhaseResult?
    var memory: Memory

    static let latencyMode =
        "open loop: each producer sleeps until its intent's scheduled time and never waits for an earlier intent; "
        + "windowed IntentPublisher.submit, so a confirm wait never delays the next publish"

    /// Every phase that ran, in the order they ran.
    var phases: [PhaseResult] { [ceiling, cCeiling, cCeilingPaced, cCeilingEffects, endToEnd, latency].compactMap { $0 } }

    var ratio: Double? { ceiling.map { $0.perSecond > 0 ? endToEnd.perSecond / $0.perSecond : 0 } }

    /// The Swift ceiling against the C one: 1 means the ceiling phase costs nothing of its own.
    var ceilingMatch: Double? {
        guard let ceiling, let cCeiling, cCeiling.perSecond > 0 else { return nil }
        return ceiling.perSecond / cCeiling.perSecond
    }

    // MARK: - Human

    func table() -> String {
        let s = settings
        var lines = [
            "intent-bench \(s.run) on \(s.broker)",
            "\(s.intents) intents, \(s.producers) producer(s) with confirm window \(s.window), \(s.workers) worker(s) × concurrency \(s.concurrency) "
                + "(prefetch \(s.prefetch)), recorder batch \(s.recorderBatch), \(s.ceilingEvents) status event(s) per intent in the ceiling; "
                + "workers and recorder run in this process; scheduling \(s.scheduling)",
            "",
            row(["phase", "intents", "seconds", "intents/s", "p50 ms", "p95 ms", "p99 ms", "max ms"]),
        ]
        for phase in phases {
            let paced =
                switch phase.name {
                case CCeilingPhase.pacedName: "C ceiling"
                case CCeilingPhase.effectsName: "C + effects"
                default: "latency"
                }
            let title = phase.offeredRate.map { "\(paced) @ \(Self.number($0, 0))/s" } ?? phase.name
            let latency = phase.latency.map { [$0.p50, $0.p95, $0.p99, $0.max].map { Self.number($0, 1) } } ?? Array(repeating: "-", count: 4)
            lines.append(row([title, "\(phase.intents)", Self.number(phase.seconds, 3), Self.number(phase.perSecond, 1)] + latency))
        }
        lines.append("")
        if let ratio {
            lines.append("ratio end to end / ceiling: \(Self.number(ratio, 2)) (target ≥ 0.60)")
        }
        if let ceilingMatch {
            lines.append("ceiling / C ceiling: \(Self.number(ceilingMatch, 2)) (within 10 % when 0.90–1.10)")
        }
        if let latency, let summary = latency.latency {
            lines.append(
                "p99 at \(Self.number(s.rate, 0)) intents/s offered: \(Self.number(summary.p99, 1)) ms (target ≤ 10 ms); "
                    + "max lag behind schedule \(Self.number(latency.maxScheduleLagMilliseconds ?? 0, 1)) ms")
            lines.append(
                "latency = submitted_at (just before the publish) → the recorder's write of the terminal state into the status store "
                    + "(the C pattern's: → its status event's commit); fixed load is \(Self.latencyMode)")
        }
        for phase in [endToEnd, latency].compactMap({ $0 }) {
            guard let split = phase.split else { continue }
            func legs(_ summary: LatencySummary) -> String { "\(Self.number(summary.p50, 1)) / \(Self.number(summary.p99, 1))" }
            lines.append(
                "  \(phase.name), p50 / p99 ms: submitted → started \(legs(split.toStart)), started → finished \(legs(split.running)), "
                    + "finished → in the store \(legs(split.toStore))")
        }
        for phase in [endToEnd, latency].compactMap({ $0 }) {
            guard let syncs = phase.syncs else { continue }
            lines.append(
                "  \(phase.name), SQLite syncs (workers' database and store): \(syncs.count), "
                    + "\(Self.number(syncs.seconds * 1000 / Double(max(syncs.count, 1)), 2)) ms on average, \(syncs.over5ms) over 5 ms, "
                    + "\(syncs.over20ms) over 20 ms, the slowest \(Self.number(syncs.slowestSeconds * 1000, 1)) ms")
        }
        let m = memory
        var memoryParts = ["start \(Self.mb(m.start))"]
        if let afterCeiling = m.afterCeiling { memoryParts.append("after ceiling \(Self.mb(afterCeiling))") }
        memoryParts.append("services ready \(Self.mb(m.servicesReady))")
        memoryParts.append("after end to end \(Self.mb(m.afterEndToEnd))")
        if let afterLatency = m.afterLatency { memoryParts.append("after latency \(Self.mb(afterLatency))") }
        memoryParts += ["end \(Self.mb(m.end))", "peak \(Self.mb(m.peak))"]
        lines.append("memory (VmRSS of this process: producers, workers, recorder): " + memoryParts.joined(separator: ", "))
        let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
        lines.append(
            "cpu (user+sys) s per 1,000 intents — this process [workers + recorder] / broker\(s.brokerPID.map { " (pid \($0))" } ?? "") / whole machine:"
        )
        for phase in phases {
            let broker = phase.brokerCPUSeconds.map { Self.number(phase.perThousand($0), 3) } ?? "?"
            let services = phase.servicesCPUSeconds.map { " [\(Self.number(phase.perThousand($0), 3))]" } ?? ""
            lines.append(
                "  \(phase.name): \(Self.number(phase.perThousand(phase.processCPUSeconds), 3))\(services) / \(broker) / "
                    + "\(Self.number(phase.perThousand(phase.machineCPUSeconds), 3)) of \(Self.number(phase.perThousand(phase.seconds * cores), 3)) available "
                    + "(\(Int(cores)) cores)")
        }
        let submits = [ceiling, endToEnd].compactMap { $0 }.map { "\($0.name) \(Self.number($0.submitSeconds, 3)) s" }
        lines.append("producers done (last confirm): " + submits.joined(separator: ", "))
        return lines.joined(separator: "\n")
    }

    private func row(_ cells: [String]) -> String {
        let widths = [21, 8, 9, 11, 9, 9, 9, 9]
        return zip(cells, widths).enumerated().map { index, pair in
            let (cell, width) = pair
            let padding = String(repeating: " ", count: max(0, width - cell.count))
            return index == 0 ? cell + padding : padding + cell
        }.joined()
    }

    static func number(_ value: Double, _ decimals: Int) -> String {
        String(format: "%.\(decimals)f", value)
    }

    static func mb(_ bytes: Int) -> String {
        number(ProcessMetrics.megabytes(bytes), 1) + " MB"
    }

    // MARK: - JSON

    func json() -> String {
        let s = settings
        var object: [String: JSONValue] = [
            "broker": .string(s.broker),
            "run": .string(s.run),
            "settings": .object([
                "intents": .number(Double(s.intents)), "producers": .number(Double(s.producers)),
                "workers": .number(Double(s.workers)), "concurrency": .number(Double(s.concurrency)),
                "prefetch": .number(Double(s.prefetch)), "window": .number(Double(s.window)),
                "rate": .number(s.rate), "latencyIntents": .number(Double(s.latencyIntents)),
                "recorderBatch": .number(Double(s.recorderBatch)), "servicesInProcess": true,
                "ceilingEvents": .number(Double(s.ceilingEvents)), "scheduling": .string(s.scheduling),
            ]),
            "endToEnd": Self.json(endToEnd),
            "memoryMB": .object(memoryJSON),
            "cpuSecondsPer1000": .object([
                "endToEndProcess": Self.rounded(endToEnd.perThousand(endToEnd.processCPUSeconds)),
                "endToEndWorkersAndRecorder": endToEnd.servicesCPUSeconds.map { Self.rounded(endToEnd.perThousand($0)) } ?? .null,
                "endToEndBroker": endToEnd.brokerCPUSeconds.map { Self.rounded(endToEnd.perThousand($0)) } ?? .null,
                "endToEndMachine": Self.rounded(endToEnd.perThousand(endToEnd.machineCPUSeconds)),
            ]),
            "brokerPid": s.brokerPID.map { .number(Double($0)) } ?? .null,
        ]
        if let ceiling {
            object["ceiling"] = Self.json(ceiling)
            object["ratio"] = ratio.map { Self.rounded($0) } ?? .null
        }
        if let cCeiling {
            object["cCeiling"] = Self.json(cCeiling)
            object["ceilingMatch"] = ceilingMatch.map { Self.rounded($0) } ?? .null
        }
        if let cCeilingPaced { object["cCeilingPaced"] = Self.json(cCeilingPaced) }
        if let cCeilingEffects { object["cCeilingEffects"] = Self.json(cCeilingEffects) }
        if let latency {
            object["latency"] = Self.json(latency)
            object["latencyMode"] = .string(Self.latencyMode)
        }
        return JSONValue.object(object).jsonString
    }

    private static func rounded(_ value: Double, _ scale: Double = 1000) -> JSONValue {
        .number((value * scale).rounded() / scale)
    }

    private var memoryJSON: [String: JSONValue] {
        func value(_ bytes: Int?) -> JSONValue { bytes.map { Self.rounded(ProcessMetrics.megabytes($0), 10) } ?? .null }
        return [
            "start": value(memory.start), "afterCeiling": value(memory.afterCeiling), "servicesReady": value(memory.servicesReady),
            "afterEndToEnd": value(memory.afterEndToEnd), "afterLatency": value(memory.afterLatency),
            "end": value(memory.end), "peak": value(memory.peak),
        ]
    }

    private static func json(_ phase: PhaseResult) -> JSONValue {
        func round(_ value: Double, _ scale: Double = 1000) -> JSONValue { rounded(value, scale) }
        var object: [String: JSONValue] = [
            "intents": .number(Double(phase.intents)),
            "seconds": round(phase.seconds),
            "perSecond": round(phase.perSecond, 10),
            "submitSeconds": round(phase.submitSeconds),
            "processCpuSeconds": round(phase.processCPUSeconds),
            "workersAndRecorderCpuSeconds": phase.servicesCPUSeconds.map { round($0) } ?? .null,
            "machineCpuSeconds": round(phase.machineCPUSeconds),
            "brokerCpuSeconds": phase.brokerCPUSeconds.map { round($0) } ?? .null,
        ]
        if let latency = phase.latency {
            object["latencyMs"] = .object([
                "p50": round(latency.p50), "p95": round(latency.p95), "p99": round(latency.p99), "max": round(latency.max),
            ])
        }
        if let split = phase.split {
            func legs(_ summary: LatencySummary) -> JSONValue { .object(["p50": round(summary.p50), "p99": round(summary.p99)]) }
            object["latencySplitMs"] = .object([
                "toStart": legs(split.toStart), "running": legs(split.running), "toStore": legs(split.toStore),
            ])
        }
        if let syncs = phase.syncs {
            object["syncs"] = .object([
                "count": .number(Double(syncs.count)), "over5ms": .number(Double(syncs.over5ms)),
                "over20ms": .number(Double(syncs.over20ms)), "seconds": round(syncs.seconds),
                "slowestMs": round(syncs.slowestSeconds * 1000),
            ])
        }
        if let rate = phase.offeredRate { object["offeredRate"] = .number(rate) }
        if let lag = phase.maxScheduleLagMilliseconds { object["maxScheduleLagMs"] = round(lag) }
        return .object(object)
    }
}
