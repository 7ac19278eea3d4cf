import Foundation
import IntentAMQP
import IntentKit

/// How a worker connects and how much it does at once.
public struct WorkerConfiguration: Sendable {
    /// The broker the worker consumes intents from and publishes status events to.
    public var brokerURL: BrokerURL
    /// The exchanges and queues the worker declares and uses.
    public var topology: Topology
    /// Handlers running at the same time.
    public var concurrency: Int
    /// Unacked deliveries the broker may send ahead from each work queue; at least `concurrency`. The normal and the
    /// high-priority queue each have a consumer, and RabbitMQ counts the prefetch per consumer: while both hold work,
    /// a worker has up to twice this in hand.
    public var prefetch: UInt16
    /// Seconds; heartbeats keep a connection alive (and detect a dead one) while handlers run.
    public var heartbeat: Int
    /// Written into every status event.
    public var workerName: String
    /// Larger message bodies are refused as `invalidIntent` without being parsed.
    public var maxBodyBytes: Int
    /// The largest status event a worker publishes (the broker takes 16 MiB).
    public var maxEventBytes = 1 << 20
    /// Seconds a run's `inProgress` event waits before it is published: a run
    /// that reaches its outcome sooner publishes the outcome alone (with the
    /// run's `startedAt`), which halves the status events of quick intents.
    /// 0 publishes it at once. The deadline thread looks every 20 ms, so it goes
    /// out up to 20 ms after the delay.
    public var startedEventDelay = WorkerConfiguration.defaultStartedEventDelay
    /// 20 ms: longer than most quick runs take, short enough that `watch` sees a slow one start at once.
    public static let defaultStartedEventDelay = 0.02
    /// Seconds between renewals of the claims of the runs going on, in a ledger without the effects (see
    /// `OutcomeLedger.renewClaim`): 5 minutes, and at most that (a third of a claim's 15-minute lifetime), so that
    /// a run that lasts longer keeps its claim through a failed renewal or two.
    public var claimRenewal = 300.0
    /// Where the fault-injection suite may kill the worker (off by default).
    public var faults: FaultInjection
    /// Broker users whose submissions of restricted types are handled.
    public var allowedUsers: Set<String> = []
    /// Broker users who may act on any intent (answer, confirm, deny, cancel, requeue).
    public var operators: Set<String> = []
    /// Broker users of the recorder and of other workers: they may send expiry
    /// requests, and their republished intents name the owner in a header. The
    /// worker's own user is always trusted.
    public var trustedUsers: Set<String> = []
    /// Time limits per intent type, in seconds, overriding the handlers' own.
    public var timeLimits: [String: Double] = [:]
    /// Limits of intents running at once per owner, by type, overriding the handlers' own.
    public var concurrencyLimits: [String: ConcurrencyLimit] = [:]
    /// Limits of intents starting within a window per owner, by type, overriding the handlers' own.
    public var rateLimits: [String: RateLimit] = [:]
    /// Where handled intents, retries and handle durations are counted, when metrics are on.
    public var metrics: Metrics?
    /// The ledger for the types whose handlers bring none; nil opens one at `outcomesPath`.
    public var ledger: (any OutcomeLedger)?
    /// The worker's own ledger file, used when a handler keeps no database.
    public var outcomesPath: String = WorkerConfiguration.defaultOutcomesPath
    /// Seconds a decided intent is remembered in its ledger (`OutcomeLedger.forgetDecided`); nil remembers every
    /// one for good. Within it a copy of an intent's submission (a producer's retry, a deduplicated submission, a
    /// requeued dead letter) only has the outcome published again; after it, the copy runs as a new intent. Keep it
    /// longer than the status store's retention, than the deduplication windows producers use, and than any copy may
    /// come late. The worker keeps decisions at least an hour more than the longest time limit of a type it serves.
    public var ledgerRetention: Double? = WorkerConfiguration.defaultLedgerRetention
    /// 31 days: a day more than the longest deduplication window (30 days).
    public static let defaultLedgerRetention: Double = 31 * 86_400
    /// Seconds between two passes over the ledgers (each a step of at most 500 intents every 100 ms).
    public var ledgerForgetPause: Double = 60

    /// A configuration with the usual defaults; `concurrency` is at least 1, and `prefetch` is by default twice it, never less than it.
    public init(
        brokerURL: BrokerURL, topology: Topology = Topology(), concurrency: Int = 8, prefetch: UInt16? = nil,
        heartbeat: Int = 30, workerName: String = WorkerConfiguration.defaultName, maxBodyBytes: Int = 1 << 20,
        faults: FaultInjection = .none
    ) {
        self.brokerURL = brokerURL
        self.topology = topology
        self.concurrency = max(1, concurrency)
        self.prefetch = max(prefetch ?? UInt16(clamping: self.concurrency * 2), UInt16(clamping: self.concurrency))
        self.heartbeat = heartbeat
        self.workerName = workerName
        self.maxBodyBytes = maxBodyBytes
        self.faults = faults
    }

    /// `outcomes.sqlite` in `~/.local/state/intentqueue`.
    public static var defaultOutcomesPath: String {
        FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/state/intentqueue/outcomes.sqlite").path
    }

    /// `host:pid`, the worker's name in its status events unless one is given.
    public static var defaultName: String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    }
}
