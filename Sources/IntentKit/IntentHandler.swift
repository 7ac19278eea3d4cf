/// Serves one intent type through SiriKit's three steps, on the intent as
/// resolved: each parameter by its type and rules first, then
///
/// - `resolve` looks at the intent as a whole (by default, nothing more) and
///   may ask: `throw intent.$recipients.needsValue("Who should get it?")`;
/// - `confirm` checks it before anything is done (by default it is ready) and
///   may ask the user to confirm: `try context.requestConfirmation("Order 12 soups?")`;
/// - `handle` does the work: it returns the response, or throws an
///   `IntentFailure` to fail with its own code.
///
/// Any step may throw a `TransientFailure` to be tried again later; a storage
/// error that passes (a busy or full database) waits for the storage; any
/// other error fails the intent with `handlerError`.
public protocol IntentHandler: Sendable {
    associatedtype IntentType: Intent

    func resolve(_ intent: IntentType, context: IntentContext) async throws
    func confirm(_ intent: IntentType, context: IntentContext) async throws
    func handle(_ intent: IntentType, context: IntentContext) async throws -> IntentResponse

    /// How a `TransientFailure` of this type is retried.
    var retryPolicy: RetryPolicy { get }

    /// The longest `handle` may run, in seconds; past it the intent fails with
    /// `timedOut` and the handler's task is canceled (a handler writing through
    /// its database's `once` commits nothing afterwards). nil: no limit.
    var timeLimit: Double? { get }

    /// A restricted type (SiriKit's `IntentsRestrictedWhileLocked`) is handled
    /// only for submitters on the worker's allow-list of broker users.
    var isRestricted: Bool { get }

    /// Where this type's outcomes are decided. A handler that writes its
    /// effects in its database's `once` (or with `OnceOnly`) decides them in
    /// that same database. nil: the worker's own ledger, which is claimed
    /// before `handle` runs.
    var ledger: (any OutcomeLedger)? { get }

    /// What parameter types look up while resolving (`context.dependency(…)`):
    /// a database, a client of the app's service.
    var dependencies: [any Sendable] { get }

    /// A few lines showing the intent the way the app would (SiriKit's UI
    /// extension), published with each status event; nil shows the plain status.
    static func render(_ view: IntentView) -> String?
}

extension IntentHandler {
    public func resolve(_ intent: IntentType, context: IntentContext) async throws {}

    public func confirm(_ intent: IntentType, context: IntentContext) async throws {}

    public var retryPolicy: RetryPolicy { .standard }

    public var timeLimit: Double? { 600 }

    public var isRestricted: Bool { false }

    public var ledger: (any OutcomeLedger)? { nil }

    public var dependencies: [any Sendable] { [] }

    public static func render(_ view: IntentView) -> String? { nil }
}

/// Thrown when the intent's outcome was decided before its effects could
/// commit (a cancel, a time limit): the outcome that stands.
public struct OutcomeAlreadyDecided: Error, Sendable {
    public var outcome: DecidedOutcome

    public init(_ outcome: DecidedOutcome) {
        self.outcome = outcome
    }
}
