import Synchronization

/// How many intents of a type may run at once for one owner, or for one value
/// of a parameter (one hairdresser's calls). The rest wait their turn in a
/// retry queue, a second at a time, without counting against their retry
/// policy: no delivery is held while over the limit.
///
/// The slots are counted in the type's ledger: across every worker that
/// shares it (a handler's own database), or per worker process for the
/// worker's own ledger. A worker that dies holding a slot frees it once its
/// run could not be going on any more (its time limit and a minute).
public struct ConcurrencyLimit: Sendable, Hashable {
    /// What the limit counts by.
    public enum Scope: Sendable, Hashable {
        /// The intent's owner (the broker user of its first submission).
        case owner
        /// The value of one of its parameters, as submitted (the slot is taken before resolution): "Alice" and
        /// "alice smith" are two values even when both resolve to one hairdresser. Have clients submit the
        /// canonical value (an id, the full name) where the limit must hold per resolved value.
        case parameter(String)
    }

    /// The most intents of one owner (or value) running at once; at least 1.
    public var maximum: Int
    /// What it counts by.
    public var scope: Scope

    /// At most `maximum` at once per owner, or per value of a parameter.
    public init(_ maximum: Int, per scope: Scope = .owner) {
        self.maximum = max(1, maximum)
        self.scope = scope
    }

    /// The key whose slots an intent takes: its type and its owner, or its parameter's value.
    public func key(type: String, owner: String?, parameters: [String: JSONValue]) -> String {
        switch scope {
        case .owner: "\(type) owner=\(owner ?? "")"
        case .parameter(let name): "\(type) \(name)=\(parameters[name]?.jsonString ?? "null")"
        }
    }
}

/// How many intents of a type may start within a window of time for one
/// owner, or for one value of a parameter: at most `maximum` in any
/// `seconds`. The rest wait in a retry queue, a second at a time, as for a
/// `ConcurrencyLimit`, without counting against their retry policy and with
/// no delivery held. An intent counts once per window, whatever its attempts
/// and turns within it; intents resolved ahead of their due time count when
/// they run, not when they are resolved.
///
/// Counted where the type's concurrency is: in its ledger, across the workers
/// that share it, or per worker process for the worker's own ledger.
public struct RateLimit: Sendable, Hashable {
    /// The most intents of one owner (or value) starting within `seconds`; at least 1.
    public var maximum: Int
    /// The window, in seconds; at least a millisecond.
    public var seconds: Double
    /// What it counts by.
    public var scope: ConcurrencyLimit.Scope

    /// At most `maximum` starts within any `seconds`, per owner or per value of a parameter.
    public init(_ maximum: Int, per seconds: Double, by scope: ConcurrencyLimit.Scope = .owner) {
        self.maximum = max(1, maximum)
        self.seconds = max(0.001, seconds)
        self.scope = scope
    }

    /// The key whose window an intent counts in: apart from the concurrency slots of the same scope.
    public func key(type: String, owner: String?, parameters: [String: JSONValue]) -> String {
        "rate " + ConcurrencyLimit(maximum, per: scope).key(type: type, owner: owner, parameters: parameters)
    }
}

/// When a scheduled intent of a type is resolved and confirmed.
public enum ResolutionTime: String, Sendable, Hashable {
    /// When it is due, with the data of that moment (the default): what the
    /// handler looks up is as fresh as the run that uses it.
    case whenDue
    /// As soon as it is submitted, while the user is there to answer: its
    /// questions and confirmation are asked then, and only `handle` waits for
    /// the due time. At the due time resolution runs once more over the
    /// answered values (an answered choice or a confirmation stands), so data
    /// that changed meanwhile fails the intent or asks again rather than being
    /// used stale.
    case atSubmission
}

/// Slots counted in this process, for ledgers that keep none of their own.
final class ProcessSlots: Sendable {
    static let shared = ProcessSlots()

    private let held = Mutex<[String: [String: ContinuousClock.Instant]]>([:])

    func acquire(_ key: String, intentID: String, maximum: Int, staleAfter: Double) -> Bool {
        held.withLock { held in
            let now = ContinuousClock.now
            var slots = held[key, default: [:]].filter { now - $0.value < .milliseconds(Int64(staleAfter * 1_000)) }
            defer { held[key] = slots.isEmpty ? nil : slots }
            guard slots[intentID] != nil || slots.count < maximum else { return false }
            slots[intentID] = now
            return true
        }
    }

    func release(_ key: String, intentID: String) {
        held.withLock { held in
            held[key]?[intentID] = nil
            if held[key]?.isEmpty == true { held[key] = nil }
        }
    }
}
