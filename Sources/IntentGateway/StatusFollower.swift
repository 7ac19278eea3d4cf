import Foundation
import IntentAMQP
import IntentClient
import IntentKit
import IntentStore
import Synchronization

/// Follows every status event on one connection of the gateway's and wakes
/// what waits on them: long polls (`?wait=`), which are answered with a status
/// read from the recorder once their condition holds, and event streams,
/// which are sent each event their reader may see. A wait holds no thread:
/// its connection sleeps in the HTTP server until this wakes it.
///
/// Read-your-writes, as for `intent-status --wait`: a wait's answer is always
/// a status the recorder read from the store, never one made up from an
/// event, so a later read reports that state or a later one.
final class StatusFollower: Sendable {
    /// A long poll.
    struct Waiter: Sendable {
        var id: String
        var identity: GatewayIdentity
        var deadline: Date
        /// Whether a status ends the wait.
        var done: @Sendable (IntentStatus) -> Bool
        /// The answer, from the last status read (nil: unknown to the reader).
        var answer: @Sendable (IntentStatus?) -> HTTPResponse
        /// The answer when the status cannot be read.
        var failure: @Sendable (any Error) -> HTTPResponse
        var responder: Responder
        /// False while its submission is not yet confirmed: the deadline does not answer it before the broker has.
        var ready = true
        /// For a submission's wait: when it was made (its refusal since then is its answer, see `StatusQuery.submission`).
        var refusedSince: Double?
    }

    /// An event stream: one intent's (ending after its terminal event) or the live one.
    struct Subscription: Sendable {
        var id: String?
        var type: String?
        var state: IntentState?
        var identity: GatewayIdentity
        var stream: EventStream
    }

    private struct Registry {
        var waiters: [UInt64: Waiter] = [:]
        var waitersByID: [String: Set<UInt64>] = [:]
        var subscriptions: [UInt64: Subscription] = [:]
        /// The waits and streams each user holds.
        var held: [String: Int] = [:]
        /// The key the next wait or stream gets.
        var next: UInt64 = 0

        /// Counts one more for `user`, unless they hold `maximum` already.
        mutating func take(for user: String, maximum: Int) -> UInt64? {
            guard held[user, default: 0] < maximum else { return nil }
            held[user, default: 0] += 1
            next += 1
            return next
        }

        mutating func giveBack(for user: String) {
            let left = held[user, default: 1] - 1
            held[user] = left > 0 ? left : nil
        }

        mutating func removeWaiter(_ key: UInt64) -> Waiter? {
            guard let waiter = waiters.removeValue(forKey: key) else { return nil }
            waitersByID[waiter.id]?.remove(key)
            if waitersByID[waiter.id]?.isEmpty == true { waitersByID[waiter.id] = nil }
            giveBack(for: waiter.identity.user)
            return waiter
        }

        mutating func removeSubscription(_ key: UInt64) {
            guard let subscription = subscriptions.removeValue(forKey: key) else { return }
            giveBack(for: subscription.identity.user)
        }
    }

    private let registry = Mutex(Registry())
    private let pool: BrokerPool
    private let url: BrokerURL
    private let topology: Topology
    private let metrics: GatewayMetrics
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let connected = Atomic<Bool>(false)
    private let maximumHeldPerUser: Int
    /// How long after an event that ends a wait the status is read again, every 2 ms, until the recorder has it.
    static let eagerReading = 2.0
    /// How often an open stream is sent a comment, so a client that went away is noticed.
    static let keepAlive = 15.0

    init(url: BrokerURL, topology: Topology, pool: BrokerPool, metrics: GatewayMetrics, logger: Logger, maximumHeldPerUser: Int = 256) {
        self.maximumHeldPerUser = maximumHeldPerUser
        self.logger = logger
        self.url = url
        self.topology = topology
        self.pool = pool
        self.metrics = metrics
        Thread.named("gw-events") { [self] in follow() }.start()
    }

    /// Whether the follower's broker connection is up.
    var isConnected: Bool { connected.load(ordering: .relaxed) }

    /// Long polls waiting, streams open.
    var counts: (waits: Int, streams: Int) { registry.withLock { ($0.waiters.count, $0.subscriptions.count) } }

    func stop() { stopping.store(true, ordering: .relaxed) }

    // MARK: Waiting

    /// Registers a long poll, then reads the status once: answered at once
    /// when `done` already holds (registered first, so no event slips between),
    /// or, with `readFirst`, when the intent is unknown to the reader. False
    /// (nothing registered) when its user holds as many waits and streams as
    /// they may.
    func wait(_ waiter: Waiter, readFirst: Bool) -> Bool {
        guard let key = register(waiter) else { return false }
        check(key, unknownEnds: readFirst)
        return true
    }

    /// Registers a long poll without reading: a submission registers before it publishes. Nil when its user holds
    /// as many waits and streams as they may.
    func register(_ waiter: Waiter) -> UInt64? {
        registry.withLock { registry in
            guard let key = registry.take(for: waiter.identity.user, maximum: maximumHeldPerUser) else { return nil }
            registry.waiters[key] = waiter
            registry.waitersByID[waiter.id, default: []].insert(key)
            return key
        }
    }

    /// The answer to a wait or a stream its user may not open now.
    var tooMany: HTTPResponse {
        HTTPServer.error(
            429, "tooManyWaits",
            "this token's user holds \(maximumHeldPerUser) long polls and event streams open, as many as the gateway allows at once; end one first",
            headers: [("Retry-After", "1")])
    }

    /// The submission a wait was registered for is confirmed: from now on its
    /// deadline may answer it; the status is read once.
    func confirmed(_ key: UInt64) {
        registry.withLock { $0.waiters[key]?.ready = true }
        check(key, unknownEnds: false)
    }

    /// Forgets a wait that will not be answered through the follower.
    func cancel(_ key: UInt64) { _ = remove(key) }

    /// Reads the status for a wait: ends it when `done` holds, or when the
    /// intent is unknown and `unknownEnds`. A failed read ends it with 503.
    func check(_ key: UInt64, unknownEnds: Bool) {
        pool.run { [self] session in
            guard let waiter = registry.withLock({ $0.waiters[key] }) else { return }
            do {
                let status = try session.status(id: waiter.id, as: waiter.identity.user, refusedSince: waiter.refusedSince)
                if (status == nil && unknownEnds) || status.map(waiter.done) == true { finish(key, with: status) }
            } catch {
                if let waiter = remove(key) { waiter.responder.respond(waiter.failure(error)) }
            }
        }
    }

    /// Ends a wait with the answer for `status`, unless it has ended already.
    private func finish(_ key: UInt64, with status: IntentStatus?) {
        guard let waiter = remove(key) else { return }
        waiter.responder.respond(waiter.answer(status))
    }

    private func remove(_ key: UInt64) -> Waiter? {
        registry.withLock { $0.removeWaiter(key) }
    }

    /// Reads again for a wait an event may have ended, until the recorder
    /// shows it: after 2, 4, 8 … ms, for at most `eagerReading` seconds in all.
    /// No pool thread is held between two reads.
    private func reread(_ key: UInt64, attempt: Int = 0, since: Date = Date()) {
        pool.run { [self] session in
            guard let waiter = registry.withLock({ $0.waiters[key] }) else { return }
            do {
                let status = try session.status(id: waiter.id, as: waiter.identity.user, refusedSince: waiter.refusedSince)
                if let status, waiter.done(status) {
                    finish(key, with: status)
                    return
                }
            } catch {
                return  // the deadline answers it
            }
            let delay = 0.002 * Double(1 << min(attempt, 9))
            guard Date().addingTimeInterval(delay).timeIntervalSince(since) <= Self.eagerReading else { return }
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [self] in reread(key, attempt: attempt + 1, since: since) }
        }
    }

    /// Answers every wait whose time is up with the status read now.
    private func expire(now: Date) {
        let due = registry.withLock { registry in registry.waiters.filter { $0.value.ready && $0.value.deadline <= now }.map(\.key) }
        for key in due {
            guard let waiter = remove(key) else { continue }
            pool.run { session in
                do {
                    let status = try session.status(id: waiter.id, as: waiter.identity.user, refusedSince: waiter.refusedSince)
                    waiter.responder.respond(waiter.answer(status))
                } catch {
                    waiter.responder.respond(waiter.failure(error))
                }
            }
        }
    }

    // MARK: Streams

    /// Sends `subscription` every event its reader may see, from now on; returns its key. Nil (not subscribed) when
    /// its user holds as many waits and streams as they may.
    func subscribe(_ subscription: Subscription) -> UInt64? {
        registry.withLock { registry in
            guard let key = registry.take(for: subscription.identity.user, maximum: maximumHeldPerUser) else { return nil }
            registry.subscriptions[key] = subscription
            return key
        }
    }

    /// Forgets a stream that ends before it began (its intent is unknown, or could not be read), and gives its
    /// user's count back at once.
    func unsubscribe(_ key: UInt64) {
        registry.withLock { $0.removeSubscription(key) }
    }

    static func frame(_ event: StatusEvent) -> [UInt8] {
        Array("event: status\ndata: ".utf8) + event.encoded() + Array("\n\n".utf8)
    }

    private func deliver(_ event: StatusEvent) {
        let visible = { (identity: GatewayIdentity) in identity.isOperator || event.owner == nil || event.owner == identity.user }
        let (wake, subscribers) = registry.withLock { registry in
            (
                Array(registry.waitersByID[event.id] ?? []).filter { registry.waiters[$0].map { visible($0.identity) } ?? false },
                registry.subscriptions.filter { _, subscription in
                    visible(subscription.identity) && (subscription.id == nil || subscription.id == event.id)
                        && (subscription.type == nil || subscription.type == event.type)
                        && (subscription.state == nil || subscription.state == event.state)
                }
            )
        }
        if event.state.isTerminal || event.state == .needsInput || event.refused == true {
            for key in wake { reread(key) }
        }
        guard !subscribers.isEmpty else { return }
        let frame = Self.frame(event)
        var ended: [UInt64] = []
        for (key, subscription) in subscribers {
            let last = subscription.id != nil && event.state.isTerminal && event.refused != true
            if !subscription.stream.push(frame, end: last) || last { ended.append(key) }
        }
        if !ended.isEmpty { registry.withLock { registry in for key in ended { registry.removeSubscription(key) } } }
    }

    private func keepStreamsAlive() {
        let streams = registry.withLock { registry in
            for (key, subscription) in registry.subscriptions where !subscription.stream.isOpen { registry.removeSubscription(key) }
            return registry.subscriptions.values.map(\.stream)
        }
        for stream in streams { stream.push(Array(": keep-alive\n\n".utf8)) }
        endStreamsOfEndedIntents()
    }

    /// One intent's stream whose terminal event was missed (the feed was down,
    /// or the event passed before the snapshot was stored) ends with the
    /// stored status as its last message.
    private func endStreamsOfEndedIntents() {
        let followed = registry.withLock { registry in registry.subscriptions.filter { $0.value.id != nil } }
        for (key, subscription) in followed {
            guard let id = subscription.id else { continue }
            pool.run { [self] session in
                guard let status = try? session.status(id: id, as: subscription.identity.user), status.state.isTerminal else { return }
                subscription.stream.push(Array("event: snapshot\ndata: ".utf8) + IntentStatus.jsonEncoded(status) + Array("\n\n".utf8), end: true)
                registry.withLock { $0.removeSubscription(key) }
            }
        }
    }

    /// Every wait is read again, and every intent's stream checked (after the feed was down: an event may have been missed).
    private func rereadAll() {
        for key in registry.withLock({ Array($0.waiters.keys) }) { reread(key) }
        endStreamsOfEndedIntents()
    }

    // MARK: The feed

    private func follow() {
        var backoff = 0.2
        var lastKeepAlive = Date()
        while !stopping.load(ordering: .relaxed) {
            let feed: StatusFeed
            do {
                feed = try StatusFeed(url: url, bindings: [(topology.statusExchange, "#")])
            } catch {
                connected.store(false, ordering: .relaxed)
                metrics.setBrokerUp(false)
                logger.warning("gateway: cannot follow status events: \(error); again in \(backoff) s")
                sleep(for: backoff, lastKeepAlive: &lastKeepAlive)
                backoff = min(backoff * 2, 5)
                continue
            }
            backoff = 0.2
            connected.store(true, ordering: .relaxed)
            metrics.setBrokerUp(true)
            logger.info("gateway: following status events")
            rereadAll()
            do {
                while !stopping.load(ordering: .relaxed) {
                    if let delivery = try feed.next(timeout: 0.1), let event = try? StatusEvent.decode(delivery.body) {
                        deliver(event)
                    }
                    tick(&lastKeepAlive)
                }
            } catch {
                logger.warning("gateway: the status event connection ended: \(error)")
            }
            feed.close()
            connected.store(false, ordering: .relaxed)
            metrics.setBrokerUp(false)
        }
    }

    private func tick(_ lastKeepAlive: inout Date) {
        let now = Date()
        expire(now: now)
        if now.timeIntervalSince(lastKeepAlive) >= Self.keepAlive {
            lastKeepAlive = now
            keepStreamsAlive()
        }
    }

    private func sleep(for seconds: Double, lastKeepAlive: inout Date) {
        let until = Date().addingTimeInterval(seconds)
        while Date() < until, !stopping.load(ordering: .relaxed) {
            Thread.sleep(forTimeInterval: 0.1)
            tick(&lastKeepAlive)
        }
    }
}
