import Foundation
import IntentAMQP
import IntentKit
import IntentStore

/// A client of IntentQueue: submits intents, reads and waits for their
/// status, answers their questions, cancels them, deletes what is stored
/// about them and follows their events — from any machine that reaches the
/// broker. Statuses are read from the store file when this machine has it,
/// or asked of the recorder over the broker; either way a read after a wait
/// never reports less than the wait did (see `StatusWaiter`).
///
/// Only the recorder writes the status store: a delete is a request it
/// carries out. Calls block their thread (each opens its own connections).
///
/// ```swift
/// let client = IntentClient(brokerURL: try BrokerURL.fromEnvironment())
/// let envelope = try IntentEnvelope(order)
/// let status = try client.submit(envelope, waitingUpTo: 30)
/// if status?.state == .needsInput {
///     _ = try client.submit(try client.confirmation(id: envelope.id), waitingUpTo: 30)
/// }
/// ```
public final class IntentClient: Sendable {
    /// Where statuses are read.
    public enum StatusSource: Sendable, Hashable {
        /// The recorder's store file, on this machine.
        case local(path: String)
        /// The recorder, asked over the broker.
        case remote
    }

    /// The broker the client connects to; its user owns what the client submits.
    public let brokerURL: BrokerURL
    /// Where the client reads statuses: the store file or the recorder.
    public let source: StatusSource
    /// The exchanges and queues the client publishes to and listens on.
    public let topology: Topology

    /// A client of the broker at `brokerURL`; nothing connects until a call needs it.
    /// - Parameters:
    ///   - brokerURL: the broker, and the user the client acts as.
    ///   - source: where statuses are read; by default the recorder, over the broker.
    ///   - topology: the exchanges and queues, when not the default ones.
    public init(brokerURL: BrokerURL, source: StatusSource = .remote, topology: Topology = Topology()) {
        self.brokerURL = brokerURL
        self.source = source
        self.topology = topology
    }

    /// The store file at `path` when this machine has one, else the recorder.
    public static func source(storePath path: String) -> StatusSource {
        FileManager.default.fileExists(atPath: path) ? .local(path: path) : .remote
    }

    /// The broker user the client acts as: the owner of what it submits.
    public var user: String { brokerURL.user }

    // MARK: Reading

    /// What the store knows about one intent (another owner's reads as unknown,
    /// or as this user's refused message about it); nil when nothing.
    public func status(id: String) throws(IntentClientError) -> IntentStatus? {
        guard case .status(let status) = try answer(.show(id: id)) else { throw .unexpectedAnswer("one intent") }
        return status
    }

    /// The most recently updated intents (this user's own, unless an operator).
    public func list(state: IntentState? = nil, type: String? = nil, limit: Int = 50) throws(IntentClientError) -> [IntentStatus] {
        guard case .statuses(let statuses) = try answer(.list(state: state, type: type, limit: limit)) else { throw .unexpectedAnswer("a list") }
        return statuses
    }

    /// The intents the broker dead-lettered (operators only, when remote).
    public func deadLetters(limit: Int = 50) throws(IntentClientError) -> [IntentStatus] {
        guard case .statuses(let statuses) = try answer(.dead(limit: limit)) else { throw .unexpectedAnswer("a list") }
        return statuses
    }

    /// How many intents there are of each type in each state (this user's own, unless an operator).
    public func tally() throws(IntentClientError) -> [StatusQuery.Tally] {
        guard case .tally(let lines) = try answer(.tally) else { throw .unexpectedAnswer("a tally") }
        return lines
    }

    /// Waits up to `timeout` seconds until `done` holds (by default: the
    /// intent ends or asks a question), woken by its status events; returns
    /// the last status read (nil: never seen).
    public func wait(
        id: String, timeout: Double, until done: (IntentStatus) -> Bool = StatusWaiter.answeredOrEnded
    ) throws(IntentClientError) -> IntentStatus? {
        let deadline = Date().addingTimeInterval(timeout)
        // Whose events to follow (an operator may wait for anyone's intent): asked within the wait's own time.
        let owner: String?
        switch source {
        case .local: owner = (try? status(id: id))??.owner
        case .remote:
            let requester = try? StatusRequester(url: brokerURL, topology: topology, timeout: min(5, timeout))
            defer { requester?.close() }
            let answer = requester.flatMap { try? ask(.show(id: id), requester: $0, timeout: max(0.01, deadline.timeIntervalSinceNow)) }
            if case .status(let status)? = answer { owner = status?.owner } else { owner = nil }
        }
        let feed = StatusWaiter.feed(url: brokerURL, owner: owner, topology: topology, timeout: max(0.1, deadline.timeIntervalSinceNow))
        defer { feed?.close() }
        return try wait(id: id, timeout: max(0.01, deadline.timeIntervalSinceNow), feed: feed, refusalsSince: nil, done: done)
    }

    // MARK: Submitting and answering

    /// Publishes an intent (or a turn, or a request about one) and returns once
    /// the broker confirmed it. Throws `.noWorker` when no worker serves its type.
    /// Throws `.invalid`, publishing nothing, for an id the workers could not use (which would be dead-lettered
    /// with no status), or a submission under the id of a schedule's run (which only the scheduler takes).
    public func submit(_ envelope: IntentEnvelope) throws(IntentClientError) {
        if let problem = IntentEnvelope.problem(withID: envelope.id) { throw IntentClientError(.invalid, "the id cannot be used: \(problem)") }
        if envelope.submitsUnderScheduledRunID { throw IntentClientError(.invalid, IntentEnvelope.scheduledRunIDProblem) }
        try publish { publisher throws(AMQPError) in try publisher.submit(envelope) }
    }

    /// A typed intent, submitted under `id`; returns the id. Should it throw, the
    /// broker may still have taken the message: pass an `id` of your own to submit
    /// again safely (a resubmitted id never repeats its effects). With `dueAt`, it is
    /// scheduled until then (the recorder releases it when it is due). With
    /// `expiresAt`, a worker that takes it after that time ends it
    /// `failure`/`expired` without running it.
    @discardableResult
    public func submit<I: Intent>(
        _ intent: I, id: String = IntentID.make(), group: String? = nil, dueAt: Date? = nil,
        expiresAt: Date? = nil
    ) throws(IntentClientError) -> String {
        var envelope: IntentEnvelope
        do {
            envelope = try IntentEnvelope(intent, id: id)
        } catch {
            throw IntentClientError(.invalid, "\(I.typeName) cannot be submitted: \(error)")
        }
        envelope.group = group
        envelope.expiresAt = expiresAt?.timeIntervalSince1970
        envelope.dueAt = dueAt?.timeIntervalSince1970
        try submit(envelope)
        return id
    }

    /// The longest deduplication window the recorder keeps a key for (30 days).
    public static let maximumDedupeWindow = StatusQuery.maximumDedupeSeconds

    /// Submits `envelope` as the intent a deduplication key stands for: when a
    /// submission of its type under `key`, by this broker user, came within the
    /// last `window` seconds, the intent is that one, and its id is returned
    /// (`first` false); otherwise `envelope.id` now stands for the key. The
    /// recorder keeps the keys (it must be running). The envelope is published
    /// under the returned id either way, so the intent exists even if the first
    /// submitter died before publishing; resubmitting an id never repeats its effects.
    public func submit(
        _ envelope: IntentEnvelope, deduplicatingBy key: String, within window: Double
    ) throws(IntentClientError) -> (id: String, first: Bool) {
        let standing = try deduplicated(envelope, by: key, within: window)
        try submit(standing.envelope)
        return (standing.envelope.id, standing.first)
    }

    /// What `submit(_:deduplicatingBy:within:)` publishes, not yet published: `envelope` under the id the recorder
    /// says `key` stands for, and whether it is the first. To be published once (with `submit(_:waitingUpTo:)`, say).
    public func deduplicated(
        _ envelope: IntentEnvelope, by key: String, within window: Double
    ) throws(IntentClientError) -> (envelope: IntentEnvelope, first: Bool) {
        guard case .deduplicated(let id, let first) = try ask(.dedupe(type: envelope.type, key: key, id: envelope.id, seconds: window)) else {
            throw .unexpectedAnswer("a deduplicated id")
        }
        var standing = envelope
        standing.id = id
        return (standing, first)
    }

    /// Submits and follows the intent until it ends or asks this turn's
    /// question, at most `timeout` seconds; returns its status then (nil: none
    /// recorded in time). A worker's refusal of the message (the id is
    /// another owner's, say) comes back as that refusal (`isRefusal`).
    public func submit(
        _ envelope: IntentEnvelope, waitingUpTo timeout: Double, asOperator: Bool = false, onSubmitted: () -> Void = {}
    ) throws(IntentClientError) -> IntentStatus? {
        // The events are followed from before the submission: a fast outcome cannot slip past.
        let feed = StatusWaiter.feed(url: brokerURL, topology: topology, timeout: timeout)
        defer { feed?.close() }
        let submittedAt = Date().timeIntervalSince1970
        try submit(envelope)
        onSubmitted()
        let me = user
        let type = envelope.type
        let minimumTurn = envelope.turn
        let isThisSubmissions = { (status: IntentStatus) in Self.answers(status, aSubmissionOf: type, by: me, asOperator: asOperator) }
        let status = try wait(id: envelope.id, timeout: timeout, feed: feed, refusalsSince: submittedAt) { status in
            guard isThisSubmissions(status) else { return false }
            return Self.isRefusal(status) || status.state.isTerminal || ((status.turn ?? 0) >= minimumTurn && status.state == .needsInput)
        }
        // Out of time with another intent's status in hand: nothing of this submission was recorded in time.
        return status.flatMap { isThisSubmissions($0) ? $0 : nil }
    }

    /// The next turn of an intent waiting in `needsInput`: `answers` over its
    /// parameters (only names it has or asked about). Not published: see
    /// `submit`. A turn's parameters are read leniently, as a command line's:
    /// they merge the submission's, which may have been typed as text.
    public func answer(id: String, _ answers: [String: JSONValue], asOperator: Bool = false) throws(IntentClientError) -> IntentEnvelope {
        try Self.answering(try waiting(id, asOperator: asOperator), with: answers)
    }

    /// The next turn confirming what the intent asks to confirm (a value, or the whole intent).
    public func confirmation(id: String, asOperator: Bool = false) throws(IntentClientError) -> IntentEnvelope {
        try Self.confirming(try waiting(id, asOperator: asOperator))
    }

    /// The request refusing what the intent asks to confirm: a worker decides
    /// it (`failure`/`denied`, unless a confirmation was handled first).
    public func denial(id: String, asOperator: Bool = false) throws(IntentClientError) -> IntentEnvelope {
        try Self.denying(try waiting(id, asOperator: asOperator))
    }

    /// The next turn of the intent whose status is `status` (in `needsInput`),
    /// answering `answers`: what `answer(id:_:asOperator:)` publishes, for a
    /// caller that read the status itself (the HTTP gateway).
    public static func answering(_ status: IntentStatus, with answers: [String: JSONValue]) throws(IntentClientError) -> IntentEnvelope {
        let known = Set(status.parameters?.objectValue?.keys.map { $0 } ?? []).union((status.resolutions ?? []).map(\.parameter))
        if let unknown = answers.keys.sorted().first(where: { !known.contains($0) }) {
            throw IntentClientError(.invalid, "\(status.type) has no parameter '\(unknown)' (it knows \(known.sorted().joined(separator: ", ")))")
        }
        // The merged parameters may mix the submission's with answers typed now; an answer about one element of a
        // list replaces that element only.
        let parameters = status.parameters?.objectValue ?? [:]
        var envelope = IntentEnvelope.answering(
            id: status.id, type: status.type, parameters: parameters, turn: status.turn ?? 0,
            answers: IntentEnvelope.applying(answers, to: parameters, asked: status.resolutions ?? []),
            confirmed: status.confirmed ?? [], group: status.group, lenient: true)
        envelope.dueAt = stillAhead(status)
        return envelope
    }

    /// The due time of an intent asking ahead of it (its type resolves at
    /// submission): the answering turn waits for it too. nil once it is due.
    static func stillAhead(_ status: IntentStatus, now: Double = Date().timeIntervalSince1970) -> Double? {
        guard let dueAt = status.dueAt, dueAt > now else { return nil }
        return dueAt
    }

    /// The next turn confirming what `status` asks to confirm.
    public static func confirming(_ status: IntentStatus) throws(IntentClientError) -> IntentEnvelope {
        let confirming = confirmable(status)
        guard !confirming.isEmpty else { throw IntentClientError(.notWaiting, "\(status.id) is not asking for a confirmation; answer it instead") }
        var envelope = IntentEnvelope.answering(
            id: status.id, type: status.type, parameters: status.parameters?.objectValue ?? [:], turn: status.turn ?? 0, answers: [:],
            confirmed: status.confirmed ?? [], confirming: confirming, group: status.group, lenient: true)
        envelope.dueAt = stillAhead(status)
        return envelope
    }

    /// The request refusing what `status` asks to confirm.
    public static func denying(_ status: IntentStatus) throws(IntentClientError) -> IntentEnvelope {
        guard !confirmable(status).isEmpty else {
            throw IntentClientError(.notWaiting, "\(status.id) is not asking for a confirmation; answer it instead")
        }
        var denial = IntentEnvelope.request(.deny, id: status.id, type: status.type, turn: (status.turn ?? 0) + 1)
        denial.group = status.group
        return denial
    }

    /// `status` (read for `id`), checked to be waiting for `user`'s answer:
    /// known, in `needsInput`, and `user`'s own unless `asOperator`.
    public static func waitingForAnswer(_ status: IntentStatus?, id: String, user: String, asOperator: Bool) throws(IntentClientError)
        -> IntentStatus
    {
        guard let status, !isRefusal(status) else {
            throw IntentClientError(.unknownIntent, "\(id) is unknown to the status store")
        }
        guard status.state == .needsInput else {
            throw IntentClientError(.notWaiting, "\(id) is not waiting for an answer: it is \(status.state.rawValue)")
        }
        if let owner = status.owner, owner != user, !asOperator {
            throw IntentClientError(.notYours, "\(id) is \(owner)'s intent: only its owner (or an operator) may answer it")
        }
        return status
    }

    // MARK: Canceling

    /// How a cancel ended.
    public enum CancelOutcome: Sendable, Hashable {
        /// A worker canceled it: nothing of it was done.
        case canceled(IntentStatus)
        /// It had ended before (handled, failed, or canceled already): its outcome stands.
        case alreadyEnded(IntentStatus)
        /// Requested, but no worker decided within the time: it is canceled when one does, unless its outcome is decided first.
        case undecided(IntentStatus?)
        /// A worker refused the request: the intent is not this user's.
        case refused(IntentStatus)
    }

    /// Cancels an unfinished intent and waits up to `timeout` seconds for a
    /// worker's decision, made atomically with the intent's effects.
    public func cancel(id: String, timeout: Double = 30) throws(IntentClientError) -> CancelOutcome {
        guard let status = try status(id: id) else { throw IntentClientError(.unknownIntent, "\(id) is unknown to the status store") }
        if Self.isRefusal(status) { return .refused(status) }
        guard !status.state.isTerminal else { return .alreadyEnded(status) }
        // Followed from before the request, so the decision cannot slip past.
        let feed = StatusWaiter.feed(url: brokerURL, owner: status.owner, topology: topology, timeout: timeout)
        defer { feed?.close() }
        let requestedAt = Date().timeIntervalSince1970
        try publish { publisher throws(AMQPError) in try publisher.cancel(id: id, type: status.type) }
        let decided: IntentStatus?
        do {
            decided = try wait(id: id, timeout: timeout, feed: feed, refusalsSince: requestedAt) { $0.state.isTerminal || Self.isRefusal($0) }
        } catch {
            throw IntentClientError(error.kind, "the cancel was requested, but \(error.message)")
        }
        guard let decided, decided.state.isTerminal else { return .undecided(decided) }
        if Self.isRefusal(decided) { return .refused(decided) }
        return decided.state == .canceled ? .canceled(decided) : .alreadyEnded(decided)
    }

    // MARK: Maintenance

    /// Removes stored interactions of finished intents through the recorder, the store's only writer: these ids, or a
    /// group's, or (both nil) every one (operators only). Anyone but an operator removes only their own. Returns how
    /// many went; unfinished intents are kept (see `delete(ids:group:unfinished:)`).
    public func delete(ids: [String]? = nil, group: String? = nil) throws(IntentClientError) -> Int {
        try delete(ids: ids, group: group, unfinished: false).deleted
    }

    /// `delete`, of unfinished intents too when `unfinished` (their rows are what the recorder releases scheduled
    /// intents and expires questions from: `cancel` is the way to end one). Says how many went, and how many of those
    /// chosen were kept because they have not finished. A recorder older than this client, which does not know the
    /// query that keeps them (`StatusQuery.deleteFinished`), refuses a delete without `unfinished`: `.invalid`, and
    /// nothing is deleted.
    public func delete(ids: [String]? = nil, group: String? = nil, unfinished: Bool) throws(IntentClientError) -> StatusStore.Deletion {
        let answer: StatusQuery.Answer
        do {
            answer = try ask(.delete(ids: ids, group: group, unfinished: unfinished))
        } catch  where !unfinished && error.message.contains("unknown query '\(StatusQuery.deleteFinished)'") {
            // A recorder older than this client refused the query that keeps unfinished intents, and deleted nothing
            // (whatever kind the refusal came as: recorders older still did not mark a refusal as the request's
            // fault). Some such recorders would remove unfinished intents with a plain `delete`, so that is not tried.
            throw IntentClientError(
                .invalid,
                "the recorder is older than this client and does not know the delete that keeps unfinished intents: nothing was deleted; upgrade the recorder (--unfinished deletes unfinished intents as well)"
            )
        }
        guard case .deleted(let deletion) = answer else {
            throw .unexpectedAnswer("a count")
        }
        return deletion
    }

    /// This user's recurring schedules (everyone's, for an operator), from the recorder.
    public func schedules() throws(IntentClientError) -> [Schedule] {
        guard case .schedules(let schedules) = try ask(.schedules) else { throw .unexpectedAnswer("schedules") }
        return schedules
    }

    /// Adds (or replaces) a recurring schedule of this user's; the recorder keeps it and schedulers submit its intents.
    @discardableResult
    public func schedule(_ schedule: Schedule) throws(IntentClientError) -> Schedule {
        guard case .schedules(let stored) = try ask(.schedule(schedule)), let added = stored.first else { throw .unexpectedAnswer("a schedule") }
        return added
    }

    /// Pauses, resumes or (with `remove`) removes a schedule of this user's (anyone's, for an operator).
    public func changeSchedule(_ name: String, paused: Bool, remove: Bool = false) throws(IntentClientError) {
        guard case .schedules = try ask(.changeSchedule(name: name, paused: paused, remove: remove)) else {
            throw .unexpectedAnswer("a schedule")
        }
    }

    /// Puts a dead-lettered intent back in the work queue (operators).
    public func requeue(id: String) throws(IntentClientError) -> DeadLetters.Outcome {
        do {
            return try DeadLetters.requeue(id: id, url: brokerURL, topology: topology)
        } catch {
            throw IntentClientError(error)
        }
    }

    /// Follows status events as workers publish them — this user's own, or
    /// with `everyone` all of them (operators) — calling `onEvent` for each
    /// until `stop` returns true (it is asked at least every 250 ms).
    /// `onReady` is called once the queue is bound: every event published
    /// after it is seen.
    public func watch(
        type: String? = nil, state: IntentState? = nil, everyone: Bool = false, until stop: () -> Bool,
        onReady: () -> Void = {}, onEvent: (StatusEvent) -> Void, onUnreadable: (Delivery) -> Void = { _ in }
    ) throws(IntentClientError) {
        let feed: StatusFeed
        do {
            feed = try StatusFeed(url: brokerURL, bindings: [(topology.statusExchange, watchKey(type: type, state: state, everyone: everyone))])
        } catch  where error.replyCode == 403 {
            throw IntentClientError(
                .forbidden,
                "the broker refused to let \(user) follow \(everyone ? "everyone's" : "these") events (\(error.detail)); everyone's are for operators"
            )
        } catch {
            throw IntentClientError(error)
        }
        defer { feed.close() }
        onReady()
        while !stop() {
            let delivery: Delivery?
            do {
                delivery = try feed.next(timeout: 0.25)
            } catch {
                throw IntentClientError(.unavailable, "the broker connection ended: \(error)")
            }
            guard let delivery else { continue }
            guard let event = try? StatusEvent.decode(delivery.body) else {
                onUnreadable(delivery)
                continue
            }
            onEvent(event)
        }
    }

    /// The binding `watch` uses: `<owner>.<type>.<state>`, `*` for any.
    public func watchKey(type: String?, state: IntentState?, everyone: Bool) -> String {
        "\(everyone ? "*" : StatusEvent.routingWord(for: user)).\(type ?? "*").\(state?.rawValue ?? "*")"
    }

    // MARK: Helpers

    /// Whether `status` may answer a submission of `type` by `user`: its refusal does; another owner's intent
    /// under the id (unless `asOperator`), or one of another type, does not.
    public static func answers(_ status: IntentStatus, aSubmissionOf type: String, by user: String, asOperator: Bool) -> Bool {
        if isRefusal(status) { return true }
        if !asOperator, let owner = status.owner, owner != user { return false }
        return status.type == type
    }

    /// Whether a status is a worker's refusal of one message (not the intent's state).
    public static func isRefusal(_ status: IntentStatus) -> Bool {
        [FailureCode.idInUse, FailureCode.notOwner, FailureCode.unknownIntent].contains(status.response?.code ?? "")
    }

    /// The parameters (or `intent`) the status asks to confirm.
    static func confirmable(_ status: IntentStatus) -> [String] {
        (status.resolutions ?? []).filter { if case .confirmationRequired = $0.result { return true } else { return false } }.map(\.parameter)
    }

    /// The status of an intent that must be waiting for this user's answer.
    private func waiting(_ id: String, asOperator: Bool) throws(IntentClientError) -> IntentStatus {
        try Self.waitingForAnswer(try status(id: id), id: id, user: user, asOperator: asOperator)
    }

    private func publish(_ body: (IntentPublisher) throws(AMQPError) -> Void) throws(IntentClientError) {
        do {
            let publisher = try IntentPublisher(url: brokerURL, topology: topology)
            defer { publisher.close() }
            try body(publisher)
        } catch {
            throw IntentClientError(error)
        }
    }

    /// A read, from the store file or the recorder.
    private func answer(_ query: StatusQuery) throws(IntentClientError) -> StatusQuery.Answer {
        switch source {
        case .local(let path):
            do {
                return try query.answer(from: StatusReader(path: path))
            } catch {
                throw IntentClientError(.unavailable, "status store unreachable: \(error)")
            }
        case .remote:
            return try ask(query)
        }
    }

    /// A question for the recorder, over the broker.
    private func ask(_ query: StatusQuery, requester given: StatusRequester? = nil, timeout: Double? = nil) throws(IntentClientError)
        -> StatusQuery.Answer
    {
        do {
            let requester = try given ?? StatusRequester(url: brokerURL, topology: topology)
            defer { if given == nil { requester.close() } }
            return try StatusQuery.decodeReply(try requester.ask(query.encoded, timeout: timeout))
        } catch let error as AMQPError {
            throw IntentClientError(error.kind == .unroutable ? .unavailable : IntentClientError(error).kind, "remote status unavailable: \(error)")
        } catch let error as StatusQuery.Forbidden {
            throw IntentClientError(.forbidden, error.description)
        } catch let error as StatusQuery.Refused {
            throw IntentClientError(.invalid, "the recorder refused the request: \(error.description)")
        } catch {
            throw IntentClientError(.unavailable, "remote status unavailable: \(error)")
        }
    }

    /// Waits for `done`, reading the store (or the recorder) when events say
    /// so. With `refusalsSince`, this user's refused message about the id
    /// (sent at or after that time) answers instead.
    private func wait(
        id: String, timeout: Double, feed: StatusFeed?, refusalsSince: Double?, done: (IntentStatus) -> Bool
    ) throws(IntentClientError) -> IntentStatus? {
        do {
            switch source {
            case .local(let path):
                var reader: StatusReader?
                let me = user
                return try StatusWaiter.wait(id: id, timeout: timeout, brokerURL: brokerURL, topology: topology, feed: feed, done: done) {
                    // A store not made yet is "not yet".
                    if reader == nil, FileManager.default.fileExists(atPath: path) { reader = try StatusReader(path: path) }
                    if let since = refusalsSince, let refusal = try reader?.refusal(id: id, owner: me), refusal.updatedAt >= since {
                        return refusal
                    }
                    return try reader?.status(id: id)
                }
            case .remote:
                // One connection for every question of the wait.
                let deadline = Date().addingTimeInterval(timeout)
                let requester = try StatusRequester(url: brokerURL, topology: topology, timeout: min(5, timeout))
                defer { requester.close() }
                var answered = false
                return try StatusWaiter.wait(id: id, timeout: timeout, brokerURL: brokerURL, topology: topology, feed: feed, done: done) {
                    let answer: StatusQuery.Answer
                    do {
                        let query = refusalsSince.map { StatusQuery.submission(id: id, since: $0) } ?? .show(id: id)
                        answer = try ask(query, requester: requester, timeout: deadline.timeIntervalSinceNow)
                    } catch let error as IntentClientError where error.kind == .timeout && answered {
                        return nil  // a slow answer near the end of the wait: no news, the wait ends on its own
                    }
                    answered = true
                    guard case .status(let status) = answer else { return nil }
                    return status
                }
            }
        } catch let error as IntentClientError {
            throw error
        } catch let error as AMQPError {
            throw IntentClientError(error)
        } catch {
            throw IntentClientError(.unavailable, "status store unreachable: \(error)")
        }
    }
}

/// Why a client call did not do what it was asked.
public struct IntentClientError: Error, Sendable, CustomStringConvertible {
    /// The kinds of failure, for a caller that acts on one (an exit code, a retry) rather than only printing it.
    public enum Kind: Sendable, Hashable {
        /// The store has never seen the id.
        case unknownIntent
        /// The intent is not waiting for this answer (or no longer can be canceled).
        case notWaiting
        /// The intent is another owner's.
        case notYours
        /// The broker or the recorder refused this user.
        case forbidden
        /// No worker serves the type: nothing is bound for it.
        case noWorker
        /// What was asked cannot be sent (an unknown parameter, an intent that does not encode).
        case invalid
        /// The broker URL or its credentials are wrong.
        case configuration
        /// No answer in time.
        case timeout
        /// The broker, the store or the recorder cannot be reached.
        case unavailable
    }

    /// What kind of failure it was.
    public var kind: Kind
    /// What went wrong, in words, with its details.
    public var message: String
    /// The message.
    public var description: String { message }

    /// An error of this kind, saying `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The client's kind of failure for a broker error.
    public init(_ error: AMQPError) {
        switch error.kind {
        case .unroutable: self.init(.noWorker, error.detail)
        case .configuration: self.init(.configuration, error.description)
        case .timeout: self.init(.timeout, "broker unreachable: \(error)")
        // rabbitmq-c could not be loaded (or failed inside): the broker may be fine.
        case .library: self.init(.unavailable, error.description)
        default: self.init(error.replyCode == 403 ? .forbidden : .unavailable, "broker unreachable: \(error)")
        }
    }

    static func unexpectedAnswer(_ expected: String) -> IntentClientError {
        IntentClientError(.unavailable, "the recorder did not answer with \(expected)")
    }
}
