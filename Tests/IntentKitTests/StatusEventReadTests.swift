import Foundation
import Testing

@testable import IntentKit

/// `StatusEvent.decode` reads an event member by member as the parser meets them, and falls back to the tree (parse,
/// then read, then `Decodable`) for whatever that path does not take. Whatever the bytes, the answer is the tree's:
/// the same event, or the same error.
@Suite struct StatusEventReadTests {
    /// What `decode` answered before it read members: the tree alone.
    static func treeDecode(_ bytes: [UInt8]) throws -> StatusEvent {
        let value = try JSONValue.parse(bytes: bytes)
        if let event = StatusEvent.read(value) { return event }
        return try JSONValueDecoder().decode(StatusEvent.self, from: value)
    }

    /// The two answers for `bytes`, as text: an event's fields or an error's description.
    static func answers(_ bytes: [UInt8]) -> (members: String, tree: String) {
        func answer(_ decode: () throws -> StatusEvent) -> String {
            do { return "event \(try decode())" } catch { return "error \(error)" }
        }
        return (answer { try StatusEvent.decode(bytes) }, answer { try treeDecode(bytes) })
    }

    static let events: [StatusEvent] = {
        var plain = StatusEvent(id: "a-1", type: "SendMessage", state: .queued, at: 1_796_005_520.5, attempt: 1)
        plain.version = 1
        let full = StatusEvent(
            id: "b-2 ü \"quoted\"", type: "OrderSoup", state: .needsInput, at: 1_796_005_521.25, attempt: 3,
            response: IntentResponse(code: "needsValue", message: "which soup?", payload: ["choices": ["tomato", "leek"]]),
            resolutions: [
                ParameterResolution("soup", .needsValue, prompt: "Which soup?"),
                ParameterResolution("recipients", index: 0, .success(.string("Alice Smith"))),
                ParameterResolution("count", .notRequired),
            ],
            progress: .init(fraction: 0.5, message: "half"), worker: "host:42", turn: 2, owner: "alice", refused: true,
            view: "Soup for Alice\nline two", startedAt: 1_796_005_521.0, dueAt: 1_796_009_999.0, kept: true,
            answered: .init(answer: ["soup": "leek"], parameters: ["soup": "leek"], confirmed: ["intent", "soup"]))
        let outcome = StatusEvent(
            id: "c-3", type: "SendMessage", state: .success, at: 1_796_005_522, attempt: 1,
            response: IntentResponse(code: "success", message: "sent", payload: ["messageID": 7]), worker: "w", owner: "bob",
            view: "To Bob", startedAt: 1_796_005_521.9, answered: .init(answer: "denied"))
        // Resolutions of every outcome, with their titles, reasons and values of several kinds.
        let resolved = StatusEvent(
            id: "d-4", type: "OrderSoup", state: .needsInput, at: 1_796_005_523, attempt: 2,
            response: IntentResponse(code: "needsValue"),
            resolutions: [
                ParameterResolution("soup", .disambiguation(["tomato", ["leek", 2]]), optionTitles: ["Tomato", "Leek"]),
                ParameterResolution("when", .confirmationRequired(["hour": 9, "late": true])),
                ParameterResolution("size", .unsupported(reason: "no such size")),
                ParameterResolution("note", .success("see me")),
                ParameterResolution("count", index: 3, .success(2.5), prompt: IntentDialog(full: "How many?", supporting: "Count")),
            ],
            owner: "carol")
        return [plain, full, outcome, resolved]
    }()

    @Test func encodedEventsAreReadByMembersAsTheTreeReadsThem() throws {
        for event in Self.events {
            let bytes = event.encoded()
            // Taken by the members' path itself, not by the tree after it.
            let read = try #require(bytes.withUnsafeBytes { StatusEvent.readMembers($0) })
            #expect(read == event)
            #expect(read == (try Self.treeDecode(bytes)))
        }
    }

    /// Bodies each path reads differently, or not at all: every one gets the tree's answer.
    @Test func bodiesTheMembersDoNotTakeGetTheTreesAnswer() {
        let base = String(decoding: Self.events[2].encoded(), as: UTF8.self)
        let body = base.dropFirst()  // without its "{"
        var cases: [String] = [
            "{\"extra\":{\"nested\":[1,2]}," + body,  // an unknown member: left alone
            "{\"id\":\"other\"," + body,  // a key twice: the tree's error
            "{\"\\u0069d2\":1," + body,  // an escaped key
            base.replacingOccurrences(of: "\"id\":", with: "\"\\u0069d\":"),  // the id under an escaped key
            base.replacingOccurrences(of: "\"worker\":\"w\"", with: "\"worker\":null"),
            base.replacingOccurrences(of: "\"worker\":\"w\"", with: "\"worker\":7"),
            base.replacingOccurrences(of: "\"attempt\":1", with: "\"attempt\":\"1\""),
            base.replacingOccurrences(of: "\"attempt\":1", with: "\"attempt\":1.5"),
            base.replacingOccurrences(of: "\"attempt\":1", with: "\"attempt\":null"),
            base.replacingOccurrences(of: "\"state\":\"success\"", with: "\"state\":\"bogus\""),
            base.replacingOccurrences(of: "\"version\":1", with: "\"version\":2"),
            base.replacingOccurrences(of: ",\"id\":\"c-3\"", with: ""),  // a required member missing
            base.replacingOccurrences(of: ",", with: " ,\n\t").replacingOccurrences(of: ":", with: " : "),  // spaces
            base.replacingOccurrences(of: "\"view\":\"To Bob\"", with: "\"view\":\"To \\\"Bob\\\" \\u00fc\""),
            base.replacingOccurrences(of: "\"response\":{", with: "\"response\":{\"code\":\"x\",\"code2\":{},"),
            base + "x", base + " ", " " + base, base + "}", "[" + base + "]", "{}", "[]", "\"text\"", "", "{", "null",
            "{\"turn\":null,\"progress\":null,\"resolutions\":null," + body,
            "{\"resolutions\":[{\"parameter\":\"x\"}]," + body,
            "{\"progress\":{\"fraction\":\"half\"}," + body,
        ]
        // Inside the response and the resolutions, which the members' path also reads member by member.
        let nested = String(decoding: Self.events[1].encoded(), as: UTF8.self)
        let response = #""response":{"code":"success","message":"sent","payload":{"messageID":7}}"#
        for replacement in [
            #""response":null"#, #""response":"x""#, #""response":{}"#, #""response":{"code":7}"#,
            #""response":{"code":"success","message":5}"#, #""response":{"code":"success","code":"x"}"#,
            #""response":{"code":"success","payload":null}"#, #""response":{"code":"success","code2":1}"#,
            #""response":{"code":"success","payload":"# + BodyEdits.nested(62) + "}",
            #""response":{"code":"success","payload":"# + BodyEdits.nested(63) + "}",
        ] {
            cases.append(BodyEdits.edited(base, response, replacement))
        }
        for (old, new) in [
            (#""parameter":"soup""#, #""parameter":"soup","extra":1"#),  // a member the reading does not know
            (#""parameter":"soup""#, #""parameter":"soup","parameter":"x""#),  // a member twice
            (#""parameter":"soup""#, #""parameter":"soup""#),  // an escaped key
            (#""resolutions":["#, #""resolutions":[1,"#),  // an element that is not an object
            (#""resolutions":["#, #""resolutions":[null,"#),
            (#""resolutions":["#, #""resolutions":{"a":["#),
            (#""value":"Alice Smith""#, #""value":null"#),
            (#""value":"Alice Smith""#, #""value":"# + BodyEdits.nested(61)),
            (#""value":"Alice Smith""#, #""value":"# + BodyEdits.nested(62)),
            (#""index":0"#, #""index":0.5"#),
            (#""prompt":{"full":"Which soup?"}"#, #""prompt":"Which soup?""#),
            (#""prompt":{"full":"Which soup?"}"#, #""prompt":{"supporting":"Soup?"}"#),
            (#""outcome":"needsValue""#, #""outcome":"bogus""#),
            (#""outcome":"needsValue""#, #""outcome":"unsupported""#),  // no reason
            (#""outcome":"needsValue""#, #""outcome":"disambiguation","options":["a",null]"#),
            (#""outcome":"needsValue""#, #""outcome":"disambiguation","options":["a"],"optionTitles":["A",2]"#),
            (#""outcome":"needsValue""#, #""outcome":"success""#),  // no value
        ] {
            cases.append(BodyEdits.edited(nested, old, new))
        }
        cases.append("{\"resolutions\":[]," + body)
        cases.append("{\"resolutions\":[ { } ]," + body)
        // Every prefix of an event: cut anywhere, it is the tree's error.
        cases += BodyEdits.prefixes(of: String(decoding: Self.events[1].encoded(), as: UTF8.self), every: 7)
        for text in cases {
            let (members, tree) = Self.answers(Array(text.utf8))
            #expect(members == tree, "\(text)")
        }
    }

    /// Every body of the fuzzer's corpus gets the tree's answer too.
    @Test(arguments: FuzzCorpusTests.corpus)
    func theFuzzCorpusGetsTheTreesAnswer(_ file: URL) throws {
        let (members, tree) = Self.answers(Array(try Data(contentsOf: file)))
        #expect(members == tree, "\(file.lastPathComponent)")
    }
}
