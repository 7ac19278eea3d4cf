import Foundation
import Synchronization

/// Where the pipeline left an intent: `needsInput`, `success` or `failure`.
public struct PipelineOutcome: Sendable, Hashable {
    public var state: IntentState
    public var response: IntentResponse?
    public var resolutions: [ParameterResolution]
    /// Set when a step threw a `TransientFailure`: the intent should be tried again.
    public var retryReason: String?
    /// The retry waits for storage (a database busy, full or failing), not for
    /// the handler's own condition: it is not bounded by the type's
    /// `RetryPolicy`, so the intent waits until the storage works again.
    public var waitsForStorage = false

    public init(state: IntentState, response: IntentResponse? = nil, resolutions: [ParameterResolution] = [], retryReason: String? = nil) {
        self.state = state
        self.response = response
        self.resolutions = resolutions
        self.retryReason = retryReason
    }

    static func retry(_ failure: TransientFailure, resolutions: [ParameterResolution] = []) -> PipelineOutcome {
        PipelineOutcome(state: .inProgress, resolutions: resolutions, retryReason: failure.reason)
    }

    /// A retry for an error that reports itself passing (`RetryableError`).
    static func retry(storage error: any Error, step: String, resolutions: [ParameterResolution] = []) -> PipelineOutcome {
        var outcome = PipelineOutcome(state: .inProgress, resolutions: resolutions, retryReason: "\(step): \(error)")
        outcome.waitsForStorage = true
        return outcome
    }

    public static func failure(_ failure: IntentFailure, resolutions: [ParameterResolution] = []) -> PipelineOutcome {
        PipelineOutcome(state: .failure, response: failure.response, resolutions: resolutions)
    }
}

/// Runs resolve → confirm → handle for one intent and turns the answers into
/// the state machine: any `unsupported` fails the intent; any parameter that
/// needs the user stops at `needsInput`; otherwise confirm, then handle.
public enum IntentPipeline {
    /// Runs an envelope through the registry's handler for its type and
    /// returns its outcome once the handler has returned.
    /// - Parameter timeLimit: overrides the handler's own `timeLimit` when set.
    public static func run(
        _ envelope: IntentEnvelope, registry: IntentRegistry, context: IntentContext, timeLimit: Double? = nil
    ) async -> PipelineOutcome {
        let reported = Mutex<PipelineOutcome?>(nil)
        await run(envelope, registry: registry, context: context, timeLimit: timeLimit) { outcome in
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
        report: @Sendable (PipelineOutcome) async -> Void
    ) async {
        guard let entry = registry.entry(for: envelope.type) else {
            await report(.failure(IntentFailure(
                code: FailureCode.unknownIntentType,
                message: "this worker has no handler for intent type '\(envelope.type)' (it serves \(registry.typeNames.joined(separator: ", ")))")))
            return
        }
        let straggler = await entry.run(envelope, context, timeLimit ?? entry.timeLimit, report)
        await straggler?.value
    }

    static let canceled = PipelineOutcome(
        state: .canceled, response: IntentResponse(code: FailureCode.canceled, message: "canceled before it was handled"))

    /// Runs one handler; `report` gets the outcome. Returns the handler's task
    /// when it is still running past its time limit.
    static func run<H: IntentHandler>(
        _ handler: H, envelope: IntentEnvelope, context: IntentContext, timeLimit: Double?,
        report: @Sendable (PipelineOutcome) async -> Void
    ) async -> Task<Void, Never>? {
        var straggler: Task<Void, Never>?
        let outcome = await run(handler, envelope: envelope, context: context, timeLimit: timeLimit, straggler: &straggler)
        await report(outcome)
        return straggler
    }

    private static func run<H: IntentHandler>(
        _ handler: H, envelope: IntentEnvelope, context: IntentContext, timeLimit: Double?, straggler: inout Task<Void, Never>?
    ) async -> PipelineOutcome {
        var context = context
        context.confirmed = Set(envelope.confirmed ?? [])
        context.turn = envelope.turn
        let intent: H.IntentType
        do {
            intent = try JSONValueDecoder().decode(H.IntentType.self, from: .object(envelope.parameters))
        } catch {
            return .failure(IntentFailure(code: FailureCode.invalidIntent, message: describe(error, type: envelope.type)))
        }

        var resolutions: [ParameterResolution]
        do {
            resolutions = try await handler.resolve(intent, context: context)
        } catch let transient as TransientFailure {
            return .retry(transient)
        } catch let error as any RetryableError where error.isRetryable {
            return .retry(storage: error, step: "resolve")
        } catch {
            return .failure(failure(from: error, step: "resolve"))
        }

        guard resolutions.count <= maximumResolutions else {
            // A list of half a million names (a 1 MiB body can hold that) would make a question
            // no status event can carry, and a handler that writes as many rows.
            return .failure(IntentFailure(
                code: FailureCode.outcomeTooLarge,
                message: "resolution gave \(resolutions.count) values, over the limit of \(maximumResolutions) an intent may have"))
        }
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
        for index in resolutions.indices {
            if case .confirmationRequired(let value) = resolutions[index].result, context.isConfirmed(resolutions[index].parameter) {
                resolutions[index].result = .success(value)
            }
        }
        if resolutions.contains(where: { $0.result.needsInput }) {
            return PipelineOutcome(state: .needsInput, resolutions: resolutions)
        }

        context.resolutions = resolutions
        if await context.isCanceled() { return canceled }
        do {
            switch try await handler.confirm(intent, context: context) {
            case .ready:
                break
            case .failure(let failure):
                return .failure(failure, resolutions: resolutions)
            case .confirmationRequired(let prompt):
                if !context.isConfirmed(wholeIntent) {
                    return PipelineOutcome(
                        state: .needsInput, resolutions: resolutions + [ParameterResolution(wholeIntent, .confirmationRequired(.string(prompt)))])
                }
            }
        } catch let transient as TransientFailure {
            return .retry(transient, resolutions: resolutions)
        } catch let error as any RetryableError where error.isRetryable {
            return .retry(storage: error, step: "confirm", resolutions: resolutions)
        } catch {
            return .failure(failure(from: error, step: "confirm"), resolutions: resolutions)
        }

        if await context.isCanceled() { return canceled }
        do {
            switch try await handle(handler, intent, context: context, timeLimit: timeLimit, straggler: &straggler) {
            case .success(let response):
                return PipelineOutcome(state: .success, response: response, resolutions: resolutions)
            case .failure(let failure):
                return .failure(failure, resolutions: resolutions)
            }
        } catch let transient as TransientFailure {
            return .retry(transient, resolutions: resolutions)
        } catch let error as any RetryableError where error.isRetryable {
            return .retry(storage: error, step: "handle", resolutions: resolutions)
        } catch {
            return .failure(failure(from: error, step: "handle"), resolutions: resolutions)
        }
    }

    /// The most resolutions (parameters, and elements of list parameters) an
    /// intent may have; past it, it fails with `outcomeTooLarge` before `confirm` and `handle`.
    public static let maximumResolutions = 1_000

    /// The name under which a whole-intent confirmation is asked and answered.
    public static let wholeIntent = "intent"

    /// Runs `handle`, failing with `timedOut` (and canceling it) past the limit.
    /// The outcome is given at the deadline even if the handler ignores the
    /// cancellation; its task is left in `straggler` for the caller to await.
    /// The worker records `timedOut` in the intent's ledger before it publishes
    /// it, so a handler that writes through `OnceOnly` afterwards finds the
    /// outcome decided and commits nothing.
    private static func handle<H: IntentHandler>(
        _ handler: H, _ intent: H.IntentType, context: IntentContext, timeLimit: Double?, straggler: inout Task<Void, Never>?
    ) async throws -> HandleOutcome {
        guard let timeLimit, timeLimit > 0 else { return try await handler.handle(intent, context: context) }
        let running = CancelableTask()
        let outcome = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HandleOutcome, any Error>) in
            let first = FirstOutcome(continuation)
            let token = Deadlines.shared.schedule(after: timeLimit) {
                // The outcome first: the canceled handler must not answer in its place.
                first.resume(with: .success(.failure(code: FailureCode.timedOut, message: "the handler did not finish within \(JSONValue.formatNumber(timeLimit)) s")))
                running.cancel()
            }
            running.set(Task {
                let result = await Result(catching: { try await handler.handle(intent, context: context) })
                Deadlines.shared.clear(token)
                first.resume(with: result)
            })
        }
        straggler = running.task
        return outcome
    }

    private static func failure(from error: any Error, step: String) -> IntentFailure {
        if let failure = error as? IntentFailure { return failure }
        return IntentFailure(code: FailureCode.handlerError, message: "\(step) threw: \(error)")
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
