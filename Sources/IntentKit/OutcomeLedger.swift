import Synchronization

/// An intent's decided outcome: `success`, `failure` or `canceled`, final.
public struct DecidedOutcome: Sendable, Hashable {
    public var state: IntentState
    public var response: IntentResponse

    public init(state: IntentState, response: IntentResponse) {
        self.state = state
        self.response = response
    }

    public static func success(_ response: IntentResponse) -> DecidedOutcome {
        DecidedOutcome(state: .success, response: response)
    }

    public static func failure(_ failure: IntentFailure) -> DecidedOutcome {
        DecidedOutcome(state: .failure, response: failure.response)
    }

    public static func canceled(_ message: String) -> DecidedOutcome {
        DecidedOutcome(state: .canceled, response: IntentResponse(code: FailureCode.canceled, message: message))
    }

    /// The outcome of a handler's run.
    public init(_ outcome: HandleOutcome) {
        switch outcome {
        case .success(let response): self = .success(response)
        case .failure(let failure): self = .failure(failure)
        }
    }

    /// What `handle` returns for it: a canceled outcome reads as a failure with the code `canceled`.
    public var handleOutcome: HandleOutcome {
        state == .success
            ? .success(response) : .failure(IntentFailure(code: response.code, message: response.message ?? ""))
    }
}

/// Who asks a ledger to decide an intent's outcome.
public enum Decider: Sendable, Hashable {
    /// The intent's own run: its handler's outcome, a time limit, a refusal.
    /// Decides unless an outcome stands.
    case run
    /// A cancel. Loses to a decided outcome, and (for a ledger that does not
    /// hold the effects) to a handler that has started.
    case cancel
    /// An answer to the question asked at turn `question` that ends the intent
    /// (a denial, an expiry): moot once a later question was asked.
    case answer(question: Int)
}

/// Where each intent's outcome is decided, once: the first decision stands and
/// every later one gets it back.
///
/// A worker asks the ledger before it runs an intent (a decided intent only has
/// its outcome published again), when a cancel, a denial or an expiry arrives,
/// when a time limit passes, and when a handler returns. A ledger kept in the
/// app's own database (`OnceOnly` writes the effects and the outcome in one
/// transaction) makes every decision atomic with the effects: a cancel either
/// lands before the effects commit, and they never do, or after, and it loses.
public protocol OutcomeLedger: Sendable {
    /// True when handlers commit their effects in the ledger's own transactions
    /// (with `OnceOnly`). A ledger without the effects is claimed before a
    /// handler runs, and a cancel loses to the claim, since effects outside the
    /// database cannot be taken back.
    var holdsEffects: Bool { get }

    /// The outcome decided for the intent, if any.
    func outcome(of intentID: String) async throws -> DecidedOutcome?

    /// Records `outcome` unless one is decided, and returns the outcome that
    /// stands; nil when the decision was moot (see `Decider`) and nothing stands.
    func decide(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> DecidedOutcome?

    /// Notes that the intent asked a question at `turn`; returns the decided
    /// outcome instead when there is one (the question is then not asked).
    func ask(_ intentID: String, turn: Int) async throws -> DecidedOutcome?

    /// Marks the intent as being handled (only for a ledger without the
    /// effects); returns the decided outcome instead when there is one.
    func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome?

    /// Removes a claim: the intent waits for a retry and may still be canceled.
    func release(_ intentID: String) async throws
}

extension OutcomeLedger {
    public func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome? {
        try await outcome(of: intentID)
    }

    public func release(_ intentID: String) async throws {}
}

/// A ledger in memory, for unit tests of handlers and of the pipeline; it
/// forgets everything when the process ends.
public final class InMemoryOutcomeLedger: OutcomeLedger {
    private struct Entry {
        var outcome: DecidedOutcome?
        var question: Int?
        var claimed = false
    }

    private let entries = Mutex<[String: Entry]>([:])
    public let holdsEffects: Bool

    public init(holdsEffects: Bool = false) {
        self.holdsEffects = holdsEffects
    }

    public func outcome(of intentID: String) async throws -> DecidedOutcome? {
        entries.withLock { $0[intentID]?.outcome }
    }

    public func decide(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> DecidedOutcome? {
        entries.withLock { entries in
            var entry = entries[intentID] ?? Entry()
            if let standing = entry.outcome { return standing }
            switch decider {
            case .run: break
            case .cancel: if entry.claimed { return nil }
            case .answer(let question):
                if entry.claimed || (entry.question ?? 0) > question { return nil }
            }
            entry.outcome = outcome
            entry.claimed = false
            entries[intentID] = entry
            return outcome
        }
    }

    public func ask(_ intentID: String, turn: Int) async throws -> DecidedOutcome? {
        entries.withLock { entries in
            var entry = entries[intentID] ?? Entry()
            if let standing = entry.outcome { return standing }
            entry.question = max(entry.question ?? 0, turn)
            entry.claimed = false
            entries[intentID] = entry
            return nil
        }
    }

    public func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome? {
        entries.withLock { entries in
            var entry = entries[intentID] ?? Entry()
            if let standing = entry.outcome { return standing }
            entry.claimed = true
            entries[intentID] = entry
            return nil
        }
    }

    public func release(_ intentID: String) async throws {
        entries.withLock { $0[intentID]?.claimed = false }
    }
}
