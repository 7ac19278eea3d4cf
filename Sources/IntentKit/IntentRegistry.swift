/// Maps intent type names to the handlers that serve them.
///
/// Registration is typed: the registry decodes each submission into the
/// handler's own `IntentType`, so no handler ever sees another type's payload.
public struct IntentRegistry: Sendable {
    /// A class, so that each of the several lookups an intent makes copies a reference, not every field.
    final class Entry: Sendable {
        let run:
            @Sendable (
                IntentEnvelope, IntentContext, Double?, any DeadlineScheduler, Bool, @escaping @Sendable (PipelineOutcome) async -> Void
            ) async -> Task<Void, Never>?
        let retryPolicy: RetryPolicy
        let timeLimit: Double?
        let concurrencyLimit: ConcurrencyLimit?
        let rateLimit: RateLimit?
        let resolutionTime: ResolutionTime
        let isRestricted: Bool
        let ledger: (any OutcomeLedger)?
        let render: @Sendable (IntentView) -> String?

        init(
            run:
                @escaping @Sendable (
                    IntentEnvelope, IntentContext, Double?, any DeadlineScheduler, Bool, @escaping @Sendable (PipelineOutcome) async -> Void
                ) async -> Task<Void, Never>?,
            retryPolicy: RetryPolicy, timeLimit: Double?, concurrencyLimit: ConcurrencyLimit?, rateLimit: RateLimit?,
            resolutionTime: ResolutionTime, isRestricted: Bool, ledger: (any OutcomeLedger)?,
            render: @escaping @Sendable (IntentView) -> String?
        ) {
            self.run = run
            self.retryPolicy = retryPolicy
            self.timeLimit = timeLimit
            self.concurrencyLimit = concurrencyLimit
            self.rateLimit = rateLimit
            self.resolutionTime = resolutionTime
            self.isRestricted = isRestricted
            self.ledger = ledger
            self.render = render
        }
    }

    private var entries: [String: Entry] = [:]
    /// The same entries in a list while there are at most `scanned` (empty beyond), read instead of `entries`: a worker
    /// looks an intent's type up several times per delivery (seven), and comparing a short name with a handful of
    /// others costs less than hashing it (about 2,000 instructions an intent less, `deploy/worker-cost.sh`).
    private var few: [(name: String, entry: Entry)] = []

    /// Up to how many types `few` is scanned.
    private static let scanned = 8

    /// The entry of `typeName`, if it is served.
    private func find(_ typeName: String) -> Entry? {
        guard entries.count <= Self.scanned else { return entries[typeName] }
        for candidate in few where candidate.name == typeName { return candidate.entry }
        return nil
    }

    /// An empty registry; `register` adds the handlers.
    public init() {}

    /// Adds a handler. Registering a type twice is a programmer error, reported
    /// when the worker starts rather than by silently replacing the first.
    public mutating func register<H: IntentHandler>(_ handler: H) throws(RegistryError) {
        let name = H.IntentType.typeName
        // The envelope's own rule: a type every message of which would be refused is refused here, at start.
        if let problem = IntentEnvelope.problem(withType: name) {
            throw RegistryError(
                description: "intent type name '\(name)' is not usable as a routing key (\(problem)): use 1 to 100 ASCII letters, digits, '-' or '_'")
        }
        guard entries[name] == nil else {
            throw RegistryError(description: "intent type '\(name)' is registered twice")
        }
        try Self.checkParameterNames(of: H.IntentType.self)
        let entry = Entry(
            run: { envelope, context, timeLimit, deadlines, inCallersTask, report in
                await IntentPipeline.run(
                    handler, envelope: envelope, context: context, timeLimit: timeLimit, deadlines: deadlines,
                    inCallersTask: inCallersTask, report: report)
            },
            retryPolicy: handler.retryPolicy, timeLimit: handler.timeLimit, concurrencyLimit: handler.concurrencyLimit,
            rateLimit: handler.rateLimit, resolutionTime: handler.resolutionTime, isRestricted: handler.isRestricted,
            ledger: handler.ledger, render: { H.render($0) })
        entries[name] = entry
        if entries.count <= Self.scanned {
            few.append((name, entry))
        } else {
            few = []
        }
    }

    /// A parameter is named on the wire by its property's name, which is where its declared rules (prompt, range,
    /// choices, check) are found when an intent is decoded. Custom `CodingKeys` that rename one would have it
    /// decoded without them (an amount's cap, a quantity's range): refused at registration instead.
    static func checkParameterNames<I: Intent>(of type: I.Type) throws(RegistryError) {
        let renamed = ParameterReading.renamedParameters(of: type)
        guard renamed.isEmpty else {
            throw RegistryError(
                description:
                    "\(I.typeName) reads its parameters \(renamed.joined(separator: ", ")) under other keys (custom CodingKeys): a parameter's key is its property's name, where its rules are found"
            )
        }
    }

    /// The type names this registry serves, sorted.
    public var typeNames: [String] { entries.keys.sorted() }

    /// Whether a handler for `typeName` is registered.
    public func serves(_ typeName: String) -> Bool { find(typeName) != nil }

    func entry(for typeName: String) -> Entry? { find(typeName) }

    /// Whether a served type is restricted to allowed submitters.
    public func isRestricted(_ typeName: String) -> Bool {
        find(typeName)?.isRestricted ?? false
    }

    /// The handler's own time limit for a served type.
    public func timeLimit(for typeName: String) -> Double? {
        find(typeName)?.timeLimit
    }

    /// The handler's own limit of intents running at once per owner (or parameter value), when it has one.
    public func concurrencyLimit(for typeName: String) -> ConcurrencyLimit? {
        find(typeName)?.concurrencyLimit
    }

    /// The handler's own rate limit for a served type.
    public func rateLimit(for typeName: String) -> RateLimit? {
        find(typeName)?.rateLimit
    }

    /// When a scheduled intent of a served type is resolved (`whenDue` for a type not served).
    public func resolutionTime(for typeName: String) -> ResolutionTime {
        find(typeName)?.resolutionTime ?? .whenDue
    }

    /// The ledger a served type's handler decides its outcomes in, when it has its own.
    public func ledger(for typeName: String) -> (any OutcomeLedger)? {
        find(typeName)?.ledger
    }

    /// The app's view of an intent of a served type, when its handler draws one.
    public func render(_ view: IntentView) -> String? {
        find(view.type)?.render(view)
    }

    /// The retry policy of a served type (`.standard` for any other).
    public func retryPolicy(for typeName: String) -> RetryPolicy {
        find(typeName)?.retryPolicy ?? .standard
    }
}

/// Why a handler could not be registered: its type name cannot be a routing key, or its type is registered already.
public struct RegistryError: Error, Sendable, CustomStringConvertible {
    /// What is wrong, naming the type.
    public var description: String
}
