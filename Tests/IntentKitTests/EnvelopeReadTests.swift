import Foundation
import Testing

@testable import IntentKit

/// `IntentEnvelope.decode` reads an envelope member by member as the parser meets them, and falls back to the tree
/// (`decodeTree`) for whatever that path does not take. Whatever the bytes, the answer is the tree's: the same
/// envelope, or the same error.
@Suite struct EnvelopeReadTests {
    /// An answer: the envelope (compared as a value: a dictionary's description has no fixed order), or the error.
    enum Answer: Equatable {
        case envelope(IntentEnvelope)
        case error(String)
    }

    /// The two answers for `bytes`.
    static func answers(_ bytes: [UInt8]) -> (members: Answer, tree: Answer) {
        func answer(_ decode: () throws -> IntentEnvelope) -> Answer {
            do { return .envelope(try decode()) } catch { return .error("\(error)") }
        }
        return (answer { try IntentEnvelope.decode(bytes) }, answer { try IntentEnvelope.decodeTree(bytes) })
    }

    static let envelopes: [IntentEnvelope] = [
        IntentEnvelope(
            id: "a-1", type: "SendMessage", parameters: ["recipients": ["Alice Smith"], "content": "hello"], submittedAt: 1_796_005_520.5),
        IntentEnvelope(
            id: "b-2 ü \"quoted\"", type: "OrderSoup", parameters: ["soup": "leek", "count": 2, "extras": ["bread": true, "notes": .null]],
            submittedAt: 1_796_005_521.25, turn: 2, answers: ["soup": "tomato"], confirmed: ["soup", "count"], group: "lunch",
            lenientParameters: true, expiresAt: 1_796_009_000, dueAt: 1_796_008_000, priority: .high),
        IntentEnvelope(id: "c-3", type: "BookAppointment", parameters: [:], submittedAt: 0, turn: 1, request: .deny),
        IntentEnvelope(id: "d-4", type: "SendMessage", parameters: ["content": "x"], submittedAt: 1, request: .cancel),
    ]

    @Test func encodedEnvelopesAreReadByMembersAsTheTreeReadsThem() throws {
        for envelope in Self.envelopes {
            let bytes = envelope.encoded()
            // Taken by the members' path itself, not by the tree after it.
            let members = bytes.withUnsafeBytes { IntentEnvelope.members($0) }
            #expect(members != nil, "\(envelope)")
            let read = try IntentEnvelope.decode(bytes)
            #expect(read == envelope)
            #expect(read == (try IntentEnvelope.decodeTree(bytes)))
        }
    }

    /// Bodies each path reads differently, or not at all: every one gets the tree's answer.
    @Test func bodiesTheMembersDoNotTakeGetTheTreesAnswer() {
        let base = String(decoding: Self.envelopes[0].encoded(), as: UTF8.self)
        let body = base.dropFirst()  // without its "{"
        var cases: [String] = [
            "{\"extra\":{\"nested\":[1,2]}," + body,  // a member no envelope has: left alone by the tree
            "{\"id\":\"other\"," + body,  // a key twice: the tree's error
            "{\"type\":\"Other\"," + body,
            "{\"\\u0069d\":\"x\"," + body,  // an escaped key
            "{\"turn\":null,\"answers\":null,\"confirmed\":null,\"group\":null,\"request\":null," + body,
            "{\"turn\":1.5," + body, "{\"turn\":-1," + body, "{\"turn\":\"1\"," + body,
            "{\"answers\":[1]," + body, "{\"confirmed\":[\"a\",1]," + body, "{\"group\":\"\"," + body, "{\"group\":7," + body,
            "{\"request\":\"bogus\"," + body, "{\"request\":\"deny\"," + body, "{\"request\":7," + body,
            "{\"lenientParameters\":\"yes\"," + body, "{\"expiresAt\":\"soon\"," + body, "{\"dueAt\":true," + body,
            "{\"priority\":\"urgent\"," + body, "{\"priority\":1," + body,
            BodyEdits.edited(base, "\"version\":1", "\"version\":2"),
            BodyEdits.edited(base, "\"version\":1", "\"version\":\"1\""),
            BodyEdits.edited(base, "\"id\":\"a-1\"", "\"id\":\"\""),
            BodyEdits.edited(base, "\"id\":\"a-1\"", "\"id\":\"a b\""),
            BodyEdits.edited(base, "\"type\":\"SendMessage\"", "\"type\":\"Send.Message\""),
            BodyEdits.edited(base, "\"parameters\":{", "\"parameters\":[{"),
            BodyEdits.edited(base, "\"submittedAt\":1796005520.5", "\"submittedAt\":null"),
            BodyEdits.edited(base, "\"submittedAt\":1796005520.5", "\"submittedAt\":\"now\""),
            BodyEdits.edited(base, "\"parameters\":{", "\"parameters\":{\"deep\":" + BodyEdits.nested(62) + ","),
            BodyEdits.edited(base, "\"parameters\":{", "\"parameters\":{\"deep\":" + BodyEdits.nested(63) + ","),
            BodyEdits.edited(base, "\"parameters\":{", "\"parameters\":{\"content\":1,"),  // a key twice inside the parameters
            base.replacingOccurrences(of: ",", with: " ,\n\t").replacingOccurrences(of: ":", with: " : "),  // spaces
            base + "x", base + " ", " " + base, base + "}", "[" + base + "]", "{}", "[]", "\"text\"", "", "{", "null",
        ]
        // Every prefix of an envelope: cut anywhere, it is the tree's error.
        cases += BodyEdits.prefixes(of: String(decoding: Self.envelopes[1].encoded(), as: UTF8.self), every: 5)
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
