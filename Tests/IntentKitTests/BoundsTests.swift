import Foundation
import Testing

@testable import IntentKit

/// Every input has a size and a shape: ids, types, optional fields, JSON
/// objects, metrics labels and what reaches a terminal.
@Suite struct BoundsTests {
    func decode(_ text: String) throws(EnvelopeError) -> IntentEnvelope {
        try IntentEnvelope.decode(Array(text.utf8))
    }

    @Test func idsAndTypesAreValidatedAtDecode() {
        #expect(IntentEnvelope.problem(withID: String(repeating: "x", count: 255)) == nil)
        #expect(IntentEnvelope.problem(withID: String(repeating: "x", count: 256)) != nil)
        #expect(IntentEnvelope.problem(withID: String(repeating: "é", count: 128)) != nil, "bytes are counted, not characters")
        #expect(IntentEnvelope.problem(withID: "a\nb") != nil && IntentEnvelope.problem(withID: "a\u{1B}[2J") != nil)
        #expect(IntentEnvelope.problem(withID: "order-17 🙂") == nil)
        #expect(IntentEnvelope.problem(withID: "a\u{85}b") != nil, "a C1 control (NEL) is a control character too")
        #expect(IntentEnvelope.problem(withID: "a\u{A0}b") == nil, "a no-break space is not")
        #expect(IntentEnvelope.problem(withID: ".") != nil && IntentEnvelope.problem(withID: "..") != nil, "a URL's own path steps")
        #expect(IntentEnvelope.problem(withID: "...") == nil && IntentEnvelope.problem(withID: ".hidden") == nil)
    }

    @Test func trimmingTakesWhitespaceCharactersFromBothEndsAndNothingElse() {
        // Against the rule itself, character by character, for texts that start or end with every printable
        // ASCII character next to whitespace, prepended and combining marks, joiners and controls.
        func trimmedByCharacters(_ text: String) -> String {
            var slice = Substring(text)
            while slice.first?.isWhitespace == true { slice.removeFirst() }
            while slice.last?.isWhitespace == true { slice.removeLast() }
            return String(slice)
        }
        let neighbours = [
            "", " ", "\t", "\r\n", "\n", "\u{0B}", "\u{0C}", "\u{85}", "\u{A0}", "\u{2003}", "\u{2028}", "\u{3000}", "\u{600}",
            "\u{605}", "\u{110BD}", "\u{301}", "\u{200D}", "\u{1F}", "\u{7F}", "é", "🙂",
        ]
        var differing: [String] = []
        for value in UInt8(0x21)...UInt8(0x7E) {
            let ascii = String(UnicodeScalar(value))
            for other in neighbours {
                for text in [ascii, other + ascii, ascii + other, other + ascii + other, ascii + other + ascii, other + "x" + ascii] {
                    if text.trimmingWhitespace() != trimmedByCharacters(text) { differing.append(text) }
                }
            }
        }
        #expect(differing.isEmpty, "differ for \(differing.prefix(5).map { $0.unicodeScalars.map { String($0.value, radix: 16) } })")
        #expect(" \u{3000}Anna Smith\u{A0}\n".trimmingWhitespace() == "Anna Smith")
        #expect("\u{600}1".trimmingWhitespace() == "\u{600}1")
    }

    @Test func controlCharactersAreToldByTheirBytesAsUnicodeTellsThem() {
        // Every scalar: the test on an id's bytes agrees with Unicode's general category, for the scalar alone and
        // between others (after a lead byte 0xC2 of another character, and before one).
        var differing: [UInt32] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let expected = scalar.properties.generalCategory == .control
            var alone: [UInt8] = []
            UTF8.encode(scalar) { alone.append($0) }
            let between = [UInt8(ascii: "a"), 0xC2, 0xA0] + alone + [0xC2, 0xA0, UInt8(ascii: "b")]
            if IntentEnvelope.containsControl(alone) != expected || IntentEnvelope.containsControl(between) != expected {
                differing.append(value)
            }
        }
        #expect(differing.isEmpty, "differ at \(differing.prefix(10).map { String($0, radix: 16) })")
        // Through a string's own bytes too, and as the reason an id is refused.
        var differingInIDs: [UInt32] = []
        for value in Array(UInt32(0)...0xFFFF) + stride(from: UInt32(0x10000), through: 0x10FFFF, by: 0x101) {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let expected = scalar.properties.generalCategory == .control
            for id in [String(Character(scalar)), "a\u{A0}\(Character(scalar))\u{A0}b"] {
                if IntentEnvelope.containsControl(id.utf8) != expected { differingInIDs.append(value) }
                if expected, IntentEnvelope.problem(withID: id) != "the id contains a control character" { differingInIDs.append(value) }
            }
        }
        #expect(differingInIDs.isEmpty, "differ at \(differingInIDs.prefix(10).map { String($0, radix: 16) })")
        #expect(IntentEnvelope.problem(withType: "SendMessage_2-b") == nil)
        for bad in ["Send.Message", "Send*", "#", "Send\r\nMessage", "Sénd", "", String(repeating: "T", count: 101)] {
            #expect(IntentEnvelope.problem(withType: bad) != nil, "\(bad.escapingControlCharacters)")
        }
        do {
            _ = try decode(#"{"version":1,"id":"\#(String(repeating: "i", count: 300))","type":"SendMessage"}"#)
            Issue.record("a 300-byte id was accepted")
        } catch {
            #expect(error.id == nil, "an unusable id is not reported as the id")
        }
    }

    @Test(arguments: [
        (#"{"version":1,"id":"a","type":"T","submittedAt":"yesterday"}"#, "'submittedAt'"),
        (#"{"version":1,"id":"a","type":"T","turn":"2"}"#, "'turn'"),
        (#"{"version":1,"id":"a","type":"T","answers":[1]}"#, "'answers'"),
        (#"{"version":1,"id":"a","type":"T","confirmed":["x",1]}"#, "'confirmed'"),
        (#"{"version":1,"id":"a","type":"T","group":7}"#, "'group'"),
        (#"{"version":1,"id":"a","type":"T","request":"delete"}"#, "unknown request"),
        (#"{"version":1,"id":"a","type":"T","request":"deny"}"#, "turn after the question"),
    ])
    func mistypedOptionalFieldsAreRefusedNotDropped(body: String, reason: String) {
        do {
            _ = try decode(body)
            Issue.record("accepted: \(body)")
        } catch {
            #expect(error.id == "a" && error.reason.contains(reason), "\(error.reason)")
        }
    }

    @Test func anObjectWithADuplicateKeyIsRefused() {
        #expect(throws: JSONValueError.self) { try JSONValue.parse(Array(#"{"type":"A","type":"B"}"#.utf8)) }
        #expect(throws: JSONValueError.self) { try JSONValue.parse(Array(#"{"a":{"b":1,"b":2}}"#.utf8)) }
        #expect((try? JSONValue.parse(Array(#"[{"a":1},{"a":2}]"#.utf8))) != nil, "the same key in two objects is fine")
    }

    @Test func terminalTextShowsControlCharactersInsteadOfObeyingThem() {
        #expect("plain".escapingControlCharacters == "plain")
        #expect("a\nb\rc\td".escapingControlCharacters == "a\\nb\\rc\\td")
        #expect("\u{1B}[2J\u{7F}\u{9B}".escapingControlCharacters == "\\u{1B}[2J\\u{7F}\\u{9B}")
        #expect("safe\u{202E}txt.exe".escapingControlCharacters == "safe\\u{202E}txt.exe", "no right-to-left override")
        #expect("🙂 é".escapingControlCharacters == "🙂 é")
    }
}
