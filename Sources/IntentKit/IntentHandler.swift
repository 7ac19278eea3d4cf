/// Serves one intent type through SiriKit's three steps.
///
/// `resolve` looks at every parameter and says what it makes of it; when all
/// are usable, `confirm` checks the intent as a whole (the default accepts it);
/// `handle` does the work. Each may throw an `IntentFailure` to fail with its
/// own code, or a `TransientFailure` to be tried again later; any other error
/// fails with `handlerError`.
public protocol IntentHandler: Sendable {
    associatedtype IntentType: Intent

    func resolve(_ intent: IntentType, context: IntentContext) async throws -> [ParameterResolution]
    func confirm(_ intent: IntentType, context: IntentContext) async throws -> ConfirmOutcome
    func handle(_ intent: IntentType, context: IntentContext) async throws -> HandleOutcome

    /// How a `TransientFailure` of this type is retried.
    var retryPolicy: RetryPolicy { get }

    /// The longest `handle` may run, in seconds; past it the intent fails with
    /// `timedOut` and the handler's task is canceled (a handler that writes
    /// should check for cancellation before it commits). nil: no limit.
    var timeLimit: Double? { get }

    /// A restricted type (SiriKit's `IntentsRestrictedWhileLocked`) is handled
    /// only for submitters on the worker's allow-list of broker users.
    var isRestricted: Bool { get }

    /// Where this type's outcomes are decided. A handler that writes its
    /// effects with `OnceOnly` returns the ledger of that same database, so
    /// that cancels, denials, expiries and time limits are decided in the
    /// transactions that commit the effects. nil: the worker's own ledger,
    /// which is claimed before `handle` runs.
    var ledger: (any OutcomeLedger)? { get }
}

extension IntentHandler {
    public func confirm(_ intent: IntentType, context: IntentContext) async throws -> ConfirmOutcome {
        .ready
    }

    public var retryPolicy: RetryPolicy { .standard }

    public var timeLimit: Double? { 600 }

    public var isRestricted: Bool { false }

    public var ledger: (any OutcomeLedger)? { nil }
}

/// The answer of `confirm`.
public enum ConfirmOutcome: Sendable, Hashable {
    /// Go on to `handle`.
    case ready
    /// Ask the user to confirm the whole intent first (App Intents'
    /// `requestConfirmation`): the intent waits in `needsInput` until
    /// `intent-submit --confirm` (or `--deny`).
    case confirmationRequired(prompt: String)
    /// Stop with this code and reason.
    case failure(IntentFailure)

    public static func failure(code: String, message: String) -> ConfirmOutcome {
        .failure(IntentFailure(code: code, message: message))
    }
}

/// The answer of `handle`.
public enum HandleOutcome: Sendable, Hashable {
    case success(IntentResponse)
    case failure(IntentFailure)

    public static func failure(code: String, message: String) -> HandleOutcome {
        .failure(IntentFailure(code: code, message: message))
    }

    /// The outcome recorded for a response read back from storage.
    public init(recorded response: IntentResponse, succeeded: Bool) {
        self = succeeded ? .success(response) : .failure(IntentFailure(code: response.code, message: response.message ?? ""))
    }
}
