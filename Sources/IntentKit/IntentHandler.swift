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
    /// The intent type this handler serves: each submission of it is decoded into one.
    associatedtype IntentType: Intent

    /// Looks at the intent as a whole once each parameter is resolved; throws a `ParameterRequest` to ask the user.
    func resolve(_ intent: IntentType, context: IntentContext) async throws
    /// Checks the intent before anything is done; may ask the user to confirm it (`context.requestConfirmation`).
    func confirm(_ intent: IntentType, context: IntentContext) async throws
    /// Does the work and returns the response; throws an `IntentFailure` to fail with its own code.
    func handle(_ intent: IntentType, context: IntentContext) async throws -> IntentResponse

    /// How a `TransientFailure` of this type is retried.
    var retryPolicy: RetryPolicy { get }

    /// The longest `handle` may run, in seconds; past it the intent fails with
    /// `timedOut` and the handler's task is canceled (a handler writing through
    /// its database's `once` commits nothing afterwards). nil: no limit. The
    /// cancel's handlers (`withTaskCancellationHandler`) run on the worker's
    /// deadline thread, which every limit shares: they must not block.
    var timeLimit: Double? { get }

    /// How many of this type may run at once per owner (or per a parameter's
    /// value); the rest wait their turn. nil: no limit but the worker's concurrency.
    var concurrencyLimit: ConcurrencyLimit? { get }

    /// How many of this type may start within a window of time per owner (or
    /// per a parameter's value); the rest wait their turn. nil: no limit.
    var rateLimit: RateLimit? { get }

    /// When a scheduled intent of this type is resolved and confirmed: when it
    /// is due (by default), or as soon as it is submitted, so its questions are
    /// asked while the user is there and only `handle` waits.
    var resolutionTime: ResolutionTime { get }

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
    /// By default the intent needs nothing beyond each parameter's own resolution.
    public func resolve(_ intent: IntentType, context: IntentContext) async throws {}

    /// By default the intent is ready: nothing is asked to confirm.
    public func confirm(_ intent: IntentType, context: IntentContext) async throws {}

    /// By default `RetryPolicy.standard`: five retries, from one second to five minutes apart.
    public var retryPolicy: RetryPolicy { .standard }

    /// By default ten minutes.
    public var timeLimit: Double? { 600 }

    /// By default nil: no limit per owner.
    public var concurrencyLimit: ConcurrencyLimit? { nil }

    /// By default nil: no rate limit.
    public var rateLimit: RateLimit? { nil }

    /// By default `whenDue`: a scheduled intent is resolved with the data of its due time.
    public var resolutionTime: ResolutionTime { .whenDue }

    /// By default any submitter may have the type handled.
    public var isRestricted: Bool { false }

    /// By default nil: outcomes are decided in the worker's own ledger, claimed before `handle` runs.
    public var ledger: (any OutcomeLedger)? { nil }

    /// By default none.
    public var dependencies: [any Sendable] { [] }

    /// By default nil: the plain status is shown.
    public static func render(_ view: IntentView) -> String? { nil }
}

/// Thrown when the intent's outcome was decided before its effects could
/// commit (a cancel, a time limit): the outcome that stands.
public struct OutcomeAlreadyDecided: Error, Sendable {
    /// The outcome decided first, which the intent keeps.
    public var outcome: DecidedOutcome

    /// Reports that `outcome` already stands.
    public init(_ outcome: DecidedOutcome) {
        self.outcome = outcome
    }
}
