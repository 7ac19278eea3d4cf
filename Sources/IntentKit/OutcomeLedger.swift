import Foundation
import Synchronization

/// An intent's decided outcome: `success`, `failure` or `canceled`, final.
public struct DecidedOutcome: Sendable, Hashable {
    /// `success`, `failure` or `canceled`.
    public var state: IntentState
    /// What the intent ended with: its code, message and payload.
    public var response: IntentResponse

    /// An outcome in `state`, ending with `response`.
    public init(state: IntentState, response: IntentResponse) {
        self.state = state
        self.response = response
    }

    /// A success, ending with the handler's `response`.
    public static func success(_ response: IntentResponse) -> DecidedOutcome {
        DecidedOutcome(state: .success, response: response)
    }

    /// A failure, ending with `failure`'s code, message and payload.
    public static func failure(_ failure: IntentFailure) -> DecidedOutcome {
        DecidedOutcome(state: .failure, response: failure.response)
    }

    /// A cancel, with the code `canceled` and `message` saying when it came.
    public static func canceled(_ message: String) -> DecidedOutcome {
        DecidedOutcome(state: .canceled, response: IntentResponse(code: FailureCode.canceled, message: message))
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

/// Who sent a message about an intent, as the broker verified it.
public struct Sender: Sendable, Hashable {
    /// The message's `user_id`, which RabbitMQ checks against the connection's
    /// user; nil when the message carried none.
    public var user: String?
    /// An operator may act on any intent.
    public var isOperator: Bool
    /// The recorder or a worker (or a message of theirs a worker retried): the only senders of an expiry. A
    /// submitter's message a worker retried names the submitter, who is not trusted for it.
    public var isTrusted: Bool

    /// A sender verified as `user`, neither an operator nor trusted unless said.
    public init(user: String?, isOperator: Bool = false, isTrusted: Bool = false) {
        self.user = user
        self.isOperator = isOperator
        self.isTrusted = isTrusted
    }
}

/// What a ledger says of a message about an intent before anything is run.
public struct Admission: Sendable, Hashable {
    /// The outcome that stands, if one was decided.
    public var decided: DecidedOutcome?
    /// The intent's owner: the verified user of its first submission (nil: it came without one).
    public var owner: String?
    /// Set when the message may not act on the intent; the intent is untouched.
    public var refusal: IntentFailure?
    /// What the user has confirmed, of what the intent asked them to confirm.
    public var confirmed: Set<String>
    /// The ledger had never seen the intent: this message is its first submission.
    public var isNew: Bool

    /// An admission that lets the message act: no decided outcome, owner, refusal or confirmations unless given, and not new.
    public init(
        decided: DecidedOutcome? = nil, owner: String? = nil, refusal: IntentFailure? = nil, confirmed: Set<String> = [],
        isNew: Bool = false
    ) {
        self.decided = decided
        self.owner = owner
        self.refusal = refusal
        self.confirmed = confirmed
        self.isNew = isNew
    }
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

    /// Admits a message about an intent: its first submission records the
    /// type and the owner (`sender.user`); a later one must be of that type,
    /// and an answer or a request must come from the owner, an operator (or,
    /// for an expiry, a trusted sender) — otherwise `refusal` says why and
    /// nothing changes. `confirming` is what the message says the user
    /// confirmed; only what the intent asked at turn `turn - 1` counts.
    func admit(
        _ intentID: String, type: String, sender: Sender, turn: Int, request: IntentRequest?, confirming: [String]
    ) async throws -> Admission

    /// Records `outcome` unless one is decided, and returns the outcome that
    /// stands; nil when the decision was moot (see `Decider`) and nothing stands.
    func decide(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> DecidedOutcome?

    /// `decide`, saying as well whether this call recorded the outcome (two runs may reach equal outcomes, and only the
    /// one that recorded it decided it).
    func decision(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> Decision

    /// Notes that the intent asked a question at `turn`, with the parameters
    /// (or `intent`) it asks to confirm and what was confirmed so far; returns
    /// the decided outcome instead when there is one (the question is then not asked).
    func ask(_ intentID: String, turn: Int, confirmations: [String], granted: Set<String>) async throws -> DecidedOutcome?

    /// Marks the intent as being handled (only for a ledger without the
    /// effects); returns the decided outcome instead when there is one, and
    /// throws `ClaimHeld` while another delivery of the intent holds a recent
    /// claim (two runs of a handler whose effects cannot be taken back must
    /// not overlap). A cancel that came while it was claimed is decided when
    /// the run ends without an outcome (a question, a retry).
    func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome?

    /// `claim`, for a run that may last up to `seconds`: the claim holds at least that long (a run past its ledger's
    /// usual claim lifetime must not see a second delivery take its claim over and run beside it).
    func claim(_ intentID: String, attempt: Int, lasting seconds: Double) async throws -> DecidedOutcome?

    /// Removes a claim: the intent waits for a retry and may still be canceled.
    func release(_ intentID: String) async throws

    /// `claim(_:attempt:lasting:)`, by the run that `holder` names: a number no other run of the intent uses. (An
    /// attempt is not one: a kept intent taken from its ledger and the recorder's release of it are both attempt 1.)
    func claim(_ intentID: String, attempt: Int, holder: Int, lasting seconds: Double) async throws -> DecidedOutcome?

    /// Keeps the claim `holder` holds for `seconds` more from now, while its run lives, so that a run longer than the
    /// claim's lifetime is not taken for a dead worker's; nothing when the claim is another's, or gone.
    func renewClaim(_ intentID: String, holder: Int, lasting seconds: Double) async throws

    /// `release`, by the run `holder` names: a claim another delivery has taken over since (this run outlived it, its
    /// worker stalled) is left to that delivery, and so is a cancel noted meanwhile.
    func release(_ intentID: String, holder: Int) async throws

    /// `ask`, by the run `holder` names (nil: a run that claimed nothing): lifts only that run's claim, and decides a
    /// cancel noted meanwhile only while the claim is still that run's (or nobody's).
    func ask(_ intentID: String, turn: Int, confirmations: [String], granted: Set<String>, holder: Int?) async throws -> DecidedOutcome?

    /// Takes one of the `maximum` running slots of `key` for the intent (it
    /// keeps the one it holds, on a redelivery); false when all are taken.
    /// Slots taken longer than `staleAfter` seconds ago are free again.
    func acquireSlot(_ key: String, intentID: String, maximum: Int, staleAfter: Double) async throws -> Bool

    /// Gives back the intent's slot of `key`, once its run has ended.
    func releaseSlot(_ key: String, intentID: String) async throws

    /// Keeps a scheduled intent a worker saw before its time, for the workers
    /// sharing the ledger to run when it is due (a later turn replaces an
    /// earlier one); false when the ledger keeps none, and then only the
    /// recorder's release runs it.
    func keep(_ intent: KeptIntent) async throws -> Bool

    /// Takes, for `taker` (a name no other process has), the kept intents due by
    /// `time` that no one holds: never taken, or taken by another that `isHeld`
    /// (given its name and when it took it) says holds it no longer, those never
    /// taken first, then earliest first. What `taker` holds itself is not taken
    /// again until it lets go of it.
    func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int
    ) async throws -> [KeptIntent]

    /// `takeDueKept`, of the intents of `types` only: workers that serve other types may share the ledger, and one
    /// must not take (and refuse) an intent another would run. By default, `takeDueKept` (every type): a ledger that
    /// keeps intents should implement this one.
    func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int,
        types: Set<String>
    ) async throws -> [KeptIntent]

    /// When the earliest kept intent that no one has taken is due; nil when there is none.
    func nextKeptDue() async throws -> Double?

    /// Forgets the kept intent's `turn` (or an earlier one): it ran, or the recorder released it.
    func forgetKept(_ intentID: String, turn: Int) async throws

    /// The turn of the intent the ledger keeps to run when due, if it keeps one.
    func keptTurn(of intentID: String) async throws -> Int?

    /// The intent the ledger keeps to run when due, as it was kept (turn, due time, body, owner), if it keeps one.
    func keptIntent(of intentID: String) async throws -> KeptIntent?

    /// Lets go of a kept intent's `turn` taken earlier, to be taken again (what its run
    /// published was lost with the broker connection).
    func letGoKept(_ intentID: String, turn: Int) async throws

    /// Notes that a run of the kept intent's `turn` began at `time` (resolve, confirm, handle), unless one
    /// began before: a run taken up again reports that start and counts as begun.
    func noteKeptStart(_ intentID: String, turn: Int, at time: Double) async throws

    /// One step of a pass that forgets old decisions: of the next `limit` decided intents after `cursor` (in id order;
    /// "" to begin), forgets those decided before `cutoff` (seconds since 1970) — their outcome, owner and anything
    /// pending — in one write. Returns how many it forgot and the id the next step goes on after; nil once the pass has
    /// looked at the last decided intent. An intent not yet decided (one waiting for an answer, claimed, kept for
    /// later) is never forgotten. A message about a forgotten intent is admitted as one about a new intent: a copy of
    /// its submission would run it again.
    func forgetDecided(before cutoff: Double, after cursor: String, limit: Int) async throws -> (forgotten: Int, next: String?)
}

/// What `OutcomeLedger.decision` did: the outcome that stands (nil when the decision was moot), and whether this call
/// recorded it.
public struct Decision: Sendable, Hashable {
    /// The outcome that stands, if any.
    public var standing: DecidedOutcome?
    /// True when this call recorded `standing`; false when it stood before.
    public var recordedByThisCall: Bool

    /// A decision with `standing`, recorded by this call or not.
    public init(standing: DecidedOutcome?, recordedByThisCall: Bool) {
        self.standing = standing
        self.recordedByThisCall = recordedByThisCall
    }
}

/// A scheduled intent kept in a ledger by the worker that saw it before its
/// due time. Any worker sharing that ledger takes it when it is due and runs
/// it, with or without the broker; the recorder releases it only when no
/// worker has ended it a few seconds after its time.
public struct KeptIntent: Sendable, Hashable {
    /// The intent's id.
    public var id: String
    /// The turn the body starts (0 for a submission, n for the answer of turn n - 1).
    public var turn: Int
    /// When it is due, in seconds since 1970.
    public var dueAt: Double
    /// The envelope, as it was delivered.
    public var body: [UInt8]
    /// The intent's owner, as its ledger admitted it.
    public var owner: String?
    /// On an intent taken up again (its worker died, or what its run published was lost), when a run of
    /// it began (`noteKeptStart`), in seconds since 1970; nil when none had.
    public var startedAt: Double?

    /// The intent's type, as its envelope says; nil when the body cannot be read.
    public var type: String? { try? IntentEnvelope.decode(body).type }

    /// The intent `id`'s `turn`, due at `dueAt`, of `owner`, as the envelope `body`, taken before at `startedAt`.
    public init(id: String, turn: Int, dueAt: Double, body: [UInt8], owner: String?, startedAt: Double? = nil) {
        self.id = id
        self.turn = turn
        self.dueAt = dueAt
        self.body = body
        self.owner = owner
        self.startedAt = startedAt
    }
}

extension OutcomeLedger {
    /// By default told by the outcome that stands being the one asked for: a ledger that can say better implements it.
    public func decision(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> Decision {
        let standing = try await decide(intentID, outcome, attempt: attempt, by: decider)
        return Decision(standing: standing, recordedByThisCall: standing == outcome)
    }

    /// By default nothing is claimed: the decided outcome, if any, is returned. A ledger without the effects implements it.
    public func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome? {
        try await outcome(of: intentID)
    }

    /// By default the ledger's own `claim`, however long the run.
    public func claim(_ intentID: String, attempt: Int, lasting seconds: Double) async throws -> DecidedOutcome? {
        try await claim(intentID, attempt: attempt)
    }

    /// By default there is no claim to remove.
    public func release(_ intentID: String) async throws {}

    /// By default the ledger's own `claim`, whichever run holds it.
    public func claim(_ intentID: String, attempt: Int, holder: Int, lasting seconds: Double) async throws -> DecidedOutcome? {
        try await claim(intentID, attempt: attempt, lasting: seconds)
    }

    /// By default claims are not renewed: a ledger whose claims go stale implements it.
    public func renewClaim(_ intentID: String, holder: Int, lasting seconds: Double) async throws {}

    /// By default the ledger's own `release`, whoever holds the claim.
    public func release(_ intentID: String, holder: Int) async throws {
        try await release(intentID)
    }

    /// By default the ledger's own `ask`, whoever holds the claim.
    public func ask(_ intentID: String, turn: Int, confirmations: [String], granted: Set<String>, holder: Int?) async throws -> DecidedOutcome? {
        try await ask(intentID, turn: turn, confirmations: confirmations, granted: granted)
    }

    /// By default counted in this process only.
    public func acquireSlot(_ key: String, intentID: String, maximum: Int, staleAfter: Double) async throws -> Bool {
        ProcessSlots.shared.acquire(key, intentID: intentID, maximum: maximum, staleAfter: staleAfter)
    }

    /// By default counted in this process only.
    public func releaseSlot(_ key: String, intentID: String) async throws {
        ProcessSlots.shared.release(key, intentID: intentID)
    }

    /// By default nothing is kept: the recorder's release runs a scheduled intent.
    public func keep(_ intent: KeptIntent) async throws -> Bool { false }

    /// By default nothing is kept, so nothing is due.
    public func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int
    ) async throws -> [KeptIntent] { [] }

    /// By default what `takeDueKept` takes, of every type, as before types were asked for.
    public func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int,
        types: Set<String>
    ) async throws -> [KeptIntent] {
        try await takeDueKept(by: time, taker: taker, isHeld: isHeld, limit: limit)
    }

    /// By default nothing is kept.
    public func nextKeptDue() async throws -> Double? { nil }

    /// By default nothing is kept.
    public func forgetKept(_ intentID: String, turn: Int) async throws {}

    /// By default nothing is kept.
    public func keptTurn(of intentID: String) async throws -> Int? { nil }

    /// By default nothing is kept.
    public func keptIntent(of intentID: String) async throws -> KeptIntent? { nil }

    /// By default nothing is kept.
    public func letGoKept(_ intentID: String, turn: Int) async throws {}

    /// By default nothing is kept.
    public func noteKeptStart(_ intentID: String, turn: Int, at time: Double) async throws {}

    /// By default nothing is forgotten: the ledger keeps every decision.
    public func forgetDecided(before cutoff: Double, after cursor: String, limit: Int) async throws -> (forgotten: Int, next: String?) {
        (0, nil)
    }
}

extension Admission {
    /// The rules of `OutcomeLedger.admit`, for a ledger that has looked up
    /// what it knows of the intent: its recorded type and owner (nil when it
    /// never saw the intent), the question last asked and what it asked to
    /// confirm, and the confirmations granted so far.
    public static func rules(
        intentID: String, type: String, sender: Sender, turn: Int, request: IntentRequest?, confirming: [String],
        recorded: (type: String, owner: String?)?, question: Int?, asked: Set<String>, granted: Set<String>,
        decided: DecidedOutcome?
    ) -> Admission {
        let submission = turn == 0 && request == nil
        guard let recorded else {
            if submission { return Admission(decided: decided, owner: sender.user, isNew: true) }
            return Admission(
                refusal: IntentFailure(
                    code: FailureCode.unknownIntent,
                    message: "no intent '\(intentID)' was submitted: there is nothing to \(request?.rawValue ?? "answer")"))
        }
        // The owner first: to anyone else, a refusal says nothing of the intent (not even its type).
        let recordersRequest = request == .expire || request == .abandon
        if let owner = recorded.owner, owner != sender.user, !sender.isOperator, !(recordersRequest && sender.isTrusted) {
            if submission {
                return Admission(
                    owner: sender.user,
                    refusal: IntentFailure(
                        code: FailureCode.idInUse, message: "the id '\(intentID)' is taken by another submitter's intent; submit under another id"))
            }
            return Admission(
                owner: sender.user,
                refusal: IntentFailure(
                    code: FailureCode.notOwner,
                    message:
                        "'\(intentID)' is not \(sender.user.map { "\($0)'s" } ?? "an anonymous submitter's") intent: only its owner or an operator may \(request?.rawValue ?? "answer") it"
                ))
        }
        if recorded.type != type {
            return Admission(
                owner: sender.user,
                refusal: IntentFailure(
                    code: FailureCode.idInUse,
                    message: "the id '\(intentID)' is taken by a \(recorded.type) intent; submit this \(type) under another id"))
        }
        if recordersRequest, !sender.isTrusted {
            return Admission(
                owner: recorded.owner,
                refusal: IntentFailure(
                    code: FailureCode.notOwner,
                    message: request == .expire ? "only the recorder expires questions" : "only the recorder ends a question for a lost answer"))
        }
        // A confirmation counts only as the answer to one the intent asked for, at the turn it answers.
        var confirmed = turn == 0 ? [] : granted
        if turn > 0, question == turn - 1 { confirmed.formUnion(Set(confirming).intersection(asked)) }
        return Admission(decided: decided, owner: recorded.owner, confirmed: confirmed)
    }
}

/// Another delivery of the intent is being handled: this one waits and comes back.
public struct ClaimHeld: RetryableError, Sendable, CustomStringConvertible {
    /// Always: the delivery waits and is tried again.
    public var isRetryable: Bool { true }
    /// The intent whose claim another delivery holds.
    public var intentID: String

    /// Reports that another delivery holds the claim on `intentID`.
    public init(intentID: String) {
        self.intentID = intentID
    }

    /// Says which intent is being handled.
    public var description: String { "another delivery of '\(intentID)' is being handled" }
}

/// A ledger in memory, for unit tests of handlers and of the pipeline; it
/// forgets everything when the process ends.
public final class InMemoryOutcomeLedger: OutcomeLedger {
    private struct Entry {
        var outcome: DecidedOutcome?
        var question: Int?
        var claimed = false
        var type: String?
        var owner: String?
        var asked: Set<String> = []
        var granted: Set<String> = []
        var cancelRequested = false
    }

    private let entries = Mutex<[String: Entry]>([:])
    private let kept = Mutex<[String: (intent: KeptIntent, taker: (name: String, at: Double)?, started: Double?)]>([:])
    /// As given to `init`: true makes it act as a ledger kept with the effects.
    public let holdsEffects: Bool

    /// An empty ledger. With `holdsEffects` (false by default) it acts as one kept with the effects: the worker claims
    /// nothing, and a cancel wins until an outcome stands.
    public init(holdsEffects: Bool = false) {
        self.holdsEffects = holdsEffects
    }

    /// The outcome decided for the intent, if any.
    public func outcome(of intentID: String) async throws -> DecidedOutcome? {
        entries.withLock { $0[intentID]?.outcome }
    }

    /// Records `outcome` unless one stands. A cancel of a claimed intent waits for the claim to end; an answer is moot while
    /// the intent is claimed or once it asked a later question.
    public func decide(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> DecidedOutcome? {
        try await decision(intentID, outcome, attempt: attempt, by: decider).standing
    }

    /// `decide`, saying whether this call recorded the outcome.
    public func decision(_ intentID: String, _ outcome: DecidedOutcome, attempt: Int, by decider: Decider) async throws -> Decision {
        entries.withLock { entries in
            var entry = entries[intentID] ?? Entry()
            if let standing = entry.outcome { return Decision(standing: standing, recordedByThisCall: false) }
            switch decider {
            case .run: break
            case .cancel:
                if entry.claimed {
                    entry.cancelRequested = true
                    entries[intentID] = entry
                    return Decision(standing: nil, recordedByThisCall: false)
                }
            case .answer(let question):
                if entry.claimed || (entry.question ?? 0) > question { return Decision(standing: nil, recordedByThisCall: false) }
            }
            entry.outcome = outcome
            entry.claimed = false
            entries[intentID] = entry
            return Decision(standing: outcome, recordedByThisCall: true)
        }
    }

    /// Applies `Admission.rules` to what it knows of the intent, and records the type and owner of a first submission it admits.
    public func admit(
        _ intentID: String, type: String, sender: Sender, turn: Int, request: IntentRequest?, confirming: [String]
    ) async throws -> Admission {
        entries.withLock { entries in
            var entry = entries[intentID] ?? Entry()
            let admission = Admission.rules(
                intentID: intentID, type: type, sender: sender, turn: turn, request: request, confirming: confirming,
                recorded: entry.type.map { ($0, entry.owner) }, question: entry.question, asked: entry.asked,
                granted: entry.granted, decided: entry.outcome)
            if entry.type == nil, admission.refusal == nil {
                entry.type = type
                entry.owner = admission.owner
                entries[intentID] = entry
            }
            return admission
        }
    }

    /// Notes the question asked at `turn` (unless a later one was) and ends any claim; returns the outcome that stands
    /// instead, or `canceled` when a cancel came while the intent was claimed.
    public func ask(_ intentID: String, turn: Int, confirmations: [String], granted: Set<String>) async throws -> DecidedOutcome? {
        entries.withLock { entries in
            var entry = entries[intentID] ?? Entry()
            if let standing = entry.outcome { return standing }
            if entry.cancelRequested {
                let canceled = DecidedOutcome.canceled("canceled by request while it was being resolved")
                entry.outcome = canceled
                entries[intentID] = entry
                return canceled
            }
            if turn >= (entry.question ?? 0) {
                entry.question = turn
                entry.asked = Set(confirmations)
                entry.granted = granted
            }
            entry.claimed = false
            entries[intentID] = entry
            return nil
        }
    }

    /// Claims the intent for this delivery; returns the outcome that stands instead, and throws `ClaimHeld` while another
    /// delivery holds the claim.
    public func claim(_ intentID: String, attempt: Int) async throws -> DecidedOutcome? {
        try entries.withLock { entries throws(ClaimHeld) in
            var entry = entries[intentID] ?? Entry()
            if let standing = entry.outcome { return standing }
            if entry.claimed { throw ClaimHeld(intentID: intentID) }
            entry.claimed = true
            entries[intentID] = entry
            return nil
        }
    }

    /// Ends the claim; a cancel that came while the intent was claimed is decided now, as `canceled`.
    public func release(_ intentID: String) async throws {
        entries.withLock { entries in
            guard var entry = entries[intentID] else { return }
            entry.claimed = false
            if entry.cancelRequested, entry.outcome == nil { entry.outcome = .canceled("canceled by request while it was being handled") }
            entries[intentID] = entry
        }
    }

    /// The turn of the intent kept, if any.
    public func keptTurn(of intentID: String) async throws -> Int? {
        kept.withLock { $0[intentID]?.intent.turn }
    }

    /// The intent kept, if any.
    public func keptIntent(of intentID: String) async throws -> KeptIntent? {
        kept.withLock { $0[intentID]?.intent }
    }

    /// Keeps the intent's turn, unless a later turn is kept (or the same one, taken).
    public func keep(_ intent: KeptIntent) async throws -> Bool {
        kept.withLock { kept in
            if let held = kept[intent.id], held.intent.turn > intent.turn || (held.intent.turn == intent.turn && held.taker != nil) {
                return
            }
            kept[intent.id] = (intent, nil, nil)
        }
        return true
    }

    /// Takes the due ones not held by `taker` or by another that still holds them, never taken first, then earliest first.
    public func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int
    ) async throws -> [KeptIntent] {
        take(by: time, taker: taker, isHeld: isHeld, limit: limit, types: nil)
    }

    /// Takes the due ones of `types`, as `takeDueKept(by:taker:isHeld:limit:)` does; the others stay for their workers.
    public func takeDueKept(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int,
        types: Set<String>
    ) async throws -> [KeptIntent] {
        take(by: time, taker: taker, isHeld: isHeld, limit: limit, types: types)
    }

    private func take(
        by time: Double, taker: String, isHeld: @escaping @Sendable (_ taker: String, _ takenAt: Double) -> Bool, limit: Int,
        types: Set<String>?
    ) -> [KeptIntent] {
        kept.withLock { kept in
            let due = kept.values
                .filter { entry in
                    entry.intent.dueAt <= time && entry.taker.map { $0.name != taker && !isHeld($0.name, $0.at) } ?? true
                        && types.map { types in entry.intent.type.map(types.contains) ?? true } ?? true
                }
                .sorted { ($0.taker != nil ? 1 : 0, $0.intent.dueAt, $0.intent.id) < ($1.taker != nil ? 1 : 0, $1.intent.dueAt, $1.intent.id) }
                .prefix(max(0, limit))
                .map(\.intent)
            let now = Date().timeIntervalSince1970
            return due.map { intent in
                var taken = intent
                taken.startedAt = kept[intent.id]?.started
                kept[intent.id]?.taker = (taker, now)
                return taken
            }
        }
    }

    /// The earliest due time kept and not taken.
    public func nextKeptDue() async throws -> Double? {
        kept.withLock { kept in kept.values.filter { $0.taker == nil }.map(\.intent.dueAt).min() }
    }

    /// Forgets the kept intent, unless a later turn is kept.
    public func forgetKept(_ intentID: String, turn: Int) async throws {
        kept.withLock { kept in
            if let held = kept[intentID], held.intent.turn <= turn { kept[intentID] = nil }
        }
    }

    /// Lets go of the kept intent's turn, to be taken again.
    public func letGoKept(_ intentID: String, turn: Int) async throws {
        kept.withLock { kept in
            if let held = kept[intentID], held.intent.turn == turn { kept[intentID]?.taker = nil }
        }
    }

    /// Notes when a run of the kept intent's turn began, unless one began before.
    public func noteKeptStart(_ intentID: String, turn: Int, at time: Double) async throws {
        kept.withLock { kept in
            if let held = kept[intentID], held.intent.turn == turn, held.started == nil { kept[intentID]?.started = time }
        }
    }
}

/// The outcome a ledger holds for an intent, noted by the code that committed it
/// during a run (shared by every copy of that run's `IntentContext`).
public final class CommittedOutcome: Sendable {
    private enum Noted {
        /// This run committed it (noted after the commit).
        case committed(DecidedOutcome)
        /// This run's transaction wrote it (noted inside the transaction, which commits unless the run's write fails).
        case written(DecidedOutcome)
        /// The run found an outcome decided before it, and wrote none.
        case foundBefore
    }

    private let noted = Mutex<Noted?>(nil)

    /// Nothing noted yet.
    public init() {}

    /// Notes the outcome the ledger now holds; call only after its transaction committed. `before`: it was decided
    /// before (the call found it there and committed nothing), which does not take back an outcome this run committed
    /// in an earlier call.
    public func note(_ decided: DecidedOutcome, before: Bool = false) {
        noted.withLock { noted in
            if before {
                if case .committed = noted { return }
                noted = .foundBefore
            } else {
                noted = .committed(decided)
            }
        }
    }

    /// Notes, inside a transaction's body (which may run again, or roll back), what that run of it did: `written` the
    /// outcome it recorded, or nil when it found one decided before. The last run's note stands; one this run committed
    /// in an earlier call stays.
    public func noteInTransaction(written decided: DecidedOutcome?) {
        noted.withLock { noted in
            if case .committed = noted { return }
            noted = decided.map(Noted.written) ?? .foundBefore
        }
    }

    /// The outcome this run committed (or wrote in the transaction its write committed), if any.
    public var value: DecidedOutcome? {
        noted.withLock { noted in
            switch noted {
            case .committed(let decided), .written(let decided): decided
            case .foundBefore, nil: nil
            }
        }
    }
}
