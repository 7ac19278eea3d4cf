import Foundation
import Synchronization
import Testing
@testable import IntentKit

/// The state machine of ARCHITECTURE §3, driven through `IntentPipeline.run`
/// with a handler whose answers each test scripts.
@Suite struct IntentPipelineTests {
    // MARK: Fixtures

    /// A small intent with an optional scalar, a number and a list.
    struct Errand: Intent, Hashable {
        static let typeName = "Errand"
        var item: String?
        var quantity: Int?
        var recipients: [String]?
    }

    /// What the handler was asked to do, in order, and what it saw.
    final class Journal: Sendable {
        private let steps = Mutex<[String]>([])
        private let intents = Mutex<[Errand]>([])
        private let contexts = Mutex<[String: IntentContext]>([:])
        let confirmCalls = Atomic<Int>(0)
        let handleCalls = Atomic<Int>(0)

        func record(_ step: String, _ intent: Errand, _ context: IntentContext) {
            steps.withLock { $0.append(step) }
            intents.withLock { $0.append(intent) }
            contexts.withLock { $0[step] = context }
            switch step {
            case "confirm": confirmCalls.add(1, ordering: .relaxed)
            case "handle": handleCalls.add(1, ordering: .relaxed)
            default: break
            }
        }

        var recordedSteps: [String] { steps.withLock { $0 } }
        var recordedIntents: [Errand] { intents.withLock { $0 } }
        func context(of step: String) -> IntentContext? { contexts.withLock { $0[step] } }
        var confirms: Int { confirmCalls.load(ordering: .relaxed) }
        var handles: Int { handleCalls.load(ordering: .relaxed) }
    }

    struct Boom: Error, CustomStringConvertible {
        var description: String { "the boom error" }
    }

    /// A handler whose three answers are closures, recording every call.
    struct ScriptedHandler: IntentHandler {
        typealias IntentType = Errand

        let journal: Journal
        var onResolve: @Sendable (Errand, IntentContext) throws -> [ParameterResolution]
        var onConfirm: @Sendable (Errand, IntentContext) throws -> ConfirmOutcome = { _, _ in .ready }
        var onHandle: @Sendable (Errand, IntentContext) throws -> HandleOutcome = { _, _ in
            .success(.success("done"))
        }

        func resolve(_ intent: Errand, context: IntentContext) async throws -> [ParameterResolution] {
            journal.record("resolve", intent, context)
            return try onResolve(intent, context)
        }

        func confirm(_ intent: Errand, context: IntentContext) async throws -> ConfirmOutcome {
            journal.record("confirm", intent, context)
            return try onConfirm(intent, context)
        }

        func handle(_ intent: Errand, context: IntentContext) async throws -> HandleOutcome {
            journal.record("handle", intent, context)
            return try onHandle(intent, context)
        }
    }

    static let allResolved: [ParameterResolution] = [
        ParameterResolution("item", .success("Widget")),
        ParameterResolution("quantity", .success(2)),
        ParameterResolution("recipients", .notRequired),
    ]

    static let parameters: [String: JSONValue] = ["item": "Widget", "quantity": 2]

    let journal = Journal()

    func run(
        _ handler: ScriptedHandler, parameters: [String: JSONValue] = IntentPipelineTests.parameters,
        type: String = Errand.typeName, id: String = "intent-1", attempt: Int = 1
    ) async throws -> PipelineOutcome {
        var registry = IntentRegistry()
        try registry.register(handler)
        let envelope = IntentEnvelope(id: id, type: type, parameters: parameters, submittedAt: 1_700_000_000)
        let context = IntentContext(intentID: id, intentType: type, attempt: attempt, submittedAt: 1_700_000_000)
        return await IntentPipeline.run(envelope, registry: registry, context: context)
    }

    func handler(
        resolve: @escaping @Sendable (Errand, IntentContext) throws -> [ParameterResolution] = { _, _ in IntentPipelineTests.allResolved }
    ) -> ScriptedHandler {
        ScriptedHandler(journal: journal, onResolve: resolve)
    }

    // MARK: Success path

    @Test func allParametersResolvedRunsConfirmThenHandleAndSucceedsWithTheHandlersResponse() async throws {
        var handler = handler()
        let response = IntentResponse(code: "delivered", message: "2 widgets delivered", payload: ["count": 2, "ids": ["a", "b"]])
        handler.onHandle = { _, _ in .success(response) }

        let outcome = try await run(handler)

        #expect(outcome.state == .success)
        #expect(outcome.response == response)
        #expect(outcome.resolutions == Self.allResolved)
        #expect(journal.recordedSteps == ["resolve", "confirm", "handle"])
        #expect(journal.confirms == 1)
        #expect(journal.handles == 1)
    }

    @Test func handlersReceiveTheDecodedIntentAndTheDeliveryContext() async throws {
        let outcome = try await run(handler(), parameters: ["item": "Widget", "quantity": 3, "recipients": ["Ann"]], id: "abc", attempt: 4)

        #expect(outcome.state == .success)
        let expected = Errand(item: "Widget", quantity: 3, recipients: ["Ann"])
        #expect(journal.recordedIntents == [expected, expected, expected])
        let context = try #require(journal.context(of: "handle"))
        #expect(context.intentID == "abc")
        #expect(context.intentType == Errand.typeName)
        #expect(context.attempt == 4)
    }

    @Test func anEmptyResolutionListGoesStraightToConfirmAndHandle() async throws {
        let outcome = try await run(handler(resolve: { _, _ in [] }))

        #expect(outcome.state == .success)
        #expect(outcome.resolutions.isEmpty)
        #expect(journal.recordedSteps == ["resolve", "confirm", "handle"])
    }

    // MARK: Unsupported

    @Test func anUnsupportedParameterFailsWithUnsupportedParameterAndKeepsTheResolutions() async throws {
        let resolutions: [ParameterResolution] = [
            ParameterResolution("item", .success("Widget")),
            ParameterResolution("recipients", index: 0, .success("Ann")),
            ParameterResolution("recipients", index: 1, .unsupported(reason: "nobody is called Zed")),
        ]
        let outcome = try await run(handler(resolve: { _, _ in resolutions }))

        #expect(outcome.state == .failure)
        let response = try #require(outcome.response)
        #expect(response.code == FailureCode.unsupportedParameter)
        let message = try #require(response.message)
        #expect(message.contains("nobody is called Zed"))
        #expect(message.contains("recipients[1]"))
        #expect(outcome.resolutions == resolutions)
        #expect(journal.confirms == 0)
        #expect(journal.handles == 0)
    }

    @Test func everyUnsupportedReasonIsInTheMessage() async throws {
        let outcome = try await run(handler(resolve: { _, _ in
            [
                ParameterResolution("item", .unsupported(reason: "not sold here")),
                ParameterResolution("quantity", .unsupported(reason: "too many")),
            ]
        }))

        let message = try #require(outcome.response?.message)
        #expect(message.contains("item: not sold here"))
        #expect(message.contains("quantity: too many"))
    }

    @Test func unsupportedWinsOverNeedsInput() async throws {
        let resolutions: [ParameterResolution] = [
            ParameterResolution("item", .needsValue),
            ParameterResolution("quantity", .disambiguation([1, 2])),
            ParameterResolution("recipients", .unsupported(reason: "no such list")),
        ]
        let outcome = try await run(handler(resolve: { _, _ in resolutions }))

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.unsupportedParameter)
        #expect(outcome.resolutions == resolutions)
        #expect(journal.confirms == 0)
        #expect(journal.handles == 0)
    }

    // MARK: Needs input

    @Test(arguments: [
        ResolutionResult.needsValue,
        .disambiguation(["Jeff Baker", "Jeff Chen"]),
        .confirmationRequired("Widget"),
    ])
    func aParameterNeedingTheUserStopsAtNeedsInputWithoutConfirmOrHandle(_ result: ResolutionResult) async throws {
        let resolutions: [ParameterResolution] = [
            ParameterResolution("item", result),
            ParameterResolution("quantity", .success(2)),
        ]
        let outcome = try await run(handler(resolve: { _, _ in resolutions }))

        #expect(outcome.state == .needsInput)
        #expect(outcome.response == nil)
        #expect(outcome.resolutions == resolutions)
        #expect(journal.recordedSteps == ["resolve"])
        #expect(journal.confirms == 0)
        #expect(journal.handles == 0)
    }

    // MARK: Confirm

    @Test func aConfirmFailureFailsWithItsOwnCodeAndHandleIsNotCalled() async throws {
        var handler = handler()
        handler.onConfirm = { _, _ in .failure(code: "outOfStock", message: "no widgets left") }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "outOfStock", message: "no widgets left"))
        #expect(outcome.resolutions == Self.allResolved)
        #expect(journal.confirms == 1)
        #expect(journal.handles == 0)
    }

    @Test func anIntentFailureThrownByConfirmKeepsItsCode() async throws {
        var handler = handler()
        handler.onConfirm = { _, _ in throw IntentFailure(code: "closed", message: "the shop is closed") }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "closed", message: "the shop is closed"))
        #expect(journal.handles == 0)
    }

    @Test func anotherErrorThrownByConfirmIsAHandlerError() async throws {
        var handler = handler()
        handler.onConfirm = { _, _ in throw Boom() }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.handlerError)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("confirm"))
        #expect(message.contains("the boom error"))
        #expect(journal.handles == 0)
    }

    // MARK: Handle

    @Test func aHandleFailureFailsWithItsCode() async throws {
        var handler = handler()
        handler.onHandle = { _, _ in .failure(code: "printerJam", message: "the printer jammed") }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "printerJam", message: "the printer jammed"))
        #expect(outcome.resolutions == Self.allResolved)
        #expect(journal.handles == 1)
    }

    @Test func anIntentFailureThrownByHandleKeepsItsCode() async throws {
        var handler = handler()
        handler.onHandle = { _, _ in throw IntentFailure(code: "quotaExceeded", message: "daily quota reached") }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "quotaExceeded", message: "daily quota reached"))
    }

    @Test func anotherErrorThrownByHandleIsAHandlerError() async throws {
        var handler = handler()
        handler.onHandle = { _, _ in throw Boom() }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.handlerError)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("handle"))
        #expect(message.contains("the boom error"))
        #expect(outcome.resolutions == Self.allResolved)
    }

    // MARK: Resolve errors

    @Test func anIntentFailureThrownByResolveKeepsItsCode() async throws {
        let outcome = try await run(handler(resolve: { _, _ in throw IntentFailure(code: "catalogDown", message: "catalog offline") }))

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "catalogDown", message: "catalog offline"))
        #expect(journal.recordedSteps == ["resolve"])
    }

    @Test func anotherErrorThrownByResolveIsAHandlerError() async throws {
        let outcome = try await run(handler(resolve: { _, _ in throw Boom() }))

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.handlerError)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("resolve"))
        #expect(message.contains("the boom error"))
        #expect(journal.recordedSteps == ["resolve"])
    }

    // MARK: Decoding and routing

    @Test func undecodableParametersFailAsInvalidIntentNamingTheParameter() async throws {
        let outcome = try await run(handler(), parameters: ["item": "Widget", "quantity": "lots"])

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.invalidIntent)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("'quantity'"))
        #expect(message.contains("lots"))
        #expect(message.contains(Errand.typeName))
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func aBadListElementIsNamedWithItsIndex() async throws {
        let outcome = try await run(handler(), parameters: ["recipients": ["Ann", ["nested": true]]])

        #expect(outcome.response?.code == FailureCode.invalidIntent)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("recipients[1]"))
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func anUnknownTypeFailsWithUnknownIntentType() async throws {
        let outcome = try await run(handler(), type: "BookFlight")

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.unknownIntentType)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("BookFlight"))
        #expect(message.contains(Errand.typeName))
        #expect(outcome.resolutions.isEmpty)
        #expect(journal.recordedSteps.isEmpty)
    }

    // MARK: Resolved values

    @Test func confirmAndHandleSeeWhatResolveReturned() async throws {
        let resolutions: [ParameterResolution] = [
            ParameterResolution("recipients", index: 1, .success("Bob Jones")),
            ParameterResolution("item", .success("Deluxe Widget")),
            ParameterResolution("recipients", index: 0, .success("Alice Smith")),
            ParameterResolution("quantity", .notRequired),
        ]
        var handler = handler(resolve: { _, _ in resolutions })
        handler.onHandle = { _, context in
            .success(IntentResponse(code: "success", payload: [
                "item": context.resolvedValue("item") ?? .null,
                "recipients": .array(context.resolvedValues("recipients")),
            ]))
        }

        let outcome = try await run(handler, parameters: ["item": "widget", "recipients": "alice, bob"])

        #expect(outcome.state == .success)
        #expect(outcome.response?.payload == ["item": "Deluxe Widget", "recipients": ["Alice Smith", "Bob Jones"]])
        for step in ["confirm", "handle"] {
            let context = try #require(journal.context(of: step))
            #expect(context.resolutions == resolutions)
            #expect(context.resolvedValue("item") == "Deluxe Widget")
            #expect(context.resolvedValue("recipients", index: 0) == "Alice Smith")
            #expect(context.resolvedValue("recipients", index: 1) == "Bob Jones")
            #expect(context.resolvedValue("recipients") == nil)
            #expect(context.resolvedValues("recipients") == ["Alice Smith", "Bob Jones"])
            #expect(context.resolvedValue("quantity") == nil)
            #expect(context.resolvedValue("missing") == nil)
        }
        // resolve itself runs before anything is resolved.
        #expect(journal.context(of: "resolve")?.resolutions == [])
    }

    // MARK: Lenient parameters

    @Test func lenientCommandLineParametersDecode() async throws {
        let outcome = try await run(handler(), parameters: ["item": "Widget", "quantity": "3", "recipients": "Alice, Bob"])

        #expect(outcome.state == .success)
        #expect(journal.recordedIntents.first == Errand(item: "Widget", quantity: 3, recipients: ["Alice", "Bob"]))
    }

    @Test func missingOptionalParametersDecodeAsNil() async throws {
        let outcome = try await run(handler(), parameters: ["item": nil])

        #expect(outcome.state == .success)
        #expect(journal.recordedIntents.first == Errand(item: nil, quantity: nil, recipients: nil))
    }
}
