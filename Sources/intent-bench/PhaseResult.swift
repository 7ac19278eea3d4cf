import IntentStore

/// What one phase measured.
struct PhaseResult: Sendable {
    var name: String
    var intents: Int
    /// From the start signal to the last terminal state (or last ledger row) committed.
    var seconds: Double
    /// From the start signal until every producer had its last confirm.
    var submitSeconds: Double
    /// Submit (just before the publish) → the recorder's write of the terminal state into the status store.
    var latency: LatencySummary?
    /// Where that time went, for the end-to-end phases.
    var split: LatencySplit?
    /// CPU of this process during the phase (producers, workers and recorder all run here).
    var processCPUSeconds: Double
    /// Busy CPU of the whole machine during the phase, broker included.
    var machineCPUSeconds: Double
    /// The part of `processCPUSeconds` spent by the workers and the recorder: the
    /// process minus the producer threads and the thread polling the store.
    var servicesCPUSeconds: Double?
    /// CPU of the local broker process during the phase, when it was found.
    var brokerCPUSeconds: Double?
    /// For a paced phase: the offered rate and how far behind schedule a publish fell.
    var offeredRate: Double?
    var maxScheduleLagMilliseconds: Double?
    /// The syncs of this process's SQLite files during the phase (the workers' app database and the recorder's
    /// store): a p99 set by a slow disk shows here as syncs over 20 ms.
    var syncs: Database.SyncTimes?
    /// VmRSS of this process when the phase's last intent was seen done, before
    /// the benchmark read the store for latencies.
    var residentBytesAtEnd: Int?

    var perSecond: Double { seconds > 0 ? Double(intents) / seconds : 0 }

    /// CPU seconds per 1,000 intents.
    func perThousand(_ seconds: Double) -> Double { intents > 0 ? seconds * 1000 / Double(intents) : 0 }
}
