import Foundation
import Testing

@testable import IntentKit

/// The JSON that travels on the broker: envelopes, status events, resolutions, states.
@Suite struct WireFormatTests {
    struct Greeting: Intent, Hashable {
        static let typeName = "Greeting"
        var recipients: [String]?
        var content: String?
        var times: Int?
    }

    static func envelopeError(_ text: String) -> EnvelopeError? {
        envelopeError(Array(text.utf8))
    }

    static func envelopeError(_ bytes: [UInt8]) -> EnvelopeError? {
        do {
            _ = try IntentEnvelope.decode(bytes)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Envelope round trips

    @Test func anEnvelopeRoundTripsThroughItsEncoding() throws {
        let envelope = IntentEnvelope(
            id: "6f1c2a5e-0d1b-4c55-9d6b-3f1f7f1a2b3c", type: "SendMessage",
            parameters: [
                "recipients": ["Alice Smith", "Bob Jones"],
                "content": "Running late \"again\" — 10' 🏃🏽\n",
                "count": 3,
                "ratio": 0.125,
                "urgent": true,
                "note": nil,
                "nested": ["a": [1, 2, ["b": "c"]], "empty": [:]],
            ],
            submittedAt: 1_700_000_123.456)

        let bytes = envelope.encoded()
        let decoded = try IntentEnvelope.decode(bytes)

        #expect(decoded == envelope)
        let object = try JSONValue.parse(bytes)
        #expect(object["version"] == .number(Double(IntentEnvelope.currentVersion)))
        #expect(object["id"] == "6f1c2a5e-0d1b-4c55-9d6b-3f1f7f1a2b3c")
        #expect(object["type"] == "SendMessage")
        #expect(object["submittedAt"] == 1_700_000_123.456)
        #expect(object["parameters"]?["recipients"] == ["Alice Smith", "Bob Jones"])
    }

    @Test func everyMemberIsCheckedWhateverElseTheEnvelopeCarriesAndHowItsBytesAreHeld() throws {
        // Unknown members count among the members: a wrong optional one after them is still refused.
        let base = #""id":"a","version":1,"type":"T""#
        #expect(Self.envelopeError(#"{\#(base),"extra":1,"priority":"urgent"}"#)?.reason == "'priority' must be normal or high")
        #expect(Self.envelopeError(#"{"extra":[],\#(base),"dueAt":"soon","more":{}}"#)?.reason.contains("'dueAt'") == true)
        #expect(Self.envelopeError(#"{\#(base),"priority":"high"}"#) == nil)
        let full = IntentEnvelope(
            id: "f", type: "T", parameters: ["n": 1], submittedAt: 5, turn: 2, answers: ["n": 2], confirmed: ["n"], group: "g",
            request: .deny, lenientParameters: true, expiresAt: 9, dueAt: 8, priority: .high)
        #expect(try IntentEnvelope.decode(full.encoded()) == full)
        // Bytes that are not one contiguous buffer are read too.
        #expect(try IntentEnvelope.decode(full.encoded().lazy.map { $0 }) == full)
    }

    @Test func anExpiryTravelsAsSecondsSince1970AndIsLeftOutWhenAbsent() throws {
        let expiring = IntentEnvelope(id: "x", type: "Ping", parameters: [:], submittedAt: 10, expiresAt: 1_800_000_000.5)
        #expect(try JSONValue.parse(expiring.encoded())["expiresAt"] == 1_800_000_000.5)
        #expect(try IntentEnvelope.decode(expiring.encoded()) == expiring)
        let lasting = IntentEnvelope(id: "x", type: "Ping", parameters: [:], submittedAt: 10)
        #expect(try JSONValue.parse(lasting.encoded())["expiresAt"] == nil)
        let null = #"{"version":1,"id":"x","type":"Ping","parameters":{},"submittedAt":1,"expiresAt":null}"#
        #expect(try IntentEnvelope.decode(Array(null.utf8)).expiresAt == nil)
        let refused = Self.envelopeError(#"{"version":1,"id":"x","type":"Ping","parameters":{},"submittedAt":1,"expiresAt":"soon"}"#)
        #expect(refused?.reason == "'expiresAt' must be a number of seconds since 1970")
        #expect(refused?.id == "x")
    }

    @Test func anEnvelopeWithNoParametersRoundTrips() throws {
        let envelope = IntentEnvelope(id: "x", type: "Ping", parameters: [:], submittedAt: 0)
        #expect(try IntentEnvelope.decode(envelope.encoded()) == envelope)
    }

    @Test func anEnvelopeFromATypedIntentCarriesItsTypeAndParameters() throws {
        let intent = Greeting(recipients: ["Alice", "Bob"], content: "Hi", times: 2)
        let date = Date(timeIntervalSince1970: 1_650_000_000.5)

        let envelope = try IntentEnvelope(intent, id: "greeting-1", submittedAt: date)

        #expect(envelope.id == "greeting-1")
        #expect(envelope.type == "Greeting")
        #expect(envelope.version == IntentEnvelope.currentVersion)
        #expect(envelope.submittedAt == 1_650_000_000.5)
        #expect(envelope.parameters == ["recipients": ["Alice", "Bob"], "content": "Hi", "times": 2])
        let decoded = try IntentEnvelope.decode(envelope.encoded())
        #expect(try JSONValueDecoder().decode(Greeting.self, from: .object(decoded.parameters)) == intent)
    }

    @Test func aTypedIntentLeavesOutAbsentParameters() throws {
        let envelope = try IntentEnvelope(Greeting(content: "Hi"), id: "g")
        #expect(envelope.parameters == ["content": "Hi"])
    }

    @Test func aTypedIntentGetsAFreshLowercaseIDByDefault() throws {
        let first = try IntentEnvelope(Greeting())
        let second = try IntentEnvelope(Greeting())

        #expect(first.id != second.id)
        #expect(UUID(uuidString: first.id) != nil)
        #expect(first.id == first.id.lowercased())
    }

    @Test func nullOrMissingParametersDecodeAsEmptyAndMissingSubmittedAtAsZero() throws {
        let withNull = try IntentEnvelope.decode(Array(#"{"version":1,"id":"a","type":"T","parameters":null}"#.utf8))
        #expect(withNull.parameters.isEmpty)
        #expect(withNull.submittedAt == 0)

        let without = try IntentEnvelope.decode(Array(#"{"version":1,"id":"b","type":"T","submittedAt":12.5}"#.utf8))
        #expect(without.parameters.isEmpty)
        #expect(without.submittedAt == 12.5)
        #expect(without.id == "b")
        #expect(without.type == "T")
    }

    // MARK: Envelope errors

    @Test func anEmptyBodyIsNotJSON() throws {
        let error = try #require(Self.envelopeError([]))
        #expect(error.id == nil)
        #expect(error.reason.contains("not valid JSON"))
        #expect(error.description == error.reason)
    }

    @Test func textThatIsNotJSONIsRefused() throws {
        let error = try #require(Self.envelopeError("send a message to Bob"))
        #expect(error.id == nil)
        #expect(error.reason.contains("not valid JSON"))
    }

    @Test func invalidUTF8IsRefusedWithTheReason() throws {
        var bytes = Array(#"{"version":1,"id":"a"#.utf8)
        bytes.append(0xFF)
        bytes += Array(#"","type":"T"}"#.utf8)

        let error = try #require(Self.envelopeError(bytes))
        #expect(error.id == nil)
        #expect(error.reason.contains("not valid JSON"))
        #expect(error.reason.contains("UTF-8"))
    }

    @Test(arguments: ["[1,2]", "\"just a string\"", "42", "null"])
    func aBodyThatIsNotAnObjectIsRefused(_ body: String) throws {
        let error = try #require(Self.envelopeError(body))
        #expect(error.id == nil)
        #expect(error.reason.contains("not a JSON object"))
    }

    @Test(arguments: [
        #"{"version":1,"type":"T","parameters":{}}"#,
        #"{"version":1,"id":"","type":"T"}"#,
        #"{"version":1,"id":42,"type":"T"}"#,
    ])
    func anEnvelopeWithoutAStringIDIsRefused(_ body: String) throws {
        let error = try #require(Self.envelopeError(body))
        #expect(error.id == nil)
        #expect(error.reason.contains("'id'"))
    }

    @Test func anotherVersionIsRefusedNamingTheID() throws {
        let error = try #require(Self.envelopeError(#"{"version":2,"id":"abc","type":"T","parameters":{}}"#))
        #expect(error.id == "abc")
        #expect(error.reason.contains("version 2"))
        #expect(error.reason.contains("not supported"))
    }

    @Test func aMissingVersionIsRefusedNamingTheID() throws {
        let error = try #require(Self.envelopeError(#"{"id":"abc","type":"T"}"#))
        #expect(error.id == "abc")
        #expect(error.reason.contains("'version'"))
    }

    @Test(arguments: [#"{"version":1,"id":"abc"}"#, #"{"version":1,"id":"abc","type":""}"#, #"{"version":1,"id":"abc","type":7}"#])
    func aMissingTypeIsRefusedNamingTheID(_ body: String) throws {
        let error = try #require(Self.envelopeError(body))
        #expect(error.id == "abc")
        #expect(error.reason.contains("'type'"))
    }

    @Test(arguments: [#"[1]"#, #""Alice""#, #"3"#])
    func parametersThatAreNotAnObjectAreRefusedNamingTheID(_ parameters: String) throws {
        let error = try #require(Self.envelopeError(#"{"version":1,"id":"abc","type":"T","parameters":\#(parameters)}"#))
        #expect(error.id == "abc")
        #expect(error.reason.contains("'parameters' is not a JSON object"))
    }

    // MARK: Status events

    static let everyOutcome: [ParameterResolution] = [
        ParameterResolution("recipients", index: 0, .success("Alice Smith")),
        ParameterResolution("recipients", index: 1, .disambiguation(["Jeff Baker", "Jeff Chen"])),
        ParameterResolution("recipients", index: 2, .unsupported(reason: "no hairdresser is called 'Zed'")),
        ParameterResolution("content", .needsValue),
        ParameterResolution("when", .confirmationRequired(["hour": 9, "minute": 30])),
        ParameterResolution("groupName", .notRequired),
        ParameterResolution("urgent", .success(true)),
        ParameterResolution("count", .success(2.5)),
        ParameterResolution("note", .success(nil)),
        ParameterResolution("tags", .confirmationRequired([])),
    ]

    @Test func aStatusEventWithEverythingRoundTrips() throws {
        let event = StatusEvent(
            id: "e1", type: "SendMessage", state: .needsInput, at: 1_700_000_001.25, attempt: 3,
            response: IntentResponse(code: "success", message: "Sent ✓", payload: ["recipients": ["Alice"], "count": 1, "ok": true, "none": nil]),
            resolutions: Self.everyOutcome,
            progress: StatusEvent.Progress(fraction: 0.5, message: "halfway"),
            worker: "host-1:4242")

        let decoded = try StatusEvent.decode(event.encoded())

        #expect(decoded == event)
        #expect(decoded.resolutions == Self.everyOutcome)
        #expect(decoded.response?.payload?["count"] == 1)
        #expect(decoded.progress == StatusEvent.Progress(fraction: 0.5, message: "halfway"))
    }

    @Test func aStatusEventIsWrittenAsItsJSONTreeSerializes() {
        var events = [
            StatusEvent(id: "m", type: "T", state: .success, at: 1, attempt: 1),
            StatusEvent(
                id: "e\"1\n", type: "SendMessage", state: .needsInput, at: 1_700_000_001.25, attempt: 3,
                response: IntentResponse(code: "success", message: "Sent ✓", payload: ["recipients": ["Alice"], "count": 1]),
                resolutions: Self.everyOutcome, progress: StatusEvent.Progress(fraction: 0.5, message: "halfway"),
                worker: "host-1:4242", turn: 2, owner: "alice.smith", view: "To: Alice", startedAt: 1_700_000_000.5,
                answered: .init(answer: ["recipients": ["Alice"]], parameters: ["recipients": ["Alice"], "content": "hi \"x\""], confirmed: [])),
            StatusEvent(id: "s", type: "T", state: .scheduled, at: 2, attempt: 1, dueAt: 99.5, kept: true),
            StatusEvent(id: "r", type: "T", state: .failure, at: 3, attempt: 2, owner: "mallory", refused: true),
        ]
        var odd = StatusEvent(id: "v", type: "T", state: .inProgress, at: -0.5, attempt: 1)
        odd.version = 7
        odd.turn = 0
        odd.kept = false
        odd.refused = false
        events.append(odd)
        for event in events {
            #expect(event.encoded() == event.jsonValue.serialized(), "\(event.id)")
        }
    }

    @Test func resolutionsAreWrittenAsTheirJSONTreesSerialize() {
        var asked = ParameterResolution("recipients", index: 3, .disambiguation(["Jeff \"B\"", "Jeff\tChen", "Zoë"]))
        asked.prompt = IntentDialog(full: "Which Jeff?\n", supporting: "two work here")
        asked.optionTitles = ["Jeff Baker", "Jeff Chen", "Zoë \\ Z"]
        var bare = ParameterResolution("when", .confirmationRequired(["hour": 9]))
        bare.prompt = IntentDialog(full: "At nine?")
        for resolutions in [Self.everyOutcome, [asked, bare], [], [ParameterResolution("x\u{1}", .unsupported(reason: "\u{7f}\\"))]] {
            #expect(ParameterResolution.serialized(resolutions) == JSONValue.array(resolutions.map(\.jsonValue)).serialized())
        }
    }

    @Test(arguments: IntentState.allCases)
    func aMinimalStatusEventRoundTripsInEveryState(_ state: IntentState) throws {
        let event = StatusEvent(id: "e-\(state.rawValue)", type: "OrderSoup", state: state, at: 10, attempt: 1)

        let decoded = try StatusEvent.decode(event.encoded())

        #expect(decoded == event)
        #expect(decoded.state == state)
        #expect(decoded.response == nil)
        #expect(decoded.resolutions == nil)
        #expect(decoded.progress == nil)
        #expect(decoded.worker == nil)
    }

    @Test func progressWithOnlyAMessageRoundTrips() throws {
        let event = StatusEvent(
            id: "p", type: "T", state: .inProgress, at: 5, attempt: 1,
            progress: StatusEvent.Progress(fraction: nil, message: "warming up"))
        #expect(try StatusEvent.decode(event.encoded()).progress == StatusEvent.Progress(fraction: nil, message: "warming up"))
    }

    @Test func aStatusEventUsesTheWireNames() throws {
        let event = StatusEvent(
            id: "w", type: "OrderSoup", state: .inProgress, at: 2, attempt: 2,
            progress: StatusEvent.Progress(fraction: 0.25, message: nil))

        let object = try JSONValue.parse(event.encoded())

        #expect(object["version"] == 1)
        #expect(object["id"] == "w")
        #expect(object["type"] == "OrderSoup")
        #expect(object["state"] == "inProgress")
        #expect(object["at"] == 2)
        #expect(object["attempt"] == 2)
        #expect(object["progress"]?["fraction"] == 0.25)
        #expect(event.routingKey == "-.OrderSoup.inProgress", "no owner: '-' leads the key")
        var owned = event
        owned.owner = "alice.smith"
        #expect(owned.routingKey == "alice_smith.OrderSoup.inProgress", "an owner is one word of the key")
        #expect(try JSONValue.parse(owned.encoded())["owner"] == "alice.smith")
    }

    @Test func anOwnersRoutingWordIsTheOwnerWithKeyCharactersReplacedAndCutTo100Bytes() {
        // The word as defined character by character; the quick path for a name needing no change must agree.
        func defined(_ owner: String) -> String {
            var word = String(owner.map { $0 == "." || $0 == "*" || $0 == "#" ? "_" : $0 })
            while word.utf8.count > 100 { word.removeLast() }
            return word
        }
        let owners = [
            "alice", "alice.smith", "*", "#x", "a#b*c.d", String(repeating: "x", count: 100), String(repeating: "x", count: 101),
            String(repeating: "é", count: 50), String(repeating: "é", count: 51), "e\u{301}.", ".\u{301}", String(repeating: "🙂", count: 26),
            String(repeating: "a.", count: 60),
        ]
        for owner in owners {
            #expect(StatusEvent.routingWord(for: owner) == defined(owner), "\(owner)")
            #expect(StatusEvent.routingWord(for: owner).utf8.count <= 100)
            // The key is the word, the type and the state, a dot between each, whatever their lengths and bytes.
            for type in ["T", "SendMessage", String(repeating: "LongType", count: 12)] {
                for state in [IntentState.success, .needsInput] {
                    let event = StatusEvent(id: "k", type: type, state: state, attempt: 1, owner: owner)
                    #expect(event.routingKey == "\(defined(owner)).\(type).\(state.rawValue)", "\(owner) \(type)")
                }
            }
        }
        #expect(StatusEvent.routingWord(for: nil) == "-")
        #expect(StatusEvent.routingWord(for: "") == "-")
    }

    @Test func aStatusEventWrittenByHandDecodes() throws {
        let body = #"""
            {"version":1,"id":"h","type":"SendMessage","state":"failure","at":99.5,"attempt":2,
             "response":{"code":"unsupportedParameter","message":"recipients[0]: nobody"},
             "resolutions":[{"parameter":"recipients","index":0,"outcome":"unsupported","reason":"nobody"}]}
            """#

        let event = try StatusEvent.decode(Array(body.utf8))

        #expect(event.state == .failure)
        #expect(event.at == 99.5)
        #expect(event.attempt == 2)
        #expect(event.response == IntentResponse(code: "unsupportedParameter", message: "recipients[0]: nobody"))
        #expect(event.resolutions == [ParameterResolution("recipients", index: 0, .unsupported(reason: "nobody"))])
    }

    @Test(arguments: [
        #"{"version":1,"id":"a","type":"T","state":"success","at":1.5,"attempt":1}"#,
        #"{"version":1,"id":"a","type":"T","state":"scheduled","at":1,"attempt":2,"turn":0,"kept":false,"refused":false,"dueAt":9.25}"#,
        #"{"version":1,"id":"a","type":"T","state":"failure","at":1,"attempt":1,"turn":null,"worker":null,"owner":"o","extra":[1,2]}"#,
        #"{"version":2,"id":"a","type":"T","state":"inProgress","at":1,"attempt":1,"progress":{"fraction":0.5},"view":"v","startedAt":0.5}"#,
        #"{"version":1,"id":"a","type":"T","state":"needsInput","at":1,"attempt":1,"turn":3,"resolutions":[{"parameter":"p","outcome":"needsValue"}]}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1,"response":{"code":"success","payload":{"n":1}}}"#,
        #"{"version":1,"id":"a","type":"T","state":"failure","at":1,"attempt":1,"response":{"code":"x","message":null,"payload":null,"more":1}}"#,
        #"{"version":1,"id":"a","type":"T","state":"failure","at":1,"attempt":1,"response":{"code":"x","message":"m","payload":[1,"two"]}}"#,
        #"""
        {"version":1,"id":"a","type":"T","state":"needsInput","at":1,"attempt":1,"resolutions":[
         {"parameter":"p","index":2,"outcome":"disambiguation","options":["x",{"k":1}],"optionTitles":["X","K"],"prompt":{"full":"Which?","supporting":"W?"}},
         {"parameter":"q","outcome":"success","value":{"name":"Alice"},"prompt":{"full":"Who?"}},
         {"parameter":"r","outcome":"confirmationRequired","value":3,"index":null,"prompt":null},
         {"parameter":"s","outcome":"unsupported","reason":"no"},{"parameter":"t","outcome":"notRequired"},
         {"parameter":"u","outcome":"success","value":null}]}
        """#,
    ])
    func aStatusEventReadsTheSameStraightFromTheTreeAsThroughDecodable(_ body: String) throws {
        let value = try JSONValue.parse(Array(body.utf8))
        #expect(try StatusEvent.decode(Array(body.utf8)) == (try JSONValueDecoder().decode(StatusEvent.self, from: value)))
    }

    @Test(arguments: [
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1.5}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":"1","attempt":1}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1,"turn":"2"}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1,"worker":7}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1,"kept":"yes"}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1,"response":{"message":"no code"}}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1,"response":{"code":"x","message":7}}"#,
        #"{"version":1,"id":"a","type":"T","state":"success","at":1,"attempt":1,"response":["x"]}"#,
        #"{"id":"a","type":"T","state":"success","at":1,"attempt":1}"#,
        #"{"version":1,"id":"a","type":"T","state":"needsInput","at":1,"attempt":1,"resolutions":[{"parameter":"p","outcome":"maybe"}]}"#,
        #"{"version":1,"id":"a","type":"T","state":"needsInput","at":1,"attempt":1,"resolutions":[{"parameter":"p","outcome":"unsupported"}]}"#,
        #"{"version":1,"id":"a","type":"T","state":"needsInput","at":1,"attempt":1,"resolutions":[{"outcome":"needsValue"}]}"#,
        #"{"version":1,"id":"a","type":"T","state":"needsInput","at":1,"attempt":1,"resolutions":[{"parameter":"p","outcome":"success"}]}"#,
    ])
    func aStatusEventWithAFieldOfTheWrongTypeIsRefusedAsDecodableRefusesIt(_ body: String) {
        #expect(throws: DecodingError.self) { try StatusEvent.decode(Array(body.utf8)) }
    }

    @Test(arguments: [
        #"{"code":"success"}"#, #"{"code":"x","message":"m"}"#, #"{"code":"x","message":null,"payload":null}"#,
        #"{"code":"x","payload":{"a":[1,null]},"other":true}"#, #"{"code":"x","payload":0}"#,
    ])
    func aResponseReadsStraightFromTheTreeAsDecodableReadsIt(_ body: String) throws {
        let value = try JSONValue.parse(Array(body.utf8))
        let read = try #require(IntentResponse.read(value), "read without Decodable")
        #expect(read == (try JSONValueDecoder().decode(IntentResponse.self, from: value)))
    }

    @Test(arguments: [#"{"message":"m"}"#, #"{"code":1}"#, #"{"code":"x","message":2}"#, #"["code"]"#, #""x""#])
    func aResponseWithAMemberOfTheWrongTypeIsLeftToDecodable(_ body: String) throws {
        let value = try JSONValue.parse(Array(body.utf8))
        #expect(IntentResponse.read(value) == nil)
        #expect(throws: DecodingError.self) { try JSONValueDecoder().decode(IntentResponse.self, from: value) }
    }

    @Test func aStatusEventWithAnUnknownStateIsRefused() {
        let body = #"{"version":1,"id":"h","type":"T","state":"exploded","at":1,"attempt":1}"#
        #expect(throws: (any Error).self) { try StatusEvent.decode(Array(body.utf8)) }
    }

    // MARK: ParameterResolution JSON

    static func json(_ resolution: ParameterResolution) throws -> JSONValue {
        try JSONValue.parse(resolution.jsonValue.serialized())
    }

    @Test func aDisambiguationHasItsOptions() throws {
        let resolution = ParameterResolution("recipients", index: 0, .disambiguation(["Jeff Baker", "Jeff Chen"]))
        #expect(
            try Self.json(resolution) == [
                "parameter": "recipients", "index": 0, "outcome": "disambiguation", "options": ["Jeff Baker", "Jeff Chen"],
            ])
    }

    @Test func eachOutcomeHasItsShape() throws {
        #expect(
            try Self.json(ParameterResolution("soup", .success("Tomato Soup"))) == [
                "parameter": "soup", "outcome": "success", "value": "Tomato Soup",
            ])
        #expect(try Self.json(ParameterResolution("content", .needsValue)) == ["parameter": "content", "outcome": "needsValue"])
        #expect(
            try Self.json(ParameterResolution("when", .confirmationRequired(9))) == [
                "parameter": "when", "outcome": "confirmationRequired", "value": 9,
            ])
        #expect(try Self.json(ParameterResolution("groupName", .notRequired)) == ["parameter": "groupName", "outcome": "notRequired"])
        #expect(
            try Self.json(ParameterResolution("quantity", .unsupported(reason: "too many"))) == [
                "parameter": "quantity", "outcome": "unsupported", "reason": "too many",
            ])
    }

    @Test func everyOutcomeRoundTripsThroughItsJSON() throws {
        let data = JSONValue.array(Self.everyOutcome.map(\.jsonValue)).serialized()
        #expect(try JSONDecoder().decode([ParameterResolution].self, from: Data(data)) == Self.everyOutcome, "Foundation reads it too")
        #expect(try JSONValueDecoder().decode([ParameterResolution].self, from: JSONValue.parse(data)) == Self.everyOutcome)
    }

    @Test func aQuestionCarriesItsPromptAndOptionTitles() throws {
        let question = ParameterResolution(
            "recipients", index: 0, .disambiguation(["jeff-b", "jeff-c"]),
            prompt: IntentDialog(full: "Which Jeff do you mean: Jeff Baker or Jeff Chen?", supporting: "Which Jeff?"),
            optionTitles: ["Jeff Baker", "Jeff Chen"])
        #expect(
            try Self.json(question) == [
                "parameter": "recipients", "index": 0, "outcome": "disambiguation", "options": ["jeff-b", "jeff-c"],
                "prompt": ["full": "Which Jeff do you mean: Jeff Baker or Jeff Chen?", "supporting": "Which Jeff?"],
                "optionTitles": ["Jeff Baker", "Jeff Chen"],
            ])
        #expect(try JSONValueDecoder().decode(ParameterResolution.self, from: Self.json(question)) == question)
    }

    @Test func anUnknownOutcomeIsRefused() {
        let data = Data(#"{"parameter":"x","outcome":"maybe"}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ParameterResolution.self, from: data) }
    }

    @Test func labelsNameTheElement() {
        #expect(ParameterResolution("recipients", index: 2, .needsValue).label == "recipients[2]")
        #expect(ParameterResolution("content", .needsValue).label == "content")
    }

    // MARK: States

    @Test func terminalStatesAreSuccessFailureAndCanceled() {
        let terminal = Set(IntentState.allCases.filter(\.isTerminal))
        #expect(terminal == [.success, .failure, .canceled])
    }

    @Test func ranksFollowTheConversation() {
        #expect(IntentState.queued.rank == 0)
        #expect(IntentState.scheduled.rank == 0)
        #expect(IntentState.inProgress.rank == 1)
        #expect(IntentState.needsInput.rank == 2)
        #expect(IntentState.cancelRequested.rank == 2)
        #expect(!IntentState.cancelRequested.isTerminal, "a worker has not decided yet")
        #expect(IntentState.success.rank == 3)
        #expect(IntentState.failure.rank == 3)
        #expect(IntentState.canceled.rank == 3)
        for state in IntentState.allCases {
            #expect(state.isTerminal == (state.rank == 3), "\(state)")
        }
    }

    @Test func statesUseTheirWireNames() {
        #expect(
            IntentState.allCases.map(\.rawValue) == [
                "queued", "scheduled", "inProgress", "needsInput", "cancelRequested", "success", "failure", "canceled",
            ])
    }
}
