/// What a handler knows about the delivery it is working on.
public struct IntentContext: Sendable {
    /// The intent's id: the key for once-only effects.
    public var intentID: String
    /// The intent's type name.
    public var intentType: String
    /// 1 for the first delivery; higher when the broker delivers it again.
    public var attempt: Int
    /// Seconds since 1970 when it was submitted.
    public var submittedAt: Double
    /// Carries `intent.id` and `intent.type` on every line.
    public var logger: Logger
    /// What `resolve` settled on, set by the pipeline before `confirm` and
    /// `handle` (as SiriKit updates the intent with resolved values).
    public var resolutions: [ParameterResolution] = []
    /// Parameters the user confirmed (and `intent` when the whole intent was).
    public var confirmed: Set<String> = []
    /// The conversation turn: 0 when submitted, one more with each answer.
    public var turn: Int = 0
    /// The broker-verified AMQP user that submitted the intent, when it said.
    public var userID: String?
    /// True while a scheduled intent whose type resolves `atSubmission` is
    /// resolved ahead of its due time: the pipeline stops after `confirm`, and
    /// `handle` runs when the intent is due. Set by the worker.
    public var resolvesAhead = false
    /// Asked before `confirm` and before `handle`: a canceled intent stops there.
    public var isCanceled: @Sendable () async -> Bool = { false }
    /// What the handler gave parameter types to look things up with.
    public var dependencies: [any Sendable] = []
    /// The outcome a ledger committed for this run with its effects (`AppDatabase.once`
    /// notes it once its transaction is on disk), so the worker need not decide it again.
    public let committed = CommittedOutcome()

    /// The dependency of this type the handler declared (the first, if several). Inlinable, so that the calling
    /// module specializes it for `T`: unspecialized, each call looked up the metadata of `T?`.
    @inlinable public func dependency<T>(_ type: T.Type) throws -> T {
        for dependency in dependencies {
            if let found = dependency as? T { return found }
        }
        throw missingDependency(T.self)
    }

    /// The error `dependency` throws when the handler declared none of the type.
    @usableFromInline func missingDependency(_ type: Any.Type) -> IntentFailure {
        IntentFailure(
            code: FailureCode.handlerError,
            message: "no dependency of type \(type) was given to the handler of \(intentType) (its `dependencies`)")
    }

    /// Asks the user to confirm the whole intent unless they have (App
    /// Intents' `requestConfirmation`): throws the question, to be asked, or
    /// returns once the user confirmed it in an answer.
    public func requestConfirmation(_ dialog: IntentDialog) throws(ParameterRequest) {
        guard !isConfirmed(IntentPipeline.wholeIntent) else { return }
        throw ParameterRequest(ParameterResolution(IntentPipeline.wholeIntent, .confirmationRequired(.string(dialog.full)), prompt: dialog))
    }

    /// Whether the user confirmed this parameter (or `intent`, the whole intent).
    public func isConfirmed(_ parameter: String) -> Bool { confirmed.contains(parameter) }
    private let progressSink: @Sendable (StatusEvent.Progress) -> Void

    /// The context of one delivery of an intent. `attempt` is 1 (the first delivery) and `submittedAt` 0 unless given; the
    /// logger (silent by default) puts `intent.id` and `intent.type` on every line, and `progress` receives what
    /// `reportProgress` publishes (by default it goes nowhere).
    public init(
        intentID: String, intentType: String, attempt: Int = 1, submittedAt: Double = 0,
        logger: Logger = .disabled(), progress: @escaping @Sendable (StatusEvent.Progress) -> Void = { _ in }
    ) {
        self.intentID = intentID
        self.intentType = intentType
        self.attempt = attempt
        self.submittedAt = submittedAt
        // The worker's logger for a delivery names the intent already: then it is used as it is, with no copy of its metadata.
        self.logger =
            logger[metadataKey: "intent.id"] == intentID && logger[metadataKey: "intent.type"] == intentType
            ? logger : logger.with(["intent.id": intentID, "intent.type": intentType])
        self.progressSink = progress
    }

    /// The resolved value of a parameter (of its element `index` for a list
    /// resolved element by element).
    public func resolvedValue(_ parameter: String, index: Int? = nil) -> JSONValue? {
        for resolution in resolutions where resolution.parameter == parameter && resolution.index == index {
            if case .success(let value) = resolution.result { return value }
        }
        return nil
    }

    /// The resolved values of a list parameter resolved element by element, in order.
    public func resolvedValues(_ parameter: String) -> [JSONValue] {
        resolutions
            .filter { $0.parameter == parameter && $0.index != nil }
            .sorted { ($0.index ?? 0) < ($1.index ?? 0) }
            .compactMap { resolution in
                if case .success(let value) = resolution.result { return value }
                return nil
            }
    }

    /// Publishes an `inProgress` event: a slow handler calls it as it goes.
    public func reportProgress(fraction: Double? = nil, message: String? = nil) {
        progressSink(StatusEvent.Progress(fraction: fraction, message: message))
    }
}
