import Foundation
import IntentAMQP
import IntentKit
import IntentStore

/// Phases 2 and 3: SendMessage intents through IntentQueue with every guarantee
/// on — in-process workers and recorder, producers with `IntentPublisher` — first
/// at full speed, then paced at a fixed offered rate for latency.
struct EndToEndPhase {
    var url: BrokerURL
    var topology: Topology
    var intents: Int
    var producers: Int
    var workers: Int
    var concurrency: Int
    var prefetch: UInt16
    var window: Int
    var rate: Double
    var latencyIntents: Int
    var timeout: Double
    var latencyTimeout: Double
    var statusPath: String
    var appPath: String
    var logger: Logger
    var broker: BrokerProcess?

    struct Outcome {
        var fullSpeed: PhaseResult
        var fixedLoad: PhaseResult?
        /// VmRSS with the services connected and idle, after phase 2 and after phase 3.
        var residentReady: Int
        var residentAfterFullSpeed: Int
        var residentAfterFixedLoad: Int?
    }

    func run() throws -> Outcome {
        let services: InProcessServices
        do {
            services = try InProcessServices(
                url: url, topology: topology, workers: workers, concurrency: concurrency, prefetch: prefetch,
                statusPath: statusPath,
                appPath: appPath, logger: logger)
        } catch {
            throw BenchError.failed("end to end: cannot open the Hairdressers database at \(appPath): \(error)")
        }
        services.start()
        defer {
            if !services.stop(timeout: 10) { logger.warning("the in-process services did not stop within 10 s") }
        }
        try services.waitUntilConnected(control: PhaseControl(phase: "end to end set-up", timeout: 30))
        let probe = StoreProbe(statusPath: statusPath, appPath: appPath)
        let ready = ProcessMetrics.sample().residentBytes

        let (fullSpeed, fullIDs) = try load(
            "end to end", count: intents, rate: nil, before: 0, timeout: timeout,
            probe: probe, services: services)
        try probe.verifyEffects(ids: fullIDs, phase: "end to end")
        var outcome = Outcome(
            fullSpeed: fullSpeed, residentReady: ready,
            residentAfterFullSpeed: fullSpeed.residentBytesAtEnd ?? ProcessMetrics.sample().residentBytes)
        if latencyIntents > 0 {
            let (fixedLoad, fixedIDs) = try load(
                "latency", count: latencyIntents, rate: rate, before: intents, timeout: latencyTimeout, probe: probe, services: services)
            try probe.verifyEffects(ids: fullIDs + fixedIDs, phase: "latency")
            outcome.fixedLoad = fixedLoad
            outcome.residentAfterFixedLoad = fixedLoad.residentBytesAtEnd
        }
        return outcome
    }

    /// Submits `count` new intents and waits until the store shows them all `success`
    /// (`before` intents of earlier phases are already there).
    private func load(
        _ name: String, count: Int, rate: Double?, before: Int, timeout: Double, probe: StoreProbe,
        services: InProcessServices
    ) throws -> (PhaseResult, [String]) {
        let control = PhaseControl(phase: name, timeout: timeout)
        let ids = (0..<count).map { _ in Workload.newID() }
        let parts = min(producers, count)
        let gate = StartGate()
        // Interleaved, so that paced producers together offer the intents in order.
        let threads = (0..<parts).map { part in
            let own = stride(from: part, to: count, by: parts).map { ids[$0] }
            let pacing = rate.map { IntentProducer.Pacing(rate: $0, offset: part, stride: parts) }
            return BenchThread(name: "\(name) producer \(part + 1)") { [self] in
                try IntentProducer(url: url, topology: topology, ids: own, window: window, pacing: pacing)
                    .run(gate: gate, control: control)
            }
        }
        try gate.waitForArrivals(threads.count, threads: threads, control: control)

        let metricsBefore = ProcessMetrics.sample(broker: broker)
        let probeCPUBefore = ProcessMetrics.threadCPUSeconds()
        let syncsBefore = Database.syncTimes
        Database.resetSlowestSync()
        let start = gate.open()
        try probe.waitForSuccess(total: before + count, phaseCount: count, control: control, threads: threads, services: services)
        let syncs = Database.syncTimes.since(syncsBefore)
        let probeCPU = ProcessMetrics.threadCPUSeconds() - probeCPUBefore
        let metricsAfter = ProcessMetrics.sample(broker: broker)
        let used = metricsAfter.since(metricsBefore)
        try control.join(threads)

        let timings = try probe.timings()
        let storedTimes = services.stored.take(ids)
        // Latency runs to the recorder's write of the terminal state (from then on a reader sees it), as the C
        // pattern's runs to its status event's commit; the split says where the time went.
        var latencies: [Double] = []
        var toStart: [Double] = []
        var running: [Double] = []
        var toStore: [Double] = []
        latencies.reserveCapacity(count)
        var lastStored = start.timeIntervalSince1970
        for id in ids {
            guard let timing = timings[id], let submitted = timing.submitted, let finished = timing.finished else {
                throw BenchError.failed("\(name): intent \(id) has no submitted_at/finished_at in the status store")
            }
            guard let stored = storedTimes[id] else {
                throw BenchError.failed("\(name): the recorder never reported writing intent \(id)'s outcome")
            }
            latencies.append(stored - submitted)
            if let started = timing.started {
                toStart.append(started - submitted)
                running.append(finished - started)
            }
            toStore.append(stored - finished)
            lastStored = max(lastStored, stored)
        }
        let reports = threads.compactMap(\.value)
        let producersCPU = reports.map(\.cpuSeconds).reduce(0, +)
        let submitted = reports.map(\.finished).max() ?? start
        var result = PhaseResult(
            name: name, intents: count, seconds: lastStored - start.timeIntervalSince1970,
            submitSeconds: submitted.timeIntervalSince(start), latency: LatencySummary(seconds: latencies),
            processCPUSeconds: used.cpuSeconds, machineCPUSeconds: used.machineBusySeconds,
            servicesCPUSeconds: max(0, used.cpuSeconds - producersCPU - probeCPU), brokerCPUSeconds: used.brokerCPUSeconds)
        result.residentBytesAtEnd = metricsAfter.residentBytes
        result.syncs = syncs
        if let toStart = LatencySummary(seconds: toStart), let running = LatencySummary(seconds: running),
            let toStore = LatencySummary(seconds: toStore)
        {
            result.split = LatencySplit(toStart: toStart, running: running, toStore: toStore)
        }
        if let rate {
            result.offeredRate = rate
            result.maxScheduleLagMilliseconds = (reports.map(\.maxLagSeconds).max() ?? 0) * 1000
        }
        return (result, ids)
    }
}
