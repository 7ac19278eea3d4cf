import Foundation
import Synchronization

/// Where the pipeline left an intent: `needsInput`, `success` or `failure`.
public struct PipelineOutcome: Sendable, Hashable {
    /// `needsInput`, `success` or `failure`; `inProgress` when the intent is to be tried again, `canceled` when a cancel
    /// stopped it, `scheduled` when it was resolved ahead of its due time (`IntentContext.resolvesAhead`), or the state
    /// of an outcome decided before.
    public var state: IntentState
    /// What the intent ended with; nil while it needs input or waits for a retry.
    public var response: IntentResponse?
    /// Each parameter's resolution, as far as resolution went; for `needsInput`, with the questions to ask.
    public var resolutions: [ParameterResolution]
    /// Set when a step threw a `TransientFailure`: the intent should be tried again.
    public var retryReason: String?
    /// The retry waits for storage (a database busy, full or failing), not for
    /// the handler's own condition: it is not bounded by the type's
    /// `RetryPolicy`, so the intent waits until the storage works again.
    public var waitsForStorage = false
    /// Set when the outcome is one decided before this run (a step threw `OutcomeAlreadyDecided`): its resolutions
    /// are this run's, not those of whatever decided it, so none of them is published with it.
    public var decidedBefore = false

    /// An outcome in `state`, with a response, resolutions and a retry reason only when given.
    public init(state: IntentState, response: IntentResponse? = nil, resolutions: [ParameterResolution] = [], retryReason: String? = nil) {
        self.state = state
        self.response = response
        self.resolutions = resolutions
        self.retryReason = retryReason
    }

    /// A `failure` outcome whose response is `failure`'s code, message and payload.
    public static func failure(_ failure: IntentFailure, resolutions: [ParameterResolution] = []) -> PipelineOutcome {
        PipelineOutcome(state: .failure, response: failure.response, resolutions: resolutions)
    }
}

/// Runs an intent through its handler and turns the answers into the state
/// machine: each parameter is resolved by its type and rules; any
/// `unsupported` fails the intent; any that needs the user stops at
/// `needsInput`; otherwise the handler's `resolve` and `confirm` (either may
/// ask a question instead), then `handle`.
public enum IntentPipeline {
    /// Runs an envelope through the registry's handler for its type and
    /// returns its outcome once the handler has returned.
    /// - Parameters:
    ///   - envelope: the submission or turn to run.
    ///   - registry: the handlers, by intent type.
    ///   - context: the delivery: the intent's id, attempt, logger, and how to report progress.
    ///   - timeLimit: overrides the handler's own `timeLimit` when set.
    ///   - deadlines: what enforces the time limit (a worker's timer thread; by default a task per limit).
    public static func run(
        _ envelope: IntentEnvelope, registry: IntentRegistry, context: IntentContext, timeLimit: Double? = nil,
        deadlines: any DeadlineScheduler = IntentPipeline.taskDeadlines
    ) async -> PipelineOutcome {
        let reported = Mutex<PipelineOutcome?>(nil)
        await run(envelope, registry: registry, context: context, timeLimit: timeLimit, deadlines: deadlines) { outcome in
            reported.withLock { $0 = outcome }
        }
        return reported.withLock { $0 } ?? .failure(IntentFailure(code: FailureCode.handlerError, message: "the pipeline reported no outcome"))
    }

    /// Runs an envelope through the registry's handler for its type, hands the
    /// outcome to `report` as soon as it is known, and returns only when the
    /// handler has really returned. The two differ when `handle` passes its
    /// time limit: `report` gets `timedOut` at the deadline, while a handler
    /// that ignores its cancellation goes on running, and the caller (a worker
    /// counting its concurrency) must not count it as done.
    public static func run(
        _ envelope: IntentEnvelope, registry: IntentRegistry, context: IntentContext, timeLimit: Double? = nil,
        deadlines: any DeadlineScheduler = IntentPipeline.taskDeadlines, report: @Sendable (PipelineOutcome) async -> Void
    ) async {
        // The handler in a task of its own, so `report` is only ever called from this call.
        await withoutActuallyEscaping(report) { (report: @escaping @Sendable (PipelineOutcome) async -> Void) async in
            await run(
                envelope, registry: registry, context: context, timeLimit: timeLimit, deadlines: deadlines, inCallersTask: false,
                report: report)
        }
    }

    /// Runs an envelope as `run(_:registry:context:timeLimit:deadlines:report:)` does; with `inCallersTask`, a
    /// handler with a time limit runs in the calling task rather than in a task of its own (one task, its
    /// scheduling and a wake-up fewer per intent). At the deadline, `report` then gets `timedOut` from a task the
    /// deadline starts, and the calling task is canceled so that the handler sees it: a caller that runs more
    /// than one handler in one task must go on in a task that is not canceled (the worker's runners do: a
    /// canceled runner hands its lane to a new one).
    package static func run(
        _ envelope: IntentEnvelope, registry: IntentRegistry, context: IntentContext, timeLimit: Double?,
        deadlines: any DeadlineScheduler, inCallersTask: Bool, report: @escaping @Sendable (PipelineOutcome) async -> Void
    ) async {
        guard let entry = registry.entry(for: envelope.type) else {
            await report(
                .failure(
                    IntentFailure(
                        code: FailureCode.unknownIntentType,
                        message:
                            "this worker has no handler for intent type '\(envelope.type)' (it serves \(registry.typeNames.joined(separator: ", ")))")
                ))
            return
        }
        let straggler = await entry.run(envelope, context, timeLimit ?? entry.timeLimit, deadlines, inCallersTask, report)
        await straggler?.value
    }

    /// The default `DeadlineScheduler`: a sleeping task per time limit.
    public static let taskDeadlines = TaskDeadlines()

    static let canceled = PipelineOutcome(
        state: .canceled, response: IntentResponse(code: FailureCode.canceled, message: "canceled before it was handled"))

    /// The most resolutions (parameters, and elements of list parameters) an
    /// intent may have; past it, it fails with `outcomeTooLarge` before its handler runs.
    public static let maximumResolutions = 1_000

    /// The name under which a whole-intent confirmation is asked and answered.
    public static let wholeIntent = "intent"

    /// Runs one handler; `report` gets the outcome. Returns what is still running past the handler's time limit:
    /// the handler's task, or with `inCallersTask` (the handler ran in this one) the task reporting `timedOut`.
    static func run<H: IntentHandler>(
        _ handler: H, envelope: IntentEnvelope, context: IntentContext, timeLimit: Double?, deadlines: any DeadlineScheduler,
        inCallersTask: Bool, report: @escaping @Sendable (PipelineOutcome) async -> Void
    ) async -> Task<Void, Never>? {
        var straggler: Task<Void, Never>?
        let handling = Handling(timeLimit: timeLimit, deadlines: deadlines, inCallersTask: inCallersTask, report: report)
        // Nil when the deadline reported the outcome itself.
        if let outcome = await run(handler, envelope: envelope, context: context, handling: handling, straggler: &straggler) {
            await report(outcome)
        }
        return straggler
    }

    /// How `handle` runs: its time limit, what enforces it, and whether in the caller's task (and then whom the
    /// deadline tells).
    private struct Handling {
        let timeLimit: Double?
        let deadlines: any DeadlineScheduler
        let inCallersTask: Bool
        let report: @Sendable (PipelineOutcome) async -> Void
    }

    private static func run<H: IntentHandler>(
        _ handler: H, envelope: IntentEnvelope, context: IntentContext, handling: Handling, straggler: inout Task<Void, Never>?
    ) async -> PipelineOutcome? {
        var context = context
        context.confirmed = Set(envelope.confirmed ?? [])
        context.turn = envelope.turn
        context.dependencies = handler.dependencies

        // What the user said, each parameter as its type declares it.
        // Not copied after (a copy of a generic value goes through its type's value witnesses): resolution writes
        // each value into the parameter's own storage, which the intent holds.
        let intent: H.IntentType
        let parameters: [any ResolvableParameter]
        do {
            (intent, parameters) = try ParameterReading.decode(H.IntentType.self, from: envelope.parameters, lenient: envelope.lenientParameters)
        } catch {
            return .failure(IntentFailure(code: FailureCode.invalidIntent, message: describe(error, type: envelope.type)))
        }

        // Each parameter resolved by its type and rules, its value written into the intent.
        var resolutions: [ParameterResolution] = []
        // Most parameters give one resolution: room for those, or the array grows once for each.
        resolutions.reserveCapacity(parameters.count)
        do {
            for parameter in parameters {
                resolutions += try await parameter.resolveParameter(context: context)
                guard resolutions.count <= maximumResolutions else {
                    // A list of half a million names (a 1 MiB body can hold that) would make a question
                    // no status event can carry, and a handler that writes as many rows.
                    return .failure(
                        IntentFailure(
                            code: FailureCode.outcomeTooLarge,
                            message: "resolution gave over \(maximumResolutions) values, the most an intent may have"))
                }
            }
        } catch {
            return outcome(of: error, step: "resolve", resolutions: resolutions)
        }
        if let stop = stopping(resolutions, context: context) { return stop }
        context.resolutions = resolutions

        // The intent as a whole, then its confirmation: either may ask instead.
        do {
            try await handler.resolve(intent, context: context)
            if await context.isCanceled() { return canceled }
            try await handler.confirm(intent, context: context)
        } catch {
            return outcome(of: error, step: "confirm", resolutions: resolutions)
        }

        if await context.isCanceled() { return canceled }
        // Resolved and confirmed ahead of its due time: `handle` waits for it.
        if context.resolvesAhead { return PipelineOutcome(state: .scheduled, resolutions: resolutions) }
        if handling.inCallersTask, let timeLimit = handling.timeLimit, timeLimit > 0 {
            return await handleInCallersTask(
                handler, intent, context: context, timeLimit: timeLimit, handling: handling, resolutions: resolutions,
                straggler: &straggler)
        }
        do {
            let response = try await handle(
                handler, intent, context: context, timeLimit: handling.timeLimit, deadlines: handling.deadlines, straggler: &straggler)
            return PipelineOutcome(state: .success, response: response, resolutions: resolutions)
        } catch {
            return outcome(of: error, step: "handle", resolutions: resolutions)
        }
    }

    /// Runs `handle` in the calling task against its time limit. The handler's return and the deadline race
    /// for the outcome: when the deadline wins, it reports `timedOut` from a task of its own (left in
    /// `straggler`) and cancels the calling task while the handler still runs in it, and this returns nil once
    /// the handler has returned.
    private static func handleInCallersTask<H: IntentHandler>(
        _ handler: H, _ intent: H.IntentType, context: IntentContext, timeLimit: Double, handling: Handling,
        resolutions: [ParameterResolution], straggler: inout Task<Void, Never>?
    ) async -> PipelineOutcome? {
        let race = DeadlineRace()
        let report = handling.report
        let token = handling.deadlines.schedule(after: timeLimit) {
            race.pass {
                Task { await report(.failure(timedOut(after: timeLimit), resolutions: resolutions)) }
            }
        }
        let result = await Result(catching: { try await handler.handle(intent, context: context) })
        handling.deadlines.clear(token)
        if let reporting = race.finish() {
            straggler = reporting
            return nil
        }
        switch result {
        case .success(let response): return PipelineOutcome(state: .success, response: response, resolutions: resolutions)
        case .failure(let error): return outcome(of: error, step: "handle", resolutions: resolutions)
        }
    }

    /// The failure a handler past its time limit ends with.
    private static func timedOut(after timeLimit: Double) -> IntentFailure {
        IntentFailure(code: FailureCode.timedOut, message: "the handler did not finish within \(JSONValue.formatNumber(timeLimit)) s")
    }

    /// `failure` when a parameter is unsupported, `needsInput` when one needs the user; nil to go on.
    private static func stopping(_ resolutions: [ParameterResolution], context: IntentContext) -> PipelineOutcome? {
        let unsupported = resolutions.compactMap { resolution -> String? in
            if case .unsupported(let reason) = resolution.result { return "\(resolution.label): \(reason)" }
            return nil
        }
        if !unsupported.isEmpty {
            return .failure(
                IntentFailure(code: FailureCode.unsupportedParameter, message: unsupported.joined(separator: "; ")),
                resolutions: resolutions)
        }
        // A value the user already confirmed stands as resolved.
        var resolutions = resolutions
        for index in resolutions.indices {
            if case .confirmationRequired(let value) = resolutions[index].result, context.isConfirmed(resolutions[index].parameter) {
                resolutions[index].result = .success(value)
                resolutions[index].prompt = nil
            }
        }
        if resolutions.contains(where: { $0.result.needsInput }) {
            return PipelineOutcome(state: .needsInput, resolutions: resolutions)
        }
        return nil
    }

    /// The outcome of an error a step threw.
    private static func outcome(of error: any Error, step: String, resolutions: [ParameterResolution]) -> PipelineOutcome {
        switch error {
        case let request as ParameterRequest where !request.resolution.result.needsInput:
            // Thrown, but not a question (SiriKit's habit of answering `unsupported` this way): nothing to wait for.
            let failure: IntentFailure
            if case .unsupported(let reason) = request.resolution.result {
                failure = IntentFailure(code: FailureCode.unsupportedParameter, message: "\(request.resolution.label): \(reason)")
            } else {
                failure = IntentFailure(
                    code: FailureCode.handlerError,
                    message: "\(step) threw a request about \(request.resolution.label) that asks nothing (\(request.resolution.result.outcome))")
            }
            var resolved = resolutions.filter { $0.parameter != request.resolution.parameter }
            resolved.append(request.resolution)
            return .failure(failure, resolutions: resolved)
        case let request as ParameterRequest:
            // A question: that parameter's resolutions give way to it.
            var asked = resolutions.filter { $0.parameter != request.resolution.parameter }
            asked.append(request.resolution)
            return PipelineOutcome(state: .needsInput, resolutions: asked)
        case let transient as TransientFailure:
            return PipelineOutcome(state: .inProgress, resolutions: resolutions, retryReason: transient.reason)
        case let retryable as any RetryableError where retryable.isRetryable:
            var outcome = PipelineOutcome(state: .inProgress, resolutions: resolutions, retryReason: "\(step): \(error)")
            outcome.waitsForStorage = true
            return outcome
        case let decided as OutcomeAlreadyDecided:
            var outcome = PipelineOutcome(state: decided.outcome.state, response: decided.outcome.response, resolutions: resolutions)
            outcome.decidedBefore = true
            return outcome
        case let failure as IntentFailure:
            return .failure(failure, resolutions: resolutions)
        default:
            return .failure(IntentFailure(code: FailureCode.handlerError, message: "\(step) threw: \(error)"), resolutions: resolutions)
        }
    }

    /// Runs `handle`, failing with `timedOut` (and canceling it) past the limit.
    /// The outcome is given at the deadline even if the handler ignores the
    /// cancellation; its task is left in `straggler` for the caller to await.
    /// The worker records `timedOut` in the intent's ledger before it publishes
    /// it, so a handler that writes through its database's `once` afterwards
    /// finds the outcome decided and commits nothing.
    private static func handle<H: IntentHandler>(
        _ handler: H, _ intent: H.IntentType, context: IntentContext, timeLimit: Double?, deadlines: any DeadlineScheduler,
        straggler: inout Task<Void, Never>?
    ) async throws -> IntentResponse {
        guard let timeLimit, timeLimit > 0 else { return try await handler.handle(intent, context: context) }
        let running = CancelableTask()
        // Also when the deadline throws `timedOut`: the caller awaits the handler still running.
        defer { straggler = running.task }
        return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<IntentResponse, any Error>) in
            let first = FirstOutcome(continuation)
            let token = deadlines.schedule(after: timeLimit) {
                // The outcome first: the canceled handler must not answer in its place.
                first.resume(with: .failure(timedOut(after: timeLimit)))
                running.cancel()
            }
            running.set(
                Task {
                    let result = await Result(catching: { try await handler.handle(intent, context: context) })
                    deadlines.clear(token)
                    first.resume(with: result)
                })
        }
    }

    private static func describe(_ error: any Error, type: String) -> String {
        guard let decoding = error as? DecodingError else { return "parameters do not fit \(type): \(error)" }
        func path(_ context: DecodingError.Context) -> String {
            let keys = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return keys.isEmpty ? "parameters" : keys.joined(separator: ".").replacingOccurrences(of: ".[", with: "[")
        }
        switch decoding {
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "parameter '\(path(context))' of \(type) is invalid: \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : " in '\(path(context))'"
            return "parameter '\(key.stringValue)'\(parent) is required by \(type)"
        @unknown default:
            return "parameters do not fit \(type): \(error)"
        }
    }
}

extension Result where Failure == any Error {
    /// Captures an async throwing call.
    init(catching body: () async throws -> Success) async {
        do {
            self = .success(try await body())
        } catch {
            self = .failure(error)
        }
    }
}

/// A parameter of a decoded intent, whatever its value type.
@usableFromInline protocol ResolvableParameter: Sendable {
    /// Resolves the parameter and keeps its value, for the intent it was decoded in.
    func resolveParameter(context: IntentContext) async throws -> [ParameterResolution]
    /// Its name on the wire.
    var parameterName: String { get }
    /// The box its value goes in, shared by the copies of one decoded intent.
    var box: ObjectIdentifier { get }
}

/// A parameter the pipeline's decode made, resolved by a closure its `Parameter.read` made: inlined into the module
/// that declares the intent, where it runs specialized for the parameter's type (through `any ResolvableParameter`,
/// the generic witness would look the type's metadata up on every step).
@usableFromInline final class DecodedParameter: ResolvableParameter {
    @usableFromInline let parameterName: String
    @usableFromInline let box: ObjectIdentifier
    @usableFromInline let resolve: @Sendable (IntentContext) async throws -> [ParameterResolution]

    @usableFromInline init(
        parameterName: String, box: ObjectIdentifier, resolve: @escaping @Sendable (IntentContext) async throws -> [ParameterResolution]
    ) {
        self.parameterName = parameterName
        self.box = box
        self.resolve = resolve
    }

    @usableFromInline func resolveParameter(context: IntentContext) async throws -> [ParameterResolution] {
        try await resolve(context)
    }
}

extension Parameter: ResolvableParameter {
    @usableFromInline var parameterName: String { name }

    @inlinable func resolveParameter(context: IntentContext) async throws -> [ParameterResolution] {
        let (resolutions, value) = try await resolve(context: context)
        if let value { resolveInPlace(value) }
        return resolutions
    }
}

/// How the pipeline reads an intent's parameters: what each type declares
/// (found through `Mirror`, as swift-argument-parser finds its options), and
/// the one decode of what was said, whose parameters then receive their values.
enum ParameterReading {
    /// What a type declares: each parameter's template by name, and their names in declaration order.
    private struct Declared: Sendable {
        var templates: [String: ParameterTemplate]
        var order: [String]
        /// Whether the type's decode made exactly the parameters the intent then held (its boxes, in order), as a
        /// synthesized `init(from:)` does: found on its first decode.
        var holding = Holding.unknown
    }

    /// What a type's first decode showed of the parameters its later decodes make.
    private enum Holding: Sendable {
        /// Not decoded yet.
        case unknown
        /// They were the intent's own, and each box's reference sits at this byte offset in the intent (one place
        /// each): a later decode's are the intent's own when those words still hold them.
        case inPlace([Int])
        /// They were not (or the boxes cannot be found in the intent's bytes): the intent is reflected every time.
        case reflected
    }

    private static let declared = Mutex<[ObjectIdentifier: Declared]>([:])

    /// Each parameter of the type as declared (prompt and rules), by name, and their order; looked up once per type.
    private static func declaration<I: Intent>(of type: I.Type) -> Declared {
        if let known = declared.withLock({ $0[ObjectIdentifier(type)] }) { return known }
        var found = Declared(templates: [:], order: [])
        for child in Mirror(reflecting: I()).children {
            guard let label = child.label, label.hasPrefix("_"), let parameter = child.value as? any DeclaresParameter else { continue }
            let name = String(label.dropFirst())
            found.templates[name] = parameter.template
            found.order.append(name)
        }
        declared.withLock { $0[ObjectIdentifier(type)] = found }
        return found
    }

    /// Each parameter of the type as declared (prompt and rules), by name.
    static func templates<I: Intent>(of type: I.Type) -> [String: ParameterTemplate] {
        declaration(of: type).templates
    }

    /// The declared parameters a decode of the type reads under another key than their property's name (custom
    /// `CodingKeys`), which would decode them without their rules; empty when none is (or nothing can be told:
    /// the type's own decode refuses an empty object).
    static func renamedParameters<I: Intent>(of type: I.Type) -> [String] {
        let declared = declaration(of: type)
        let decoding = ParameterDecoding.Decoding(templates: declared.templates, parameters: [:])
        guard
            (try? ParameterDecoding.$current.withValue(decoding) {
                try JSONValueDecoder(lenient: true).decodeTree(I.self, from: .object([:]))
            }) != nil
        else { return [] }
        let read = Set(decoding.decoded.map(\.parameterName))
        return declared.order.filter { !read.contains($0) }
    }

    /// The intent what was said decodes to, and its parameters in declaration order (the boxes its
    /// resolution fills). Those the decode made are the intent's own when they are the declared ones
    /// in the declared order and the intent holds their boxes where its first decode held them (a
    /// synthesized `init(from:)` always does; a hand-written one may give a parameter a new box for
    /// some inputs only); otherwise the decoded intent is reflected.
    static func decode<I: Intent>(_ type: I.Type, from parameters: [String: JSONValue], lenient: Bool) throws -> (I, [any ResolvableParameter]) {
        let declared = declaration(of: type)
        let decoding = ParameterDecoding.Decoding(templates: declared.templates, parameters: parameters)
        let intent = try ParameterDecoding.$current.withValue(decoding) {
            try JSONValueDecoder(lenient: lenient).decodeTree(I.self, from: .object(parameters))
        }
        let made = decoding.decoded
        let inOrder = made.count == declared.order.count && zip(made, declared.order).allSatisfy { $0.parameterName == $1 }
        switch declared.holding {
        case .inPlace(let offsets) where inOrder:
            if holds(intent, made, at: offsets) { return (intent, made) }
            return (intent, Self.parameters(of: intent))
        case .unknown:
            let held = Self.parameters(of: intent)
            let same = inOrder && held.count == made.count && zip(held, made).allSatisfy { $0.box == $1.box }
            let offsets = same ? Self.offsets(of: made.map(\.box), in: intent) : nil
            Self.declared.withLock { $0[ObjectIdentifier(type)]?.holding = offsets.map(Holding.inPlace) ?? .reflected }
            return (intent, held)
        default:
            return (intent, Self.parameters(of: intent))
        }
    }

    /// Where each box's reference sits in the intent's bytes, when each sits at exactly one word.
    private static func offsets<I>(of boxes: [ObjectIdentifier], in intent: I) -> [Int]? {
        withUnsafeBytes(of: intent) { bytes -> [Int]? in
            let word = MemoryLayout<UInt>.size
            var offsets: [Int] = []
            for box in boxes {
                let places = stride(from: 0, through: bytes.count - word, by: MemoryLayout<UInt>.alignment).filter {
                    bytes.loadUnaligned(fromByteOffset: $0, as: UInt.self) == UInt(bitPattern: box)
                }
                guard places.count == 1 else { return nil }
                offsets.append(places[0])
            }
            return offsets
        }
    }

    /// Whether the intent's bytes hold each parameter's box at its offset.
    private static func holds<I>(_ intent: I, _ parameters: [any ResolvableParameter], at offsets: [Int]) -> Bool {
        withUnsafeBytes(of: intent) { bytes in
            zip(parameters, offsets).allSatisfy { parameter, offset in
                offset + MemoryLayout<UInt>.size <= bytes.count
                    && bytes.loadUnaligned(fromByteOffset: offset, as: UInt.self) == UInt(bitPattern: parameter.box)
            }
        }
    }

    /// The parameters of a decoded intent, in declaration order, found by reflection.
    static func parameters<I: Intent>(of intent: I) -> [any ResolvableParameter] {
        Mirror(reflecting: intent).children.compactMap { $0.value as? any ResolvableParameter }
    }
}
