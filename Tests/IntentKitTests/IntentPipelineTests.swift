import Foundation
import Synchronization
import Testing

@testable import IntentKit

/// The state machine of ARCHITECTURE §3, driven through `IntentPipeline.run`
/// with typed parameters and a handler whose answers each test scripts.
@Suite struct IntentPipelineTests {
    // MARK: Fixtures

    /// A thing the app looks up by name in its catalog (a dependency).
    struct Item: ParameterValue, Hashable {
        var name: String

        static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<Item> {
            try context.dependency(Catalog.self).lookup(spoken)
        }

        var spoken: String { name }
        var displayValue: JSONValue { .string(name) }
    }

    /// The app's catalog: what a name resolves to.
    struct Catalog: Sendable {
        var lookup: @Sendable (String) throws -> ParameterResult<Item> = { said in
            switch said.lowercased() {
            case "widget", "deluxe widget": .success(Item(name: "Deluxe Widget"))
            case "gadget":
                .disambiguation(
                    [ParameterOption(Item(name: "gadget-s"), title: "Small Gadget"), ParameterOption(Item(name: "gadget-l"), title: "Large Gadget")],
                    "Which gadget: the small one or the large one?")
            case "zed": .unsupported("nothing is called Zed")
            default: .needsValue()
            }
        }
    }

    /// A small intent with a looked-up item, an optional number in a range and a list.
    struct Errand: Intent {
        static let typeName = "Errand"
        @Parameter("What should I fetch?") var item: Item
        @Parameter("How many?", in: 1...10) var quantity: Int?
        @Parameter("Who is it for?") var recipients: [String]?
    }

    /// What the handler saw: the resolved item, quantity and recipients.
    struct Seen: Hashable {
        var item: String
        var quantity: Int?
        var recipients: [String]?

        init(_ errand: Errand) {
            item = errand.item.name
            quantity = errand.quantity
            recipients = errand.recipients
        }

        init(item: String, quantity: Int?, recipients: [String]?) {
            self.item = item
            self.quantity = quantity
            self.recipients = recipients
        }
    }

    /// What the handler was asked to do, in order, and what it saw.
    final class Journal: Sendable {
        private let steps = Mutex<[String]>([])
        private let intents = Mutex<[Seen]>([])
        private let contexts = Mutex<[String: IntentContext]>([:])

        func record(_ step: String, _ intent: Errand, _ context: IntentContext) {
            steps.withLock { $0.append(step) }
            intents.withLock { $0.append(Seen(intent)) }
            contexts.withLock { $0[step] = context }
        }

        var recordedSteps: [String] { steps.withLock { $0 } }
        var recordedIntents: [Seen] { intents.withLock { $0 } }
        func context(of step: String) -> IntentContext? { contexts.withLock { $0[step] } }
        var handles: Int { recordedSteps.filter { $0 == "handle" }.count }
    }

    struct Boom: Error, CustomStringConvertible {
        var description: String { "the boom error" }
    }

    /// A handler whose three steps are closures, recording every call.
    struct ScriptedHandler: IntentHandler {
        let journal: Journal
        var catalog = Catalog()
        var onResolve: @Sendable (Errand, IntentContext) throws -> Void = { _, _ in }
        var onConfirm: @Sendable (Errand, IntentContext) throws -> Void = { _, _ in }
        var onHandle: @Sendable (Errand, IntentContext) throws -> IntentResponse = { _, _ in .success("done") }

        var dependencies: [any Sendable] { [catalog] }

        func resolve(_ intent: Errand, context: IntentContext) async throws {
            journal.record("resolve", intent, context)
            try onResolve(intent, context)
        }

        func confirm(_ intent: Errand, context: IntentContext) async throws {
            journal.record("confirm", intent, context)
            try onConfirm(intent, context)
        }

        func handle(_ intent: Errand, context: IntentContext) async throws -> IntentResponse {
            journal.record("handle", intent, context)
            return try onHandle(intent, context)
        }
    }

    static let allResolved: [ParameterResolution] = [
        ParameterResolution("item", .success("Deluxe Widget")),
        ParameterResolution("quantity", .success(2)),
        ParameterResolution("recipients", .notRequired),
    ]

    static let parameters: [String: JSONValue] = ["item": "Widget", "quantity": 2]

    let journal = Journal()

    func run(
        _ handler: ScriptedHandler, parameters: [String: JSONValue] = IntentPipelineTests.parameters,
        type: String = Errand.typeName, id: String = "intent-1", attempt: Int = 1, lenient: Bool = false,
        confirmed: [String]? = nil
    ) async throws -> PipelineOutcome {
        var registry = IntentRegistry()
        try registry.register(handler)
        var envelope = IntentEnvelope(id: id, type: type, parameters: parameters, submittedAt: 1_700_000_000)
        envelope.lenientParameters = lenient
        envelope.confirmed = confirmed
        let context = IntentContext(intentID: id, intentType: type, attempt: attempt, submittedAt: 1_700_000_000)
        return await IntentPipeline.run(envelope, registry: registry, context: context)
    }

    var handler: ScriptedHandler { ScriptedHandler(journal: journal) }

    /// An errand whose own `init(from:)` reads its parameters in another order than it declares them.
    struct BackwardsErrand: FetchingErrand {
        static let typeName = "BackwardsErrand"
        @Parameter("What should I fetch?") var item: Item
        @Parameter("How many?", in: 1...10) var quantity: Int?

        enum CodingKeys: String, CodingKey { case item, quantity }

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            _quantity = try container.decode(Parameter<Int?>.self, forKey: .quantity)
            _item = try container.decode(Parameter<Item>.self, forKey: .item)
        }
    }

    /// An errand with an item and a quantity, whatever its own `init(from:)` does.
    protocol FetchingErrand: Intent {
        var item: Item { get }
        var quantity: Int? { get }
    }

    /// Says what it fetched: the resolved values, as the intent holds them when handled.
    struct FetchHandler<Errand: FetchingErrand>: IntentHandler {
        var catalog = Catalog()
        var dependencies: [any Sendable] { [catalog] }

        func handle(_ intent: Errand, context: IntentContext) async throws -> IntentResponse {
            .success("fetched \(intent.quantity ?? 0) \(intent.item.name)")
        }
    }

    /// Runs `Self.parameters` as an `Errand` twice (its type's first decode and a later one), each to success with
    /// what the handler saw of the resolved values; the outcomes, for more checks.
    static func runTwice<Errand: FetchingErrand>(_ type: Errand.Type) async throws -> [PipelineOutcome] {
        var registry = IntentRegistry()
        try registry.register(FetchHandler<Errand>())
        var outcomes: [PipelineOutcome] = []
        for run in 1...2 {
            let envelope = IntentEnvelope(
                id: "\(Errand.typeName)-\(run)", type: Errand.typeName, parameters: Self.parameters, submittedAt: 1_700_000_000)
            let context = IntentContext(intentID: envelope.id, intentType: envelope.type, attempt: 1, submittedAt: 1_700_000_000)
            let outcome = await IntentPipeline.run(envelope, registry: registry, context: context)
            #expect(outcome.state == .success, "run \(run)")
            #expect(outcome.response?.message == "fetched 2 Deluxe Widget", "run \(run): the handler sees the resolved values")
            outcomes.append(outcome)
        }
        return outcomes
    }

    @Test func anIntentThatDecodesItsParametersItsOwnWayIsResolvedInDeclarationOrderEveryTime() async throws {
        for (run, outcome) in try await Self.runTwice(BackwardsErrand.self).enumerated() {
            #expect(outcome.resolutions.map(\.parameter) == ["item", "quantity"], "run \(run + 1)")
        }
    }

    // MARK: Decoded parameters

    /// An errand of every parameter shape, a type of its own so that its first decode is this suite's.
    struct ShapedErrand: Intent {
        static let typeName = "ShapedErrand"
        @Parameter("What should I fetch?") var item: Item
        @Parameter("How many?", in: 1...10) var quantity: Int?
        @Parameter("Who is it for?") var recipients: [String]?
        @Parameter("Which room?", choices: { _ in ["Kitchen", "Hall"] }) var room: String
    }

    /// From its second decode on, a synthesized `init(from:)`'s parameters are resolved through what the decode
    /// handed over (the closures made where the parameter's type is known), and those are the intent's own: what
    /// they resolve is what the intent reads.
    @Test func theDecodeHandsOverTheIntentsOwnParametersAndTheyResolveIntoIt() async throws {
        let said: [String: JSONValue] = ["item": "widget", "quantity": 2, "recipients": ["Ann"], "room": "kitchen"]
        var context = IntentContext(intentID: "shaped", intentType: ShapedErrand.typeName)
        context.dependencies = [Catalog()]
        for decode in 1...2 {
            let (intent, parameters) = try ParameterReading.decode(ShapedErrand.self, from: said, lenient: false)
            #expect(parameters.map(\.parameterName) == ["item", "quantity", "recipients", "room"], "decode \(decode)")
            #expect(
                parameters.map(\.box) == ParameterReading.parameters(of: intent).map(\.box), "decode \(decode): the intent's own boxes")
            if decode == 2 {
                #expect(parameters.allSatisfy { $0 is DecodedParameter }, "the decode's own, once the first decode showed they are the intent's")
            }
            for parameter in parameters { _ = try await parameter.resolveParameter(context: context) }
            #expect(intent.item.name == "Deluxe Widget", "decode \(decode)")
            #expect(intent.quantity == 2, "decode \(decode)")
            #expect(intent.recipients == ["Ann"], "decode \(decode)")
            #expect(intent.room == "Kitchen", "decode \(decode)")
        }
    }

    /// An errand whose own `init(from:)` decodes its parameters in order, then sets one, which gives it a box of its
    /// own: the decode's parameters are then not the intent's, and it is resolved by reflection every time.
    struct ReboxingErrand: FetchingErrand {
        static let typeName = "ReboxingErrand"
        @Parameter("What should I fetch?") var item: Item
        @Parameter("How many?", in: 1...10) var quantity: Int?

        init() {}

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            _item = try container.decode(Parameter<Item>.self, forKey: .item)
            _quantity = try container.decode(Parameter<Int?>.self, forKey: .quantity)
            quantity = nil
        }
    }

    @Test func anIntentThatReplacesADecodedParametersBoxIsResolvedIntoItsOwnEveryTime() async throws {
        _ = try await Self.runTwice(ReboxingErrand.self)
    }

    /// An errand whose own `init(from:)` keeps the decode's parameters, except that an item said as "nothing" gets a
    /// parameter of its own, never said (so that it is asked for): which box the intent holds depends on the input.
    struct SometimesReboxingErrand: Intent {
        static let typeName = "SometimesReboxingErrand"
        @Parameter("How many?") var quantity: Int?
        @Parameter("What should I fetch?") var item: Item

        init() {}

        init(from decoder: any Decoder) throws {
            let said = try decoder.container(keyedBy: CodingKeys.self)
            (_quantity, _item) = (try said.decode(Parameter<Int?>.self, forKey: .quantity), try said.decode(Parameter<Item>.self, forKey: .item))
            if try said.decode(String.self, forKey: .item) == "nothing" { _item = Parameter("What should I fetch?") }
        }
    }

    /// The type's first decode keeps the decode's parameters, so later decodes hand theirs over; one that gives the
    /// item a new box must hand over the intent's own instead, or resolution fills a box the intent no longer holds
    /// and the handler reads an item never resolved (a crash).
    @Test func aDecodeThatReplacesABoxForOneInputOnlyHandsOverTheIntentsOwnParameters() async throws {
        var context = IntentContext(intentID: "sometimes", intentType: SometimesReboxingErrand.typeName)
        context.dependencies = [Catalog()]
        for (decode, item) in ["widget", "widget", "nothing", "widget"].enumerated() {
            let said: [String: JSONValue] = ["item": .string(item), "quantity": 2]
            let (intent, parameters) = try ParameterReading.decode(SometimesReboxingErrand.self, from: said, lenient: false)
            try #require(
                parameters.map(\.box) == ParameterReading.parameters(of: intent).map(\.box),
                "decode \(decode + 1), item '\(item)': the intent's own boxes")
            var resolved: [String] = []
            for parameter in parameters {
                for resolution in try await parameter.resolveParameter(context: context) {
                    if case .success = resolution.result { resolved.append(resolution.parameter) }
                }
            }
            #expect(intent.quantity == 2, "decode \(decode + 1)")
            if item == "nothing" {
                #expect(resolved == ["quantity"], "the item the intent holds was never said")
            } else {
                #expect(resolved == ["quantity", "item"], "decode \(decode + 1)")
                #expect(intent.item.name == "Deluxe Widget", "decode \(decode + 1)")
                if decode > 0 { #expect(parameters.allSatisfy { $0 is DecodedParameter }, "decode \(decode + 1): the decode's own") }
            }
        }
    }

    // MARK: Success path

    @Test func aParameterReadsAsWhatWasSetAndAnOptionalOneNeverSetReadsAsNil() {
        var errand = Errand()
        #expect(errand.quantity == nil, "optional and never set: nil, not a read too early")
        #expect(errand.recipients == nil)
        errand.quantity = 3
        errand.recipients = ["Ann", "Bo"]
        errand.item = Item(name: "milk")
        #expect(errand.quantity == 3)
        #expect(errand.recipients == ["Ann", "Bo"])
        #expect(errand.item.name == "milk")
        errand.quantity = nil
        #expect(errand.quantity == nil, "set to nil: nil")
    }

    @Test func allParametersResolvedRunsResolveConfirmThenHandleAndSucceedsWithTheHandlersResponse() async throws {
        var handler = handler
        let response = IntentResponse(code: "delivered", message: "2 widgets delivered", payload: ["count": 2, "ids": ["a", "b"]])
        handler.onHandle = { _, _ in response }

        let outcome = try await run(handler)

        #expect(outcome.state == .success)
        #expect(outcome.response == response)
        #expect(outcome.resolutions == Self.allResolved)
        #expect(journal.recordedSteps == ["resolve", "confirm", "handle"])
    }

    @Test func handlersReceiveTheResolvedIntentAndTheDeliveryContext() async throws {
        let outcome = try await run(handler, parameters: ["item": "widget", "quantity": 3, "recipients": ["Ann"]], id: "abc", attempt: 4)

        #expect(outcome.state == .success)
        // "widget" was said; the handler reads what the catalog resolved it to.
        let expected = Seen(item: "Deluxe Widget", quantity: 3, recipients: ["Ann"])
        #expect(journal.recordedIntents == [expected, expected, expected])
        let context = try #require(journal.context(of: "handle"))
        #expect(context.intentID == "abc")
        #expect(context.intentType == Errand.typeName)
        #expect(context.attempt == 4)
        #expect(context.resolvedValue("item") == "Deluxe Widget")
        #expect(context.resolvedValues("recipients") == ["Ann"])
    }

    @Test func aMissingOptionalParameterIsNotRequiredAndReadsAsNil() async throws {
        let outcome = try await run(handler, parameters: ["item": "widget", "quantity": nil])

        #expect(outcome.state == .success)
        #expect(outcome.resolutions.filter { $0.parameter != "item" }.map(\.result) == [.notRequired, .notRequired])
        #expect(journal.recordedIntents.first == Seen(item: "Deluxe Widget", quantity: nil, recipients: nil))
    }

    /// An errand whose item is optional: what its type resolves as not required reads as nil.
    struct MaybeErrand: Intent {
        static let typeName = "MaybeErrand"
        @Parameter var item: Item?
    }

    final class MaybeHandler: IntentHandler {
        let seen = Mutex<[String?]>([])
        var dependencies: [any Sendable] { [Catalog(lookup: { said in said == "nothing" ? .notRequired : .success(Item(name: said)) })] }
        func handle(_ intent: MaybeErrand, context: IntentContext) async throws -> IntentResponse {
            seen.withLock { $0.append(intent.item?.name) }
            return .success("ok")
        }
    }

    /// A type may say a value is `notRequired` (SiriKit's own answer). For a required parameter that left no value,
    /// and the handler's read of it stopped the worker process (and every run on it, delivery after delivery). Now
    /// the intent fails `unsupportedParameter` before its handler runs; an optional parameter reads as nil.
    @Test func aValueItsTypeSaysIsNotRequiredFailsARequiredParameterAndIsNilForAnOptionalOne() async throws {
        var scripted = handler
        scripted.catalog.lookup = { said in said == "nothing" ? .notRequired : .success(Item(name: said)) }
        let outcome = try await run(scripted, parameters: ["item": "nothing"])
        #expect(outcome.state == .failure && outcome.response?.code == FailureCode.unsupportedParameter, "\(outcome)")
        #expect(outcome.response?.message?.contains("declare it optional") == true, "\(String(describing: outcome.response))")
        #expect(journal.handles == 0)

        let maybe = MaybeHandler()
        var registry = IntentRegistry()
        try registry.register(maybe)
        let envelope = IntentEnvelope(id: "m", type: MaybeErrand.typeName, parameters: ["item": "nothing"], submittedAt: 1)
        let context = IntentContext(intentID: "m", intentType: MaybeErrand.typeName, attempt: 1, submittedAt: 1)
        let optional = await IntentPipeline.run(envelope, registry: registry, context: context)
        #expect(optional.state == .success, "\(optional)")
        #expect(maybe.seen.withLock { $0 } == [nil])
    }

    /// A step that throws a `ParameterRequest` that is not a question (an `unsupported` value, the SiriKit habit)
    /// used to leave the intent waiting in `needsInput` with nothing to answer, until its question expired.
    @Test func aRequestThatAsksNothingEndsTheIntentInsteadOfWaiting() async throws {
        var scripted = handler
        scripted.onConfirm = { _, _ in throw ParameterRequest(ParameterResolution("quantity", .unsupported(reason: "too many today"))) }
        let unsupported = try await run(scripted)
        #expect(unsupported.state == .failure && unsupported.response?.code == FailureCode.unsupportedParameter, "\(unsupported)")
        #expect(unsupported.response?.message?.contains("too many today") == true)
        scripted.onConfirm = { _, _ in throw ParameterRequest(ParameterResolution("quantity", .success(2))) }
        let nothing = try await run(scripted)
        #expect(nothing.state == .failure && nothing.response?.code == FailureCode.handlerError, "\(nothing)")
        #expect(journal.handles == 0)
    }

    // MARK: Unsupported
    // MARK: Unsupported

    @Test func anUnsupportedValueFailsWithUnsupportedParameterAndKeepsTheResolutions() async throws {
        let outcome = try await run(handler, parameters: ["item": "Zed", "recipients": ["Ann", "Bob"]])

        #expect(outcome.state == .failure)
        let response = try #require(outcome.response)
        #expect(response.code == FailureCode.unsupportedParameter)
        let message = try #require(response.message)
        #expect(message.contains("item: nothing is called Zed"))
        #expect(outcome.resolutions.contains(ParameterResolution("recipients", index: 1, .success("Bob"))))
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func aValueOutsideItsRangeIsUnsupportedAndEveryReasonIsInTheMessage() async throws {
        let outcome = try await run(handler, parameters: ["item": "Zed", "quantity": 11])

        let message = try #require(outcome.response?.message)
        #expect(outcome.response?.code == FailureCode.unsupportedParameter)
        #expect(message.contains("item: nothing is called Zed"))
        #expect(message.contains("quantity: must be from 1 to 10, not 11"))
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func unsupportedWinsOverNeedsInput() async throws {
        let outcome = try await run(handler, parameters: ["item": "gadget", "quantity": 0])

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.unsupportedParameter)
        #expect(outcome.resolutions.first?.result.outcome == "disambiguation")
        #expect(journal.recordedSteps.isEmpty)
    }

    // MARK: Needs input, in words

    @Test func aMissingRequiredParameterIsAskedInItsPromptsWords() async throws {
        let outcome = try await run(handler, parameters: ["quantity": 2])

        #expect(outcome.state == .needsInput)
        #expect(outcome.response == nil)
        #expect(outcome.resolutions.first == ParameterResolution("item", .needsValue, prompt: "What should I fetch?"))
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func aLookupWithSeveralMatchesAsksWithItsOwnDialogAndTitledOptions() async throws {
        let outcome = try await run(handler, parameters: ["item": "gadget"])

        #expect(outcome.state == .needsInput)
        let question = try #require(outcome.resolutions.first)
        #expect(question.result == .disambiguation(["gadget-s", "gadget-l"]))
        #expect(question.optionTitles == ["Small Gadget", "Large Gadget"])
        #expect(question.prompt == "Which gadget: the small one or the large one?")
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func aLookupThatNeedsAValueFallsBackToThePrompt() async throws {
        let outcome = try await run(handler, parameters: ["item": "something"])

        #expect(outcome.state == .needsInput)
        #expect(outcome.resolutions.first?.prompt == "What should I fetch?")
    }

    @Test func aQuestionThrownFromResolveStopsAtNeedsInputAndReplacesThatParametersResolution() async throws {
        var handler = handler
        handler.onResolve = { intent, _ in
            if intent.recipients == nil { throw intent.$recipients.needsValue("Who should get the widgets?") }
        }

        let outcome = try await run(handler)

        #expect(outcome.state == .needsInput)
        #expect(
            outcome.resolutions.filter { $0.parameter == "recipients" } == [
                ParameterResolution("recipients", .needsValue, prompt: "Who should get the widgets?")
            ])
        #expect(journal.recordedSteps == ["resolve"])
    }

    @Test func aDisambiguationThrownFromResolveCarriesTitles() async throws {
        var handler = handler
        handler.onResolve = { intent, _ in
            throw intent.$quantity.disambiguation(among: [ParameterOption(2, title: "a pair"), ParameterOption(12, title: "a dozen")])
        }

        let outcome = try await run(handler)

        let question = try #require(outcome.resolutions.first { $0.parameter == "quantity" })
        #expect(question.result == .disambiguation([2, 12]))
        #expect(question.optionTitles == ["a pair", "a dozen"])
        #expect(question.prompt == "How many?")
        #expect(journal.handles == 0)
    }

    // MARK: Confirm

    @Test func aConfirmationRequestAsksAndAConfirmedAnswerLetsHandleRun() async throws {
        var handler = handler
        handler.onConfirm = { _, context in try context.requestConfirmation("Fetch 2 widgets?") }

        let asked = try await run(handler)
        #expect(asked.state == .needsInput)
        let question = try #require(asked.resolutions.first { $0.parameter == IntentPipeline.wholeIntent })
        #expect(question.result == .confirmationRequired("Fetch 2 widgets?"))
        #expect(question.prompt == "Fetch 2 widgets?")
        #expect(journal.handles == 0)

        let answered = try await run(handler, confirmed: [IntentPipeline.wholeIntent])
        #expect(answered.state == .success)
        #expect(journal.handles == 1)
    }

    @Test func aParameterConfirmationIsAskedOnceAndStandsWhenConfirmed() async throws {
        var handler = handler
        handler.onConfirm = { intent, context in
            if intent.quantity ?? 0 > 5 { try intent.$quantity.requestConfirmation("Really 8?", in: context) }
        }

        let asked = try await run(handler, parameters: ["item": "widget", "quantity": 8])
        #expect(asked.state == .needsInput)
        #expect(
            asked.resolutions.first { $0.parameter == "quantity" } == ParameterResolution("quantity", .confirmationRequired(8), prompt: "Really 8?"))

        let answered = try await run(handler, parameters: ["item": "widget", "quantity": 8], confirmed: ["quantity"])
        #expect(answered.state == .success)
        #expect(journal.handles == 1)
    }

    @Test func anIntentFailureThrownByConfirmKeepsItsCodeAndHandleIsNotCalled() async throws {
        var handler = handler
        handler.onConfirm = { _, _ in throw IntentFailure(code: "outOfStock", message: "no widgets left") }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "outOfStock", message: "no widgets left"))
        #expect(outcome.resolutions == Self.allResolved)
        #expect(journal.handles == 0)
    }

    @Test func anotherErrorThrownByConfirmIsAHandlerError() async throws {
        var handler = handler
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

    @Test func anIntentFailureThrownByHandleKeepsItsCodeAndPayload() async throws {
        var handler = handler
        handler.onHandle = { _, _ in throw IntentFailure(code: "quotaExceeded", message: "daily quota reached", payload: ["left": 0]) }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "quotaExceeded", message: "daily quota reached", payload: ["left": 0]))
        #expect(outcome.resolutions == Self.allResolved)
        #expect(journal.handles == 1)
    }

    @Test func anotherErrorThrownByHandleIsAHandlerError() async throws {
        var handler = handler
        handler.onHandle = { _, _ in throw Boom() }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.handlerError)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("handle"))
        #expect(message.contains("the boom error"))
        #expect(outcome.resolutions == Self.allResolved)
    }

    @Test func aTransientFailureAsksForARetry() async throws {
        var handler = handler
        handler.onHandle = { _, _ in throw TransientFailure("the printer is warming up") }

        let outcome = try await run(handler)

        #expect(outcome.state == .inProgress)
        #expect(outcome.retryReason == "the printer is warming up")
    }

    /// Deadlines on a dispatch timer, as the worker's own timer thread does: not
    /// on the cooperative pool, which busy tests beside this one may fill.
    final class DispatchDeadlines: DeadlineScheduler {
        private let pending = Mutex<Set<Int>>([])
        private let next = Atomic<Int>(0)

        func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Int {
            let token = next.add(1, ordering: .relaxed).newValue
            pending.withLock { _ = $0.insert(token) }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                if pending.withLock({ $0.remove(token) }) != nil { action() }
            }
            return token
        }

        func clear(_ token: Int) {
            pending.withLock { _ = $0.remove(token) }
        }
    }

    @Test func pastItsTimeLimitTheIntentTimesOutAndRunReturnsOnlyOnceTheHandlerHasReturned() async throws {
        final class Flag: Sendable { let value = Atomic<Bool>(false) }
        let returned = Flag()
        let release = DispatchSemaphore(value: 0)
        var handler = handler
        handler.onHandle = { _, _ in
            // A call that cannot be hung up: it ignores the task's cancellation and
            // returns only once the test has seen the time limit reported.
            release.wait()
            returned.value.store(true, ordering: .sequentiallyConsistent)
            return .success("too late")
        }
        var registry = IntentRegistry()
        try registry.register(handler)
        let reported = Mutex<PipelineOutcome?>(nil)
        let running = Task {
            await IntentPipeline.run(
                IntentEnvelope(id: "slow", type: Errand.typeName, parameters: Self.parameters, submittedAt: 1),
                registry: registry, context: IntentContext(intentID: "slow", intentType: Errand.typeName), timeLimit: 0.05,
                deadlines: DispatchDeadlines()
            ) { outcome in reported.withLock { $0 = outcome } }
        }
        while reported.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        #expect(reported.withLock { $0 }?.response?.code == FailureCode.timedOut)
        let handlerReturnedEarly = returned.value.load(ordering: .sequentiallyConsistent)
        #expect(!handlerReturnedEarly, "the outcome came at the deadline, while the handler still ran")
        release.signal()
        await running.value
        let handlerHadReturned = returned.value.load(ordering: .sequentiallyConsistent)
        #expect(handlerHadReturned, "run returned while the handler was still running")
    }

    // MARK: Resolve errors

    @Test func anIntentFailureThrownWhileLookingUpKeepsItsCode() async throws {
        var handler = handler
        handler.catalog.lookup = { _ in throw IntentFailure(code: "catalogDown", message: "catalog offline") }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response == IntentResponse(code: "catalogDown", message: "catalog offline"))
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func anotherErrorThrownByResolveIsAHandlerError() async throws {
        var handler = handler
        handler.onResolve = { _, _ in throw Boom() }

        let outcome = try await run(handler)

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.handlerError)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("the boom error"))
        #expect(journal.recordedSteps == ["resolve"])
    }

    @Test func aMissingDependencyIsAHandlerErrorNamingIt() async throws {
        struct Bare: IntentHandler {
            func handle(_ intent: Errand, context: IntentContext) async throws -> IntentResponse { .success() }
        }
        var registry = IntentRegistry()
        try registry.register(Bare())
        let outcome = await IntentPipeline.run(
            IntentEnvelope(id: "x", type: Errand.typeName, parameters: ["item": "widget"], submittedAt: 1),
            registry: registry, context: IntentContext(intentID: "x", intentType: Errand.typeName))

        #expect(outcome.response?.code == FailureCode.handlerError)
        #expect(outcome.response?.message?.contains("Catalog") == true)
    }

    // MARK: Decoding and routing

    @Test func undecodableParametersFailAsInvalidIntentNamingTheParameter() async throws {
        let outcome = try await run(handler, parameters: ["item": "Widget", "quantity": "lots"])

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.invalidIntent)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("'quantity'"))
        #expect(message.contains(Errand.typeName))
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func aBadListElementIsNamedWithItsIndex() async throws {
        let outcome = try await run(handler, parameters: ["item": "widget", "recipients": ["Ann", ["nested": true]]])

        #expect(outcome.response?.code == FailureCode.invalidIntent)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("recipients[1]"))
        #expect(journal.recordedSteps.isEmpty)
    }

    /// What an `Errand` decodes to, parameter by parameter (name, what was said, the prompt), or the error's words.
    static func decodedErrand(_ parameters: [String: JSONValue], lenient: Bool, direct: Bool) -> String {
        let decoding = ParameterDecoding.Decoding(templates: ParameterReading.templates(of: Errand.self), parameters: direct ? parameters : nil)
        do {
            let errand = try ParameterDecoding.$current.withValue(decoding) {
                try JSONValueDecoder(lenient: lenient).decodeTree(Errand.self, from: .object(parameters))
            }
            let made = decoding.decoded.map(\.parameterName)
            return "\(made) \(errand.$item.spokenValue as Any) \(errand.$quantity.spokenValue as Any) \(errand.$recipients.spokenValue as Any) "
                + "\(errand.$item.prompt as Any) \(errand.$quantity.prompt as Any) \(errand.$recipients.name)"
        } catch {
            return "error: \(error)"
        }
    }

    @Test func aParameterReadStraightFromTheSubmissionIsWhatTheDecoderWouldHaveMadeOfIt() {
        let cases: [[String: JSONValue]] = [
            ["item": "Widget", "quantity": 3, "recipients": ["Ann", "Bo"]],
            ["item": "Widget"],
            ["item": "Widget", "quantity": .null, "recipients": .null],
            ["item": .null],
            [:],
            ["item": "Widget", "quantity": "3", "recipients": "Ann, Bo"],
            ["item": "Widget", "quantity": 2.5],
            ["item": "Widget", "quantity": 1e30],
            ["item": 7, "quantity": true],
            ["item": "Widget", "recipients": ["Ann", ["nested": true]]],
            ["item": ["Widget"], "recipients": []],
            ["item": "Widget", "extra": "ignored"],
        ]
        for parameters in cases {
            for lenient in [false, true] {
                let direct = Self.decodedErrand(parameters, lenient: lenient, direct: true)
                let throughTheDecoder = Self.decodedErrand(parameters, lenient: lenient, direct: false)
                #expect(direct == throughTheDecoder, "\(parameters), lenient \(lenient)")
            }
        }
        let made = Self.decodedErrand(["item": "Widget", "quantity": 3], lenient: false, direct: true)
        #expect(made.hasPrefix("[\"item\", \"quantity\", \"recipients\"]"), "every parameter made, in declaration order")
        #expect(Self.decodedErrand(["item": "Widget", "quantity": "lots"], lenient: true, direct: true).contains("'quantity'"))
    }

    /// An intent whose own `init(from:)` decodes another tree first, of a type with a parameter of the same name.
    struct NestingErrand: Intent {
        static let typeName = "NestingErrand"
        @Parameter("What should I fetch?") var item: Item
        var inner: Inner?

        struct Inner: Decodable {
            @Parameter var item: Item
        }

        enum CodingKeys: String, CodingKey { case item }

        init() {}

        init(from decoder: any Decoder) throws {
            inner = try JSONValueDecoder().decode(Inner.self, from: ["item": "Gadget"])
            let container = try decoder.container(keyedBy: CodingKeys.self)
            _item = try container.decode(Parameter<Item>.self, forKey: .item)
        }
    }

    @Test func aDecodeOfAnotherTreeInsideAnIntentsOwnDecodeReadsThatTree() throws {
        let (intent, parameters) = try ParameterReading.decode(NestingErrand.self, from: ["item": "Widget"], lenient: false)
        #expect(intent.inner?.$item.spokenValue == "Gadget", "its own tree, not the submission's parameters")
        #expect(intent.inner?.$item.prompt == nil, "nor the intent's declarations")
        #expect(intent.$item.spokenValue == "Widget")
        #expect(intent.$item.prompt?.full == "What should I fetch?")
        #expect(parameters.map(\.parameterName) == ["item"])
    }

    @Test func anUnknownTypeFailsWithUnknownIntentType() async throws {
        let outcome = try await run(handler, type: "BookFlight")

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.unknownIntentType)
        let message = try #require(outcome.response?.message)
        #expect(message.contains("BookFlight"))
        #expect(message.contains(Errand.typeName))
        #expect(outcome.resolutions.isEmpty)
        #expect(journal.recordedSteps.isEmpty)
    }

    // MARK: Strict on the wire, lenient from a command line

    @Test func theWireIsStrict() async throws {
        let outcome = try await run(handler, parameters: ["item": "Widget", "quantity": "3"])

        #expect(outcome.response?.code == FailureCode.invalidIntent)
        #expect(journal.recordedSteps.isEmpty)
    }

    @Test func commandLineParametersDecodeLeniently() async throws {
        let outcome = try await run(handler, parameters: ["item": "Widget", "quantity": "3", "recipients": "Alice, Bob"], lenient: true)

        #expect(outcome.state == .success)
        #expect(journal.recordedIntents.first == Seen(item: "Deluxe Widget", quantity: 3, recipients: ["Alice", "Bob"]))
    }
}
