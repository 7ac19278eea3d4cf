import Foundation
import IntentAMQP
import IntentKit
import IntentStore

/// Submits the intents of the recurring schedules the status store keeps
/// (`intent-status schedule`). It reads them from the recorder every couple
/// of seconds and, at each due time, publishes the schedule's intent as its
/// owner's (the owner in a header, which workers believe from a trusted user),
/// under the id `<name>@<due time>`: so any number of schedulers may run —
/// two for when one is down — and one restarted submits the due times it
/// missed in the last `catchUp` seconds without submitting any twice
/// (a resubmitted id never repeats its effects, and the store holds one intent).
public final class Scheduler: Service {
    /// Where the schedules are read and their intents published, and how far back a start catches up.
    public struct Configuration: Sendable {
        /// The broker the recorder answers on and the intents are published to.
        public var brokerURL: BrokerURL
        /// The exchanges and queues, the same as the workers'.
        public var topology: Topology
        /// Seconds between two readings of the schedules.
        public var refresh: Double = 2
        /// Due times at most this many seconds old are still submitted (after a restart, say).
        public var catchUp: Double = 60

        /// A scheduler of `brokerURL`, reading every 2 s and catching up 60 s.
        public init(brokerURL: BrokerURL, topology: Topology = Topology()) {
            self.brokerURL = brokerURL
            self.topology = topology
        }
    }

    private let configuration: Configuration
    private let logger: Logger
    private let stopping = StopRequest()

    /// A scheduler with these settings; nothing is connected until `run()`.
    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger.with(["component": "scheduler"])
    }

    /// Reads the schedules and submits their intents on a thread of its own until `stop()`.
    public func run() async throws {
        try await runOnThread(named: "iq-scheduler") { [self] in runThread() }
    }

    /// Asks the scheduler to return from `run()`; returns at once.
    public func stop() {
        stopping.request()
    }

    private func runThread() {
        var schedules: [Schedule] = []
        var readAt = 0.0
        var requester: StatusRequester?
        var connection: AMQPConnection?
        // The ids this process has submitted, with their due times (forgotten once past the catch-up).
        var submitted: [String: Double] = [:]
        // For schedules read from a store that does not say since when each is active (`Schedule.activeSince`):
        // whether each was paused when last read (empty before the first reading), and since when the ones made or
        // resumed since then are active: the due times before that are not caught up on (those of a pause are
        // skipped, as a paused schedule promises). A restarted scheduler catches up on every such schedule.
        var pausedWhenRead: [String: Bool] = [:]
        var activeSince: [String: Double] = [:]
        // The latest due time of each schedule this process submitted (or skipped, when nothing served its type).
        var lastDue: [String: Double] = [:]
        var firstReading = true
        logger.info("scheduler starting")
        while !stopping.isRequested {
            let now = Date().timeIntervalSince1970
            // Also when the wall clock was stepped back past the last reading: else none would come until it caught up.
            if now - readAt >= configuration.refresh || now < readAt {
                readAt = now
                do {
                    let asking = try requester ?? StatusRequester(url: configuration.brokerURL, topology: configuration.topology)
                    requester = asking
                    guard case .schedules(let read) = try StatusQuery.decodeReply(try asking.ask(StatusQuery.schedules.encoded, timeout: 5))
                    else { throw StatusQuery.Invalid(description: "the recorder did not answer with schedules") }
                    schedules = read
                    for schedule in read where !schedule.paused {
                        let was = pausedWhenRead[schedule.name]
                        if was == true || (was == nil && !firstReading) { activeSince[schedule.name] = now }
                    }
                    pausedWhenRead = Dictionary(read.map { ($0.name, $0.paused) }, uniquingKeysWith: { first, _ in first })
                    activeSince = activeSince.filter { pausedWhenRead[$0.key] != nil }
                    firstReading = false
                } catch {
                    logger.warning("cannot read the schedules (the recorder answers them): \(error); keeping the last ones read")
                    requester?.close()
                    requester = nil
                }
            }
            submitting: for schedule in schedules where !schedule.paused {
                let round = Self.dueNow(
                    schedule, now: now, catchUp: configuration.catchUp, seenActiveSince: activeSince[schedule.name], lastDue: lastDue[schedule.name])
                for due in round.due {
                    let id = schedule.intentID(dueAt: due)
                    guard submitted[id] == nil else { continue }
                    do {
                        let live = try connection ?? Self.connect(configuration.brokerURL)
                        connection = live
                        try publish(schedule, id: id, on: live)
                        if round.missed > 0, due == round.due.first {
                            logger.warning(
                                "\(round.missed) due times of \(schedule.name) passed while this scheduler could not submit, longer ago than its catch-up (\(JSONValue.formatNumber(configuration.catchUp)) s): only the latest of them is submitted",
                                metadata: ["intent.id": id])
                        }
                    } catch let error as AMQPError where error.kind == .unroutable {
                        // Nothing serves the type now: this due time is skipped, and said so.
                        logger.warning(
                            "no worker serves \(schedule.type): the intent of \(schedule.name) due now is not submitted", metadata: ["intent.id": id])
                    } catch {
                        // Not connected: the next schedule would try again at once, each a connect timeout, and a
                        // reading or a stop would wait behind them all. Tried again in the next round.
                        logger.warning("cannot submit \(id) yet: \(error)")
                        connection?.close()
                        connection = nil
                        break submitting
                    }
                    // Submitted, or skipped as unserved: not submitted again, and counted from in an outage.
                    submitted[id] = due
                    lastDue[schedule.name] = max(lastDue[schedule.name] ?? due, due)
                }
            }
            submitted = submitted.filter { $0.value > now - configuration.catchUp - 1 }
            lastDue = lastDue.filter { pausedWhenRead[$0.key] != nil }
            // Until the next due time, or the next reading.
            let next = schedules.filter { !$0.paused }.compactMap { $0.dueTimes(after: now, upTo: now + configuration.refresh, limit: 1).first }.min()
            // Never longer than a reading's interval, whatever a stepped clock makes of the difference.
            let until = min(readAt + configuration.refresh, next ?? .infinity) - Date().timeIntervalSince1970
            stopping.pause(max(0.001, min(configuration.refresh, until)))
        }
        requester?.close()
        connection?.close()
        logger.info("scheduler stopped")
    }

    /// The time after which `schedule`'s due times are submitted at `now`: at most `catchUp` seconds back, and from
    /// when the store made or resumed it on (a schedule a scheduler first read after its first due time lost that
    /// time, and one restarted caught up on the due times of a pause just ended). A store older than the schedule's
    /// `activeSince` gives none: then from when this scheduler saw it made or resumed (`seenActiveSince`). Due
    /// times are counted to the millisecond, and one at `activeSince` itself is submitted.
    static func countedFrom(_ schedule: Schedule, now: Double, catchUp: Double, seenActiveSince: Double?) -> Double {
        let since = schedule.activeSince.map { $0 - 0.001 } ?? seenActiveSince ?? -.infinity
        return max(now - catchUp, since)
    }

    /// The due times of `schedule` to submit at `now`: those after `countedFrom`, and, when this scheduler submitted
    /// one before (`lastDue`) and then could not for longer than the catch-up (the broker or the recorder was away),
    /// the latest of the due times it missed in between, first, with how many it missed (the others are not
    /// submitted: a schedule that runs every minute does not run an hour's runs at once after an outage). Due times
    /// of a pause are never missed ones.
    static func dueNow(
        _ schedule: Schedule, now: Double, catchUp: Double, seenActiveSince: Double?, lastDue: Double?
    ) -> (due: [Double], missed: Int) {
        let from = countedFrom(schedule, now: now, catchUp: catchUp, seenActiveSince: seenActiveSince)
        let due = schedule.dueTimes(after: from, upTo: now)
        let since = schedule.activeSince.map { $0 - 0.001 } ?? seenActiveSince ?? -.infinity
        guard let lastDue, schedule.every > 0, schedule.every.isFinite else { return (due, 0) }
        let after = max(lastDue, since)
        guard after < from else { return (due, 0) }
        // The due times in (after, from], counted without listing them: starts + k × every.
        let first = ((after - schedule.starts) / schedule.every).rounded(.down) + 1
        let last = ((from - schedule.starts) / schedule.every).rounded(.down)
        guard last >= max(first, 0), last.isFinite else { return (due, 0) }
        let latest = schedule.starts + last * schedule.every
        guard latest > after, latest <= from else { return (due, 0) }
        return ([latest] + due, Int(min(last - max(first, 0) + 1, Double(Int.max / 2))))
    }

    private static func connect(_ url: BrokerURL) throws(AMQPError) -> AMQPConnection {
        let connection = try AMQPConnection(url: url, heartbeat: 30, connectTimeout: 3, rpcTimeout: 5)
        try connection.enableConfirms()
        return connection
    }

    private func publish(_ schedule: Schedule, id: String, on connection: AMQPConnection) throws(AMQPError) {
        let envelope = IntentEnvelope(
            id: id, type: schedule.type, parameters: schedule.parameters, submittedAt: Date().timeIntervalSince1970, lenientParameters: true)
        var message = IntentPublisher.message(for: envelope, topology: configuration.topology, userID: connection.url.user)
        // A schedule kept without an owner (none is made so now) submits as no one, not as this worker.
        Topology.name(owner: schedule.owner, trusted: false, in: &message.headers)
        try connection.publishConfirmed([message], timeout: 5, context: "submitting \(id)") { returned in
            AMQPError(.unroutable, context: "submitting \(id)", detail: "no worker serves intent type '\(returned.routingKey)'")
        }
    }
}
