import Testing

@testable import IntentKit

@Suite struct IntentRegistryTests {
    // MARK: Fixtures

    struct Alpha: Intent { static let typeName = "Alpha" }
    struct Mid: Intent { static let typeName = "Mid-Range_2" }
    struct Zeta: Intent { static let typeName = "Zeta" }
    struct AlphaAgain: Intent { static let typeName = "Alpha" }
    struct Dotted: Intent { static let typeName = "Send.Message" }
    struct Star: Intent { static let typeName = "Send*" }
    struct Hash: Intent { static let typeName = "#Send" }
    struct Spaced: Intent { static let typeName = "Send Message" }
    struct Tabbed: Intent { static let typeName = "Send\tMessage" }
    struct Empty: Intent { static let typeName = "" }

    /// Answers every intent of type `I` with `success`, its message naming the handler.
    struct Handler<I: Intent>: IntentHandler {
        var name = "first"

        func handle(_ intent: I, context: IntentContext) async throws -> IntentResponse {
            .success(name)
        }
    }

    static func registrationError<I: Intent>(_ type: I.Type, into registry: inout IntentRegistry) -> RegistryError? {
        do {
            try registry.register(Handler<I>())
            return nil
        } catch {
            return error
        }
    }

    static func run(_ type: String, in registry: IntentRegistry) async -> PipelineOutcome {
        await IntentPipeline.run(
            IntentEnvelope(id: "r1", type: type, parameters: [:], submittedAt: 0),
            registry: registry, context: IntentContext(intentID: "r1", intentType: type))
    }

    // MARK: Tests

    @Test func anEmptyRegistryServesNothing() {
        let registry = IntentRegistry()
        #expect(registry.typeNames.isEmpty)
        #expect(!registry.serves("Alpha"))
    }

    @Test func registeredTypesAreServed() throws {
        var registry = IntentRegistry()
        try registry.register(Handler<Alpha>())

        #expect(registry.serves("Alpha"))
        #expect(!registry.serves("alpha"))
        #expect(!registry.serves("Zeta"))
        #expect(!registry.serves(""))
    }

    @Test func typeNamesAreSorted() throws {
        var registry = IntentRegistry()
        try registry.register(Handler<Zeta>())
        try registry.register(Handler<Alpha>())
        try registry.register(Handler<Mid>())

        #expect(registry.typeNames == ["Alpha", "Mid-Range_2", "Zeta"])
    }

    @Test func registeringATypeTwiceThrowsAndKeepsTheFirstHandler() async throws {
        var registry = IntentRegistry()
        try registry.register(Handler<Alpha>(name: "first"))

        let error = #expect(throws: RegistryError.self) {
            try registry.register(Handler<AlphaAgain>(name: "second"))
        }
        #expect(error?.description.contains("'Alpha'") == true)
        #expect(error?.description.contains("twice") == true)
        #expect(registry.typeNames == ["Alpha"])

        let outcome = await Self.run("Alpha", in: registry)
        #expect(outcome.state == .success)
        #expect(outcome.response?.message == "first")
    }

    @Test(arguments: ["Send.Message", "Send*", "#Send", "Send Message", "Send\tMessage", ""])
    func namesUnusableAsRoutingKeysAreRefused(_ name: String) throws {
        var registry = IntentRegistry()
        let error: RegistryError? =
            switch name {
            case Dotted.typeName: Self.registrationError(Dotted.self, into: &registry)
            case Star.typeName: Self.registrationError(Star.self, into: &registry)
            case Hash.typeName: Self.registrationError(Hash.self, into: &registry)
            case Spaced.typeName: Self.registrationError(Spaced.self, into: &registry)
            case Tabbed.typeName: Self.registrationError(Tabbed.self, into: &registry)
            case Empty.typeName: Self.registrationError(Empty.self, into: &registry)
            default: nil
            }

        let refusal = try #require(error)
        #expect(refusal.description.contains("'\(name)'"))
        #expect(refusal.description.contains("routing key"))
        #expect(registry.typeNames.isEmpty)
        #expect(!registry.serves(name))
    }

    @Test func lettersDigitsDashesAndUnderscoresAreAccepted() {
        var registry = IntentRegistry()
        #expect(Self.registrationError(Mid.self, into: &registry) == nil)
        #expect(registry.serves("Mid-Range_2"))
    }

    @Test func eachTypeRunsItsOwnHandler() async throws {
        var registry = IntentRegistry()
        try registry.register(Handler<Alpha>(name: "alpha handler"))
        try registry.register(Handler<Zeta>(name: "zeta handler"))

        #expect(await Self.run("Alpha", in: registry).response?.message == "alpha handler")
        #expect(await Self.run("Zeta", in: registry).response?.message == "zeta handler")
        #expect(await Self.run("Mid-Range_2", in: registry).response?.code == FailureCode.unknownIntentType)
    }
}
