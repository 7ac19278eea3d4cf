import Foundation
import Testing

@testable import IntentKit

// MARK: - JSONValue round trips

@Suite struct JSONValueSerializationTests {
    private typealias Fixtures = JSONValueDecoderTests

    private static let sample: JSONValue = [
        "null": nil,
        "yes": true,
        "no": false,
        "int": 42,
        "negative": -7,
        "fraction": 0.25,
        "big": 1e300,
        "string": "héllo \"world\"\n",
        "emoji": "👋🏽",
        "array": [1, "two", [3], ["four": 4], nil, true],
        "empty": [:],
        "emptyArray": [],
    ]

    private static func parseError(_ text: String) -> JSONValueError? {
        Self.parseError(Array(text.utf8))
    }

    private static func parseError(_ bytes: [UInt8]) -> JSONValueError? {
        do {
            _ = try JSONValue.parse(Data(bytes))
            return nil
        } catch let error as JSONValueError {
            return error
        } catch {
            return nil
        }
    }

    @Test func roundTripsThroughJSONEncoderAndDecoder() throws {
        let data = try JSONEncoder().encode(Self.sample)
        let decoded = try JSONDecoder().decode(JSONValue.self, from: data)
        #expect(decoded == Self.sample)
    }

    @Test func booleansAndNumbersStayApartThroughJSONDecoder() throws {
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data("[true, false, 1, 0, 1.5, null]".utf8))
        #expect(decoded == [true, false, 1, 0, 1.5, nil])
    }

    @Test func roundTripsThroughParseAndSerialized() throws {
        let bytes = Self.sample.serialized()
        #expect(try JSONValue.parse(Data(bytes)) == Self.sample)
        #expect(try JSONValue.parse(bytes) == Self.sample)
        // And what JSONSerialization makes of our output agrees.
        let foundation = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        #expect(foundation?["string"] as? String == "héllo \"world\"\n")
        #expect(foundation?["emoji"] as? String == "👋🏽")
    }

    @Test func parsesWhatJSONEncoderWrites() throws {
        let order = Fixtures.Order(
            id: "o-1", address: Fixtures.Address(street: "1 Main St", city: "Springfield"),
            items: [Fixtures.Item(name: "tomato", quantity: 2, size: .large)], express: true, tip: 1.5,
            tags: nil, extra: ["note": "ring twice"])
        let value = try JSONValue.parse(try JSONEncoder().encode(order))
        #expect(value["id"] == "o-1")
        #expect(value["items"]?[0]?["quantity"] == 2)
        #expect(try JSONValueDecoder().decode(Fixtures.Order.self, from: value) == order)
    }

    @Test func serializesCompactlyWithSortedKeys() {
        let value: JSONValue = ["b": [1, 2.5, nil], "a": true, "c": ["z": "y", "x": -0.5]]
        #expect(value.jsonString == #"{"a":true,"b":[1,2.5,null],"c":{"x":-0.5,"z":"y"}}"#)
        #expect(JSONValue.array([]).jsonString == "[]")
        #expect(JSONValue.object([:]).jsonString == "{}")
        #expect(JSONValue.object(["id": 7]).jsonString == #"{"id":7}"#)
        #expect(JSONValue.object(["k\"ey": ["in": ["deep": -3]]]).jsonString == #"{"k\"ey":{"in":{"deep":-3}}}"#)
    }

    @Test func anObjectsMembersAreWrittenInSortedKeyOrderWhateverItsSize() throws {
        // Objects up to `smallObject` members are ordered on the stack, larger ones by a sorted copy: both must write
        // the members in the order a plain sort of the keys gives, for keys that share prefixes, differ in case, are
        // not ASCII or are empty.
        let pool = ["", "a", "ab", "abc", "B", "b", "Z", "_", "é", "e", "日本", "👋", "a b", "0", "10", "9", "recipients", "content", "groupName"]
        var generator = SystemRandomNumberGenerator()
        for size in 0...(JSONValue.smallObject + 3) {
            for _ in 0..<20 {
                var object: [String: JSONValue] = [:]
                var extra = 0
                while object.count < size {
                    let key = pool.count > object.count ? pool.randomElement(using: &generator)! : "k\(extra)"
                    extra += 1
                    object[key] = .number(Double(object.count))
                }
                let expected =
                    "{" + object.keys.sorted().map { "\(JSONValue.string($0).jsonString):\(object[$0]!.jsonString)" }.joined(separator: ",") + "}"
                #expect(JSONValue.object(object).jsonString == expected, "\(object)")
                #expect(try JSONValue.parse(JSONValue.object(object).jsonString) == .object(object))
            }
        }
    }

    @Test func serializesNumbers() throws {
        #expect(JSONValue.number(3).jsonString == "3")
        #expect(JSONValue.number(-3).jsonString == "-3")
        #expect(JSONValue.number(0.1).jsonString == "0.1")
        #expect(JSONValue.number(9_007_199_254_740_992).jsonString == "9007199254740992")
        #expect(JSONValue.number(-9_007_199_254_740_992).jsonString == "-9007199254740992")
        #expect(JSONValue.number(1e300).jsonString == "1e+300")
        #expect(JSONValue.number(.nan).jsonString == "null")
        #expect(JSONValue.number(.infinity).jsonString == "null")
        #expect(JSONValue.number(-.infinity).jsonString == "null")
        // Whatever is written parses back to the same number.
        for number in [1e300, Double.leastNonzeroMagnitude, 0.1, 123.456, 1e21, 12345678901234567890.0, -2.5e-7] {
            #expect(try JSONValue.parse(JSONValue.number(number).serialized()) == .number(number))
        }
    }

    @Test func aStringNeedsEscapingExactlyWhenItHoldsAControlCharacterAQuoteOrABackslash() {
        // Eight bytes at a time must find what one at a time finds, wherever in the string it is.
        func plain(_ bytes: [UInt8]) -> Bool { bytes.contains { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C } }
        let interesting: [UInt8] = [0x00, 0x01, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0x9F, 0xA0, 0xC3, 0xDC, 0xE2, 0xFF]
        var generator = SystemRandomNumberGenerator()
        for length in 0..<40 {
            for _ in 0..<200 {
                var bytes = (0..<length).map { _ in UInt8.random(in: 0x20...0xFF, using: &generator) }.map { $0 == 0x22 || $0 == 0x5C ? 0x41 : $0 }
                if length > 0, Bool.random(using: &generator) {
                    bytes[Int.random(in: 0..<length, using: &generator)] = interesting.randomElement(using: &generator)!
                }
                #expect(bytes.withUnsafeBufferPointer { JSONValue.needsEscape($0) } == plain(bytes), "\(bytes)")
            }
        }
    }

    @Test func aNumberIsWrittenAsFormatNumberSpellsIt() {
        // Written into the event's bytes as `formatNumber` spells it, whole numbers and fractions alike.
        var numbers: [Double] = [0, -0.0, 1, -1, 9, 10, 99, 100, 1_796_283_870, -1_796_283_870, 1_796_283_870.25, 0.5, -2.5e-7, 1e21]
        numbers += [9_007_199_254_740_992, -9_007_199_254_740_992, 9_007_199_254_740_994, 999_999_999_999_999, 1_000_000_000_000_000]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            numbers.append(Double(Int64.random(in: -9_007_199_254_740_992...9_007_199_254_740_992, using: &generator)))
            numbers.append(Double.random(in: -1e6...1e10, using: &generator))
        }
        for number in numbers {
            var written: [UInt8] = []
            JSONValue.writeNumber(number, to: &written)
            #expect(String(decoding: written, as: UTF8.self) == JSONValue.formatNumber(number), "\(number)")
        }
        for number in [Double.nan, .infinity, -.infinity] {
            var written: [UInt8] = []
            JSONValue.writeNumber(number, to: &written)
            #expect(written == Array("null".utf8))
        }
    }

    @Test func escapesStrings() {
        #expect(JSONValue.string("a\"b\\c").jsonString == #""a\"b\\c""#)
        #expect(JSONValue.string("line\nnext\ttab\rret").jsonString == #""line\nnext\ttab\rret""#)
        #expect(JSONValue.string("\u{0}\u{1}\u{8}\u{C}\u{1F}").jsonString == #""\u0000\u0001\u0008\u000c\u001f""#)
        #expect(JSONValue.string("/ é 日本 👋").jsonString == "\"/ é 日本 👋\"")
    }

    @Test func controlCharactersAndUnicodeRoundTrip() throws {
        var scalars = (0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) }
        scalars += ["\"", "\\", "/", "é", "ß", "日", "😀", "👩‍👩‍👧", "\u{7F}", "\u{FFFF}", "\u{10FFFF}"]
        let string = String(scalars)
        let value = JSONValue.string(string)
        #expect(try JSONValue.parse(value.serialized()) == value)
        #expect(try JSONDecoder().decode(String.self, from: Data(value.serialized())) == string)
        let encoded = try JSONEncoder().encode(string)
        #expect(try JSONValue.parse(encoded) == value)
    }

    @Test func parsesEscapes() throws {
        #expect(try JSONValue.parse(#""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(try JSONValue.parse(#""\u0041\u00e9\u65E5""#) == .string("Aé日"))
        #expect(try JSONValue.parse(#""\ud83d\ude00 smile""#) == .string("😀 smile"))
        #expect(try JSONValue.parse(#""\uDBFF\uDFFF""#) == .string("\u{10FFFF}"))
        #expect(try JSONValue.parse(#""\u0000""#) == .string("\u{0}"))
    }

    @Test func parsesScalarsAndWhitespace() throws {
        #expect(try JSONValue.parse(" \n\t\r null \n") == .null)
        #expect(try JSONValue.parse("true") == true)
        #expect(try JSONValue.parse("false") == false)
        #expect(try JSONValue.parse("0") == 0)
        #expect(try JSONValue.parse("-0.5e2") == -50)
        #expect(try JSONValue.parse("1E+2") == 100)
        #expect(try JSONValue.parse("123456789012345678") == .number(Double("123456789012345678")!))
        #expect(try JSONValue.parse(#"[ 1 , { "a" : [ ] } ]"#) == [1, ["a": []]])
        #expect(throws: JSONValueError.self, "a key twice: parsers disagree on which wins, so it is refused") {
            try JSONValue.parse(#"{"a": 1, "a": 2}"#)
        }
    }

    /// Strings and keys are scanned eight bytes at a time while their bytes are plain: a quote, a backslash, a control
    /// character or a byte of a longer UTF-8 character is found wherever it falls in a word, in strings of every
    /// length around the word's size.
    @Test func everyByteThatEndsAPlainRunIsFoundAtEveryPlace() throws {
        for length in 0..<34 {
            for place in 0...length {
                let before = String(repeating: "a", count: place)
                let after = String(repeating: "b", count: length - place)
                let plain = before + after
                #expect(try JSONValue.parse(Array("\"\(plain)\"".utf8)) == .string(plain))
                for (written, read) in [(#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), ("é", "é"), ("😀", "😀"), ("\u{7F}", "\u{7F}")] {
                    let text = "\"\(before)\(written)\(after)\""
                    #expect(try JSONValue.parse(Array(text.utf8)) == .string(before + read + after), "\(text)")
                    // As a key: read by the object's parser, and by the member-by-member reader when it is plain.
                    let object = "{\(text):1}"
                    #expect(try JSONValue.parse(Array(object.utf8)) == .object([before + read + after: 1]), "\(object)")
                    var keys: [[UInt8]] = []
                    let taken = try Array(object.utf8).withUnsafeBytes { bytes in
                        try JSONValue.forEachMember(in: bytes) { key, parser in
                            keys.append(Array(key))
                            _ = try parser.parseValue(depth: 1)
                            return true
                        }
                    }
                    let isPlain = read.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F && $0 != 0x22 && $0 != 0x5C } || read == "\u{7F}"
                    #expect(taken == isPlain, "\(object)")
                    if taken { #expect(keys == [Array((before + read + after).utf8)]) }
                }
                for control: UInt8 in [0x00, 0x01, 0x0A, 0x1F] {
                    let bytes = [0x22] + Array(before.utf8) + [control] + Array(after.utf8) + [0x22]
                    #expect(throws: JSONValueError.self, "\(control) at \(place) of \(length)") { try JSONValue.parse(bytes) }
                }
                let invalid = [0x22] + Array(before.utf8) + [0xFF] + Array(after.utf8) + [0x22]
                #expect(throws: JSONValueError.self) { try JSONValue.parse(invalid) }
                // A string that never ends.
                #expect(throws: JSONValueError.self) { try JSONValue.parse(Array("\"\(plain)".utf8)) }
            }
        }
    }

    /// Decimals are read without going through text when their digits fit a Double exactly; the value must be the one
    /// reading the text gives, to the bit, for every length of fraction and on both sides of the 15-digit bound.
    @Test func decimalsReadAsTheirTextReads() throws {
        var generator = SystemRandomNumberGenerator()
        var texts = [
            "0.0", "-0.0", "0.1", "0.5", "1.5", "-2.25", "1796005521.02", "1796005521.0234", "0.000000000000001", "999999999999999.9",
            "123456789012345.6", "1234567890123456.7", "0.30000000000000004", "9007199254740993.0", "0.1234567890123456789012345",
            "5.0000000000000000000001", "1.7976931348623157", "4.9406564584124654", "2.2250738585072014", "00000.1",
        ]
        for _ in 0..<20_000 {
            let digits = Int.random(in: 1...19, using: &generator)
            let point = Int.random(in: 1...digits, using: &generator)
            var text = Bool.random(using: &generator) ? "-" : ""
            for position in 0..<digits {
                if position == point { text += "." }
                let digit = position == 0 && point > 1 ? Int.random(in: 1...9, using: &generator) : Int.random(in: 0...9, using: &generator)
                text += String(digit)
            }
            if point == digits { text += ".\(Int.random(in: 0...9, using: &generator))" }
            texts.append(text)
        }
        // Integers and decimals of 16 to 21 digits (a clock's timestamps have 16 or 17), on both sides of the 19 read
        // as a quotient of integers, and halfway cases, which round to the even neighbour.
        for _ in 0..<20_000 {
            let digits = Int.random(in: 16...21, using: &generator)
            let point = Int.random(in: 1...digits + 1, using: &generator)
            var text = Bool.random(using: &generator) ? "-" : ""
            for position in 0..<digits {
                if position == point { text += "." }
                text += String(position == 0 ? Int.random(in: 1...9, using: &generator) : Int.random(in: 0...9, using: &generator))
            }
            texts.append(text)
        }
        texts += [
            "9007199254740993", "9007199254740995", "4503599627370497.5", "4503599627370498.5", "18014398509481986",
            "9223372036854775807", "9999999999999999999", "10000000000000000000", "0.0000000000000000001", "0.000000000000000001",
            "1796005521.1234567", "1796005521.123456", "179600552112345.6789",
            // Just above a halfway point, by less than the quotient's bits past the 53rd can show: only the
            // division's remainder says to round up (found by a search with exact fractions).
            "1.000000000000029865", "1.000000000000054734",
        ]
        for text in texts where !text.hasPrefix("00") {
            let read = try JSONValue.parse(text).numberValue
            #expect(read?.bitPattern == Double(text)?.bitPattern, "\(text): read \(String(describing: read)), the text is \(Double(text)!)")
        }
        #expect(throws: JSONValueError.self) { try JSONValue.parse("00000.1") }
    }
    @Test func rejectsMalformedInput() {
        let cases: [(String, JSONValueError.Kind)] = [
            ("", .unexpectedEndOfInput),
            ("   ", .unexpectedEndOfInput),
            (#"{"a": 1"#, .unexpectedEndOfInput),
            (#"{"a": "#, .unexpectedEndOfInput),
            (#"["abc"#, .unexpectedEndOfInput),
            ("[1, 2", .unexpectedEndOfInput),
            ("tru", .unexpectedEndOfInput),
            ("1 2", .trailingData),
            (#"{"a": 1} x"#, .trailingData),
            ("[1]]", .trailingData),
            (#""\x""#, .invalidEscape),
            (#""\u12G4""#, .invalidEscape),
            (#""\ud83d""#, .invalidEscape),
            (#""\ud83d\u0041""#, .invalidEscape),
            (#""\ude00""#, .invalidEscape),
            ("[1,]", .unexpectedCharacter),
            (#"{"a" 1}"#, .unexpectedCharacter),
            ("{a: 1}", .unexpectedCharacter),
            ("[1 2]", .unexpectedCharacter),
            ("nul", .unexpectedEndOfInput),
            ("nulL", .unexpectedCharacter),
            ("'a'", .unexpectedCharacter),
            ("01", .invalidNumber),
            ("-", .unexpectedEndOfInput),
            ("-a", .invalidNumber),
            ("1.", .unexpectedEndOfInput),
            ("1.e5", .invalidNumber),
            ("1e", .unexpectedEndOfInput),
            ("+1", .unexpectedCharacter),
            ("1e999", .invalidNumber),
            ("\"a\u{1}b\"", .controlCharacterInString),
            ("\"a\nb\"", .controlCharacterInString),
        ]
        for (text, kind) in cases {
            let error = Self.parseError(text)
            #expect(error?.kind == kind, "\(text.debugDescription) → \(String(describing: error))")
        }
    }

    @Test func errorsSayWhatAndWhere() throws {
        let trailing = try #require(Self.parseError(#"{"a": 1} x"#))
        #expect(trailing.offset == 9)
        #expect(trailing.description == "unexpected character 'x' after the JSON value at byte offset 9")

        let truncated = try #require(Self.parseError(#"{"a": [1, 2"#))
        #expect(truncated.kind == .unexpectedEndOfInput)
        #expect(truncated.offset == 11)

        let escape = try #require(Self.parseError(#"["ok", "bad \q"]"#))
        #expect(escape.offset == 12)
        #expect(escape.description.contains(#"\q"#))
    }

    @Test func rejectsInvalidUTF8() throws {
        let invalid: [[UInt8]] = [
            [0x22, 0xFF, 0x22],  // never valid
            [0x22, 0x61, 0x80, 0x22],  // lone continuation byte
            [0x22, 0xC3, 0x28, 0x22],  // bad continuation
            [0x22, 0xC0, 0xAF, 0x22],  // overlong '/'
            [0x22, 0xE0, 0x80, 0xAF, 0x22],  // overlong
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // UTF-8 encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
            [0x22, 0xE6, 0x97, 0x22],  // truncated sequence
        ]
        for bytes in invalid {
            let error = Self.parseError(bytes)
            #expect(error?.kind == .invalidUTF8, "\(bytes) → \(String(describing: error))")
        }
        let ff = try #require(Self.parseError([0x22, 0x61, 0xFF, 0x22]))
        #expect(ff.offset == 2)
        #expect(ff.description.contains("0xFF"))
        // Outside strings a non-ASCII byte is simply unexpected.
        #expect(Self.parseError([0xFF])?.kind == .unexpectedCharacter)
        #expect(Self.parseError([0x5B, 0x31, 0x5D, 0xFF])?.kind == .trailingData)
        // A string cut off in the middle of a sequence.
        #expect(Self.parseError([0x22, 0xE6, 0x97])?.kind == .unexpectedEndOfInput)
    }

    @Test func limitsNestingDepth() throws {
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        var value = try JSONValue.parse(deepest)
        var depth = 0
        while case .array(let elements) = value {
            depth += 1
            value = elements.first ?? .null
        }
        #expect(depth == 64)

        let objects = String(repeating: #"{"a":"#, count: 64) + "1" + String(repeating: "}", count: 64)
        #expect(throws: Never.self) { try JSONValue.parse(objects) }

        let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        let error = try #require(Self.parseError(tooDeep))
        #expect(error.kind == .depthLimitExceeded)
        #expect(error.offset == 64)

        let mixed = String(repeating: #"[{"a":"#, count: 33) + "1" + String(repeating: "}]", count: 33)
        #expect(Self.parseError(mixed)?.kind == .depthLimitExceeded)

        let huge = String(repeating: "[", count: 100_000)
        #expect(Self.parseError(huge)?.kind == .depthLimitExceeded)
    }

    @Test func displayString() {
        #expect(JSONValue.string("Running late, sorry").displayString == "Running late, sorry")
        #expect(JSONValue.number(12).displayString == "12")
        #expect(JSONValue.number(-3).displayString == "-3")
        #expect(JSONValue.number(2.5).displayString == "2.5")
        #expect(JSONValue.bool(true).displayString == "true")
        #expect(JSONValue.null.displayString == "null")
        #expect(JSONValue.array(["Alice", "Bob", 3]).displayString == "Alice, Bob, 3")
        #expect(JSONValue.object(["b": 1, "a": "x"]).displayString == #"{"a":"x","b":1}"#)
    }

    @Test func accessorsAndLiterals() {
        let value: JSONValue = ["name": "soup", "list": [1, 2], "nested": ["a": nil]]
        #expect(value["name"]?.stringValue == "soup")
        #expect(value["list"]?.arrayValue == [1, 2])
        #expect(value["nested"]?.objectValue == ["a": .null])
        #expect(value["missing"] == nil)
        #expect(value["name"]?.arrayValue == nil)
        #expect(JSONValue.string("x")["key"] == nil)
        #expect(JSONValue("text") == .string("text"))
        #expect(JSONValue(2.5) == .number(2.5))
        let literals: [JSONValue] = [nil, true, 1, 1.5, "s", [], [:]]
        #expect(literals == [.null, .bool(true), .number(1), .number(1.5), .string("s"), .array([]), .object([:])])
    }
}

// MARK: - Lenient decoding (the command line's), and strict (the wire's)

@Suite struct JSONValueDecoderTests {
    private func decode<T: Decodable>(_ type: T.Type, _ value: JSONValue) throws -> T {
        try JSONValueDecoder(lenient: true).decode(type, from: value)
    }

    @Test func theStrictDecoderTakesEachValueOnlyAsItsOwnType() {
        let strict = JSONValueDecoder()
        #expect(throws: DecodingError.self) { try strict.decode(Int.self, from: "3") }
        #expect(throws: DecodingError.self) { try strict.decode(Double.self, from: "2.5") }
        #expect(throws: DecodingError.self) { try strict.decode(Bool.self, from: "true") }
        #expect(throws: DecodingError.self) { try strict.decode(String.self, from: true) }
        #expect(throws: DecodingError.self) { try strict.decode(String.self, from: 42) }
        #expect(throws: DecodingError.self) { try strict.decode([String].self, from: "Alice, Bob") }
        #expect(throws: DecodingError.self) { try strict.decode(Int.self, from: 2.5) }
        #expect((try? strict.decode(Int.self, from: 3)) == 3)
        #expect((try? strict.decode([String].self, from: ["Alice", "Bob"])) == ["Alice", "Bob"])
    }

    private func decodingError<T: Decodable>(_ type: T.Type, _ value: JSONValue) -> DecodingError? {
        do {
            _ = try decode(type, value)
            return nil
        } catch let error as DecodingError {
            return error
        } catch {
            return nil
        }
    }

    private func debugDescription(_ error: DecodingError?) -> String {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context),
            .keyNotFound(_, let context), .dataCorrupted(let context):
            return context.debugDescription
        case nil:
            return "<no error>"
        @unknown default:
            return "<unknown>"
        }
    }

    private func codingPath(_ error: DecodingError?) -> [String] {
        switch error {
        case .typeMismatch(_, let context), .valueNotFound(_, let context),
            .keyNotFound(_, let context), .dataCorrupted(let context):
            return context.codingPath.map(\.stringValue)
        default:
            return []
        }
    }

    @Test func splitsACommaSeparatedStringIntoAList() throws {
        let message = try decode(SendMessage.self, ["recipients": "Alice, Bob", "content": "Running late, sorry"])
        #expect(message == SendMessage(recipients: ["Alice", "Bob"], content: "Running late, sorry", groupName: nil))

        #expect(try decode([String].self, " Alice ,, Bob ,  ") == ["Alice", "Bob"])
        #expect(try decode([String].self, "Alice") == ["Alice"])
        #expect(try decode([String].self, "") == [])
        #expect(try decode([String].self, "   ") == [])
        #expect(try decode([Int].self, "1, 2,3") == [1, 2, 3])
        #expect(try decode(Set<String>.self, "a, b, a") == ["a", "b"])
    }

    @Test func decodesProperJSONArrays() throws {
        let message = try decode(SendMessage.self, ["recipients": ["Alice, Bob", "Carol"], "groupName": "Team"])
        // Elements of a real array are never split.
        #expect(message == SendMessage(recipients: ["Alice, Bob", "Carol"], content: nil, groupName: "Team"))
        #expect(try decode([Int].self, [1, 2, 3]) == [1, 2, 3])
        #expect(try decode([[String]].self, [["a"], "b, c"]) == [["a"], ["b", "c"]])
    }

    @Test func decodesFromParsedCommandLineAndJSON() throws {
        let value = try JSONValue.parse(#"{"recipients":"Alice,Bob","content":"Hi, there"}"#)
        #expect(try decode(SendMessage.self, value) == SendMessage(recipients: ["Alice", "Bob"], content: "Hi, there"))
    }

    @Test func integersFromStringsAndNumbers() throws {
        #expect(try decode(OrderSoup.self, ["soup": "tomato", "quantity": "3"]) == OrderSoup(soup: "tomato", quantity: 3))
        #expect(try decode(OrderSoup.self, ["soup": "tomato", "quantity": 3]) == OrderSoup(soup: "tomato", quantity: 3))
        #expect(try decode(OrderSoup.self, ["quantity": " -12 "]) == OrderSoup(quantity: -12))
        #expect(try decode(OrderSoup.self, ["quantity": "3.0"]) == OrderSoup(quantity: 3))
        #expect(try decode(Int8.self, "127") == 127)
        #expect(try decode(UInt64.self, "18446744073709551615") == UInt64.max)
        #expect(try decode(Int64.self, .number(-9_007_199_254_740_992)) == -9_007_199_254_740_992)
        #expect(try decode(UInt16.self, 65535) == 65535)
        #expect(try decode(Int128.self, "-170141183460469231731687303715884105728") == Int128.min)
    }

    @Test func fractionalQuantityFails() throws {
        let error = decodingError(OrderSoup.self, ["quantity": 3.5])
        guard case .dataCorrupted(let context)? = error else {
            Issue.record("expected dataCorrupted, got \(String(describing: error))")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["quantity"])
        #expect(context.debugDescription == "expected an integer for 'quantity', found the number 3.5")
        #expect(decodingError(OrderSoup.self, ["quantity": "3.5"]) != nil)
    }

    @Test func wordForAQuantityFailsNamingTheKey() throws {
        let error = decodingError(OrderSoup.self, ["soup": "tomato", "quantity": "lots"])
        guard case .typeMismatch(let type, let context)? = error else {
            Issue.record("expected typeMismatch, got \(String(describing: error))")
            return
        }
        #expect(type is Int.Type)
        #expect(context.codingPath.map(\.stringValue) == ["quantity"])
        #expect(context.debugDescription == #"expected an integer for 'quantity', found the string "lots""#)
    }

    @Test func integersOutOfRangeFail() {
        let error = decodingError(Int8.self, 300)
        #expect(debugDescription(error) == "expected an integer from -128 to 127, found the number 300")
        #expect(decodingError(UInt.self, -1) != nil)
        #expect(decodingError(UInt8.self, "256") != nil)
        #expect(decodingError(Int.self, 1e19) != nil)
        #expect(decodingError(Int.self, true) != nil)
        #expect(decodingError(Int.self, [1]) != nil)
    }

    @Test func floatingPointFromStrings() throws {
        #expect(try decode(Double.self, " 2.5 ") == 2.5)
        #expect(try decode(Double.self, 7) == 7)
        #expect(try decode(Float.self, "0.5") == 0.5)
        #expect(decodingError(Double.self, "two") != nil)
        #expect(decodingError(Float.self, 1e300) != nil)
    }

    @Test func booleansFromStrings() throws {
        for text in ["true", "TRUE", "Yes", "1", " yes "] {
            #expect(try decode(Bool.self, .string(text)) == true, "\(text)")
        }
        for text in ["false", "False", "NO", "0"] {
            #expect(try decode(Bool.self, .string(text)) == false, "\(text)")
        }
        #expect(try decode(Bool.self, 1) == true)
        #expect(try decode(Bool.self, 0) == false)
        #expect(debugDescription(decodingError(Bool.self, "maybe")) == #"expected a boolean, found the string "maybe""#)
        #expect(decodingError(Bool.self, 2) != nil)
    }

    @Test func stringsFromNumbersAndBooleans() throws {
        #expect(try decode(SendMessage.self, ["content": 12]) == SendMessage(content: "12"))
        #expect(try decode(SendMessage.self, ["content": "12"]) == SendMessage(content: "12"))
        #expect(try decode(String.self, 2.5) == "2.5")
        #expect(try decode(String.self, true) == "true")
        #expect(try decode([String].self, [1, "b", false]) == ["1", "b", "false"])
        #expect(decodingError(String.self, ["a": 1]) != nil)
        #expect(decodingError(String.self, ["a"]) != nil)
    }

    @Test func missingAndNullOptionalsAreNil() throws {
        #expect(try decode(SendMessage.self, [:]) == SendMessage())
        #expect(try decode(SendMessage.self, ["recipients": nil, "content": nil, "groupName": nil]) == SendMessage())
        #expect(try decode(OrderSoup.self, ["quantity": nil, "unrelated": "x"]) == OrderSoup())
        #expect(try decode(Int?.self, nil) == nil)
        #expect(try decode([Int?].self, [1, nil, 3]) == [1, nil, 3])
    }

    @Test func missingAndNullRequiredValuesFail() throws {
        let missing = decodingError(Item.self, ["name": "tomato"])
        guard case .keyNotFound(let key, let context)? = missing else {
            Issue.record("expected keyNotFound, got \(String(describing: missing))")
            return
        }
        #expect(key.stringValue == "quantity")
        #expect(context.debugDescription == "missing required value for 'quantity'")

        let null = decodingError(Item.self, ["name": "tomato", "quantity": nil])
        guard case .valueNotFound(_, let nullContext)? = null else {
            Issue.record("expected valueNotFound, got \(String(describing: null))")
            return
        }
        #expect(nullContext.codingPath.map(\.stringValue) == ["quantity"])
        #expect(nullContext.debugDescription == "expected an integer for 'quantity', found null")
    }

    @Test func enumsWithStringRawValues() throws {
        #expect(try decode(Item.self, ["name": "soup", "quantity": "2", "size": "large"]) == Item(name: "soup", quantity: 2, size: .large))
        #expect(try decode([Size].self, "small, large") == [.small, .large])
        let error = decodingError(Item.self, ["name": "soup", "quantity": 1, "size": "huge"])
        guard case .dataCorrupted(let context)? = error else {
            Issue.record("expected dataCorrupted, got \(String(describing: error))")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["size"])
    }

    @Test func nestedStructsAndArraysOfStructs() throws {
        let value: JSONValue = [
            "id": "o-1",
            "address": ["street": "1 Main St", "city": "Springfield"],
            "items": [
                ["name": "tomato", "quantity": "2", "size": "small"],
                ["name": "leek", "quantity": 1],
            ],
            "express": "yes",
            "tip": "1.5",
            "tags": "hot, fast",
            "extra": ["any": ["shape", 1, true, nil]],
        ]
        let order = try decode(Order.self, value)
        #expect(
            order
                == Order(
                    id: "o-1", address: Address(street: "1 Main St", city: "Springfield"),
                    items: [Item(name: "tomato", quantity: 2, size: .small), Item(name: "leek", quantity: 1, size: nil)],
                    express: true, tip: 1.5, tags: ["hot", "fast"], extra: ["any": ["shape", 1, true, nil]]))
    }

    @Test func errorsCarryTheFullCodingPath() throws {
        let value: JSONValue = [
            "id": "o-1",
            "address": ["street": "1 Main St", "city": "Springfield"],
            "items": [["name": "tomato", "quantity": 2], ["name": "leek", "quantity": "a few"]],
            "express": false,
        ]
        let error = decodingError(Order.self, value)
        #expect(codingPath(error) == ["items", "Index 1", "quantity"])
        #expect(debugDescription(error) == #"expected an integer for 'items[1].quantity', found the string "a few""#)

        let badAddress = decodingError(Order.self, ["id": "x", "address": "Main St", "items": [], "express": true])
        guard case .typeMismatch(_, let context)? = badAddress else {
            Issue.record("expected typeMismatch, got \(String(describing: badAddress))")
            return
        }
        #expect(context.codingPath.map(\.stringValue) == ["address"])
        #expect(context.debugDescription == #"expected an object for 'address', found the string "Main St""#)

        let missingCity = decodingError(Order.self, ["id": "x", "address": ["street": "s"], "items": [], "express": true])
        guard case .keyNotFound(let key, let keyContext)? = missingCity else {
            Issue.record("expected keyNotFound, got \(String(describing: missingCity))")
            return
        }
        #expect(key.stringValue == "city")
        #expect(keyContext.codingPath.map(\.stringValue) == ["address"])
        #expect(keyContext.debugDescription == "missing required value for 'address.city'")
    }

    @Test func listsMustBeArraysOrStrings() {
        let error = decodingError(SendMessage.self, ["recipients": ["a": 1]])
        #expect(debugDescription(error) == "expected an array for 'recipients', found an object")
        #expect(decodingError([String].self, 5) != nil)
        let short = decodingError(Pair.self, [1])
        #expect(debugDescription(short) == "expected an integer for '[1]', but the array has only 1 element")
    }

    @Test func dictionariesAndJSONValueAreKeptAsIs() throws {
        #expect(try decode([String: Int].self, ["a": "1", "b": 2]) == ["a": 1, "b": 2])
        // A JSONValue inside a decoded type is taken verbatim, not leniently converted.
        let tree: JSONValue = ["flag": "true", "number": "3", "list": "a, b"]
        #expect(try decode(JSONValue.self, tree) == tree)
        #expect(try decode([String: JSONValue].self, tree) == tree.objectValue)
        #expect(try decode(Wrapper.self, ["value": "true"]).value == "true")
        #expect(try decode([JSONValue].self, ["1", 1, true]) == ["1", 1, true])
    }

    @Test func containersByHand() throws {
        let manual = try decode(Manual.self, ["header": ["kind": "x"], "rows": [[1, 2], "3, 4"], "super": ["base": "b"]])
        #expect(manual.kind == "x")
        #expect(manual.rows == [[1, 2], [3, 4]])
        #expect(manual.base == "b")
        #expect(manual.paths == ["header", "rows.[0]", "super"])
    }

    @Test func foundationTypesLikeJSONEncoderWritesThem() throws {
        let original = Attachments(
            link: URL(string: "https://example.com/a?b=c")!, bytes: Data([0, 1, 2, 250]),
            price: Decimal(string: "12.34")!, when: Date(timeIntervalSinceReferenceDate: 1234.5))
        let value = try JSONValue.parse(try JSONEncoder().encode(original))
        #expect(try decode(Attachments.self, value) == original)
        #expect(try decode(Data.self, [1, 2, 3]) == Data([1, 2, 3]))
    }

    @Test func decodesEnvelopeStyleParameters() throws {
        // What the CLI produces: every parameter a string.
        let parameters: [String: JSONValue] = ["recipients": "Alice,Bob", "content": "12", "groupName": ""]
        let message = try decode(SendMessage.self, .object(parameters))
        #expect(message == SendMessage(recipients: ["Alice", "Bob"], content: "12", groupName: ""))
    }
}

// MARK: - Fixtures

extension JSONValueDecoderTests {
    struct SendMessage: Codable, Equatable {
        var recipients: [String]?
        var content: String?
        var groupName: String?
    }

    struct OrderSoup: Codable, Equatable {
        var soup: String?
        var quantity: Int?
    }

    enum Size: String, Codable, Equatable {
        case small, large
    }

    struct Item: Codable, Equatable {
        var name: String
        var quantity: Int
        var size: Size?
    }

    struct Address: Codable, Equatable {
        var street: String
        var city: String
    }

    struct Order: Codable, Equatable {
        var id: String
        var address: Address
        var items: [Item]
        var express: Bool
        var tip: Double?
        var tags: Set<String>?
        var extra: JSONValue?
    }

    struct Pair: Decodable {
        var first: Int
        var second: Int

        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            first = try container.decode(Int.self)
            second = try container.decode(Int.self)
        }
    }

    struct Wrapper: Decodable {
        var value: JSONValue
    }

    struct Attachments: Codable, Equatable {
        var link: URL
        var bytes: Data
        var price: Decimal
        var when: Date
    }

    struct Manual: Decodable {
        var kind: String
        var rows: [[Int]]
        var base: String
        var paths: [String]

        private enum Keys: String, CodingKey { case header, rows }
        private enum HeaderKeys: String, CodingKey { case kind }
        private enum BaseKeys: String, CodingKey { case base }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            let header = try container.nestedContainer(keyedBy: HeaderKeys.self, forKey: .header)
            kind = try header.decode(String.self, forKey: .kind)
            var paths = [Self.describe(header.codingPath)]

            var rowsContainer = try container.nestedUnkeyedContainer(forKey: .rows)
            var rows: [[Int]] = []
            while !rowsContainer.isAtEnd {
                var row = try rowsContainer.nestedUnkeyedContainer()
                if rows.isEmpty { paths.append(Self.describe(row.codingPath)) }
                var values: [Int] = []
                while !row.isAtEnd { values.append(try row.decode(Int.self)) }
                rows.append(values)
            }
            self.rows = rows

            let superDecoder = try container.superDecoder()
            paths.append(Self.describe(superDecoder.codingPath))
            base = try superDecoder.container(keyedBy: BaseKeys.self).decode(String.self, forKey: .base)
            self.paths = paths
        }

        private static func describe(_ path: [any CodingKey]) -> String {
            path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
    }
}

// MARK: - The leaves read without a decoder

/// `String?`, `[String]` and `[String]?` (what most parameters say) are read without a decoder and its containers;
/// whatever the value, strict or lenient, the answer is the one their own `init(from:)` gives: the same value, or an
/// error that says the same.
@Suite struct PlainLeafTests {
    static let values: [JSONValue] = [
        .null, "Alice", "Alice, Bob,", "", ["a", "b"], [], ["a", 1], ["a", .null], [["a"]], 5, 1.5, true, ["a": 1],
    ]

    /// An answer as text: the value, or the error.
    static func answer<T: Decodable>(_ read: () throws -> T) -> String {
        do { return "value \(try read())" } catch { return "error \(error)" }
    }

    static func check<T: Decodable>(_ type: T.Type) {
        for lenient in [false, true] {
            let decoder = JSONValueDecoder(lenient: lenient)
            for value in values {
                let quick = answer { try decoder.decodeTree(T.self, from: value) }
                let whole = answer {
                    try JSONValueDecoder.$current.withValue(decoder) { try T(from: _JSONValueTreeDecoder(value: value, codingPath: [])) }
                }
                #expect(quick == whole, "\(T.self) from \(value), lenient \(lenient)")
            }
        }
    }

    @Test func anOptionalStringIsReadAsItsDecoderReadsIt() { Self.check(String?.self) }
    @Test func aListOfStringsIsReadAsItsDecoderReadsIt() { Self.check([String].self) }
    @Test func anOptionalListOfStringsIsReadAsItsDecoderReadsIt() { Self.check([String]?.self) }
}
