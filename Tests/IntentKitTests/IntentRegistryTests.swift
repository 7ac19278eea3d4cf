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

    struct Accented: Intent {
        static let typeName = "Envoyé"
        @Parameter var text: String?
    }

    struct Coloned: Intent {
        static let typeName = "Send:Message"
        @Parameter var text: String?
    }

    /// A type whose custom `CodingKeys` read `quantity` under "qty": decoded so, the parameter had none of its
    /// rules (its range was not checked). Refused at registration.
    struct Renamed: Intent {
        static let typeName = "Renamed"
        @Parameter("How many?", in: 1...20) var quantity: Int
        enum CodingKeys: String, CodingKey { case quantity = "qty" }
    }

    /// Names every message of which the workers would refuse (not ASCII, or with a ':') are refused at registration.
    @Test func namesNoEnvelopeMayCarryAndRenamedParametersAreRefused() {
        var registry = IntentRegistry()
        #expect(Self.registrationError(Accented.self, into: &registry) != nil)
        #expect(Self.registrationError(Coloned.self, into: &registry) != nil)
        let renamed = Self.registrationError(Renamed.self, into: &registry)
        #expect(renamed?.description.contains("quantity") == true, "\(String(describing: renamed))")
        #expect(registry.typeNames.isEmpty)
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

    /// One of many types, by number; the odd ones with a name too long to be stored inline in a `String`.
    struct Numbered<let number: Int>: Intent {
        static var typeName: String { number % 2 == 0 ? "Numbered-\(number)" : "A-Much-Longer-Type-Name-Numbered-\(number)" }
    }

    /// A registry looks a type up among a few by comparing names, and among more in its dictionary: each registered type
    /// reaches its own handler and its own settings either way, before and after the registry grows past the few.
    @Test func eachOfManyTypesRunsItsOwnHandler() async throws {
        var registry = IntentRegistry()
        let registrations: [(String, (inout IntentRegistry) throws -> Void)] = [
            (Numbered<0>.typeName, { try $0.register(Handler<Numbered<0>>(name: "handler 0")) }),
            (Numbered<1>.typeName, { try $0.register(Handler<Numbered<1>>(name: "handler 1")) }),
            (Numbered<2>.typeName, { try $0.register(Handler<Numbered<2>>(name: "handler 2")) }),
            (Numbered<3>.typeName, { try $0.register(Handler<Numbered<3>>(name: "handler 3")) }),
            (Numbered<4>.typeName, { try $0.register(Handler<Numbered<4>>(name: "handler 4")) }),
            (Numbered<5>.typeName, { try $0.register(Handler<Numbered<5>>(name: "handler 5")) }),
            (Numbered<6>.typeName, { try $0.register(Handler<Numbered<6>>(name: "handler 6")) }),
            (Numbered<7>.typeName, { try $0.register(Handler<Numbered<7>>(name: "handler 7")) }),
            (Numbered<8>.typeName, { try $0.register(Handler<Numbered<8>>(name: "handler 8")) }),
            (Numbered<9>.typeName, { try $0.register(Handler<Numbered<9>>(name: "handler 9")) }),
            (Numbered<10>.typeName, { try $0.register(Handler<Numbered<10>>(name: "handler 10")) }),
        ]
        for (count, (_, register)) in registrations.enumerated() {
            try register(&registry)
            for (index, (name, _)) in registrations.enumerated() {
                let registered = index <= count
                #expect(registry.serves(name) == registered, "\(name) after \(count + 1) types")
                let outcome = await Self.run(name, in: registry)
                if registered {
                    #expect(outcome.response?.message == "handler \(index)", "\(name) after \(count + 1) types")
                } else {
                    #expect(outcome.response?.code == FailureCode.unknownIntentType, "\(name) after \(count + 1) types")
                }
            }
            #expect(!registry.serves("Numbered-"))
            #expect(!registry.serves(""))
        }
        #expect(registry.typeNames == registrations.map(\.0).sorted())
    }
}
