import Foundation

/// A JSON document as a value tree: what intent parameters, payloads and
/// resolution values are made of.
///
/// Numbers are kept as `Double` (integers up to ±2^53 are exact). Objects are
/// unordered; `serialized()` writes their keys sorted so output is deterministic.
public enum JSONValue: Sendable, Hashable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number; integers are exact up to ±2^53.
    case number(Double)
    /// A string.
    case string(String)
    /// An array, in order.
    case array([JSONValue])
    /// An object: its members by key, in no order.
    case object([String: JSONValue])
}

// MARK: - Convenience

extension JSONValue {
    /// The text as a JSON string.
    public init(_ string: String) {
        self = .string(string)
    }

    /// The number as a JSON number.
    public init(_ number: Double) {
        self = .number(number)
    }

    /// The integer as a JSON number, exact up to ±2^53.
    public init(_ number: Int) {
        self = .number(Double(number))
    }

    /// The boolean as JSON `true` or `false`.
    public init(_ bool: Bool) {
        self = .bool(bool)
    }

    /// The string, if this is a `.string`.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The number, if this is a `.number`.
    public var numberValue: Double? {
        if case .number(let number) = self { return number }
        return nil
    }

    /// The boolean, if this is a `.bool`.
    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }

    /// The elements, if this is an `.array`.
    public var arrayValue: [JSONValue]? {
        if case .array(let array) = self { return array }
        return nil
    }

    /// The members, if this is an `.object`.
    public var objectValue: [String: JSONValue]? {
        if case .object(let object) = self { return object }
        return nil
    }

    /// Whether this is `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The member named `key`, if this is an object that has it.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    /// The element at `index`, if this is an array that long.
    public subscript(index: Int) -> JSONValue? {
        if case .array(let array) = self, array.indices.contains(index) { return array[index] }
        return nil
    }

    /// A rendering for people: strings as they are, whole numbers without
    /// `.0`, arrays joined by `", "`, objects as compact JSON.
    public var displayString: String {
        switch self {
        case .null: return "null"
        case .bool(let bool): return bool ? "true" : "false"
        case .number(let number):
            return number.isFinite ? JSONValue.formatNumber(number) : number.description
        case .string(let string): return string
        case .array(let array): return array.map(\.displayString).joined(separator: ", ")
        case .object: return jsonString
        }
    }

    /// Integral values within ±2^53 without a decimal point, others in Swift's
    /// shortest round-tripping form. Only for finite numbers.
    @inline(__always)
    public static func formatNumber(_ number: Double) -> String {
        if isWrittenWhole(number) {
            return String(Int64(number))
        }
        return number.description
    }

    /// Whether `formatNumber` spells `number` as a whole number, without a decimal point.
    @inline(__always)
    static func isWrittenWhole(_ number: Double) -> Bool {
        number.rounded(.towardZero) == number && abs(number) <= 9_007_199_254_740_992
    }
}

/// Writes one JSON object member by member, straight into bytes, with no tree or dictionary
/// in between: the same bytes `serialized()` writes for that object when the members come in
/// sorted key order, as the caller gives them. For the bodies written on every intent's path.
struct JSONObjectWriter {
    private var output: [UInt8]
    private var empty = true

    init(capacity: Int = 256) {
        output = []
        output.reserveCapacity(capacity)
        output.append(UInt8(ascii: "{"))
    }

    private init(continuing output: [UInt8]) {
        self.output = output
    }

    /// Writes an object at the end of `output` (a member's value, an array's element), with no bytes of its own.
    static func write(into output: inout [UInt8], _ members: (inout JSONObjectWriter) -> Void) {
        var writer = JSONObjectWriter(continuing: [])
        swap(&writer.output, &output)
        writer.output.append(UInt8(ascii: "{"))
        members(&writer)
        writer.output.append(UInt8(ascii: "}"))
        swap(&writer.output, &output)
    }

    /// A member whose value `write` appends to the bytes, as JSON.
    mutating func member(_ name: StaticString, _ write: (inout [UInt8]) -> Void) {
        key(name)
        write(&output)
    }

    /// A member's name and its colon. Names are the wire format's own, written in the source: plain ASCII with
    /// nothing to escape (checked in debug builds), so their bytes are copied as they are.
    private mutating func key(_ key: StaticString) {
        key.withUTF8Buffer { name in
            assert(key.isASCII && !JSONValue.needsEscape(name), "a member name that needs escaping: \(key)")
            if !empty { output.append(UInt8(ascii: ",")) }
            empty = false
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: name)
            output.append(UInt8(ascii: "\""))
            output.append(UInt8(ascii: ":"))
        }
    }

    mutating func string(_ name: StaticString, _ value: String) {
        key(name)
        JSONValue.writeString(value, to: &output)
    }

    mutating func number(_ name: StaticString, _ value: Double) {
        key(name)
        JSONValue.writeNumber(value, to: &output)
    }

    mutating func value(_ name: StaticString, _ value: JSONValue) {
        key(name)
        JSONValue.write(value, to: &output)
    }

    /// The object's bytes, closed.
    mutating func finish() -> [UInt8] {
        output.append(UInt8(ascii: "}"))
        return output
    }
}

// MARK: - Literals

extension JSONValue: ExpressibleByStringLiteral {
    /// A JSON string written as a literal: `"Alice"`.
    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// A JSON number written as an integer literal: `3`.
    public init(integerLiteral value: Int) {
        self = .number(Double(value))
    }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A JSON number written as a floating-point literal: `0.5`.
    public init(floatLiteral value: Double) {
        self = .number(value)
    }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// JSON `true` or `false`, written as a literal.
    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// A JSON array written as a literal: `["Alice", 3]`.
    public init(arrayLiteral elements: JSONValue...) {
        self = .array(elements)
    }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// A JSON object written as a literal: `["code": "success"]`; a key written twice keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var object = [String: JSONValue](minimumCapacity: elements.count)
        for (key, value) in elements {
            object[key] = value
        }
        self = .object(object)
    }
}

extension JSONValue: ExpressibleByNilLiteral {
    /// JSON `null`, written as `nil`.
    public init(nilLiteral: ()) {
        self = .null
    }
}

extension JSONValue: CustomStringConvertible {
    /// Compact JSON.
    public var description: String { jsonString }
}

// MARK: - Codable

extension JSONValue: Codable {
    /// Reads any JSON value: from `JSONValueDecoder`, the tree as it is; from another decoder, the first of null, a boolean,
    /// a number, a string, an array or an object that fits.
    public init(from decoder: any Decoder) throws {
        // Our own decoder holds the tree already: take it as it is (its lenient
        // scalar conversions would otherwise turn "true" into a Bool).
        if let treeDecoder = decoder as? _JSONValueTreeDecoder {
            self = treeDecoder.value
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else if let object = try? container.decode([String: JSONValue].self) {
            self = .object(object)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "expected a JSON value (null, boolean, number, string, array or object)")
        }
    }

    /// Writes the value as it is; a number that is not finite, which JSON cannot hold, as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number):
            // JSON has no NaN or infinity; write them as null like `serialized()`.
            if number.isFinite { try container.encode(number) } else { try container.encodeNil() }
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }
}

// MARK: - Serializing

extension JSONValue {
    /// Compact UTF-8 JSON with object keys sorted. Non-finite numbers are written as `null`.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        // Room for what the store writes on every intent's path (a submission's parameters, a payload) without growing.
        output.reserveCapacity(256)
        JSONValue.write(self, to: &output)
        return output
    }

    /// Compact JSON with object keys sorted, as a string.
    public var jsonString: String {
        String(decoding: serialized(), as: UTF8.self)
    }

    static func write(_ value: JSONValue, to output: inout [UInt8]) {
        switch value {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let bool):
            output.append(contentsOf: bool ? "true".utf8 : "false".utf8)
        case .number(let number):
            writeNumber(number, to: &output)
        case .string(let string):
            writeString(string, to: &output)
        case .array(let array):
            output.append(UInt8(ascii: "["))
            var first = true
            for element in array {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            if object.count <= smallObject {
                writeSmall(object, to: &output)
            } else {
                for (position, (key, member)) in object.sorted(by: { $0.key < $1.key }).enumerated() {
                    writeMember(key, member, first: position == 0, to: &output)
                }
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// One member of an object, after a comma unless it is the first.
    @inline(__always)
    private static func writeMember(_ key: String, _ member: JSONValue, first: Bool, to output: inout [UInt8]) {
        if !first { output.append(UInt8(ascii: ",")) }
        writeString(key, to: &output)
        output.append(UInt8(ascii: ":"))
        write(member, to: &output)
    }

    /// Objects up to this many members are sorted in place of their indices, on the stack (`writeSmall`).
    static let smallObject = 16

    /// The members of `object` (at most `smallObject`) in sorted key order: its indices put in that order on the stack by
    /// insertion, so that no array of its members is made, sorted and freed (a payload or a submission's parameters, on
    /// every intent's path, and each a few members).
    private static func writeSmall(_ object: [String: JSONValue], to output: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: [String: JSONValue].Index.self, capacity: object.count) { order in
            guard let base = order.baseAddress else { return }
            var count = 0
            for index in object.indices {
                let key = object.keys[index]
                var place = count
                while place > 0, key < object.keys[base[place - 1]] { place -= 1 }
                (base + place + 1).moveInitialize(from: base + place, count: count - place)
                (base + place).initialize(to: index)
                count += 1
            }
            for position in 0..<count {
                let (key, member) = object[base[position]]
                writeMember(key, member, first: position == 0, to: &output)
            }
            base.deinitialize(count: count)
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Whether any byte is a control character, `"` or `\`: eight bytes at a time, by the usual
    /// bit tricks (a byte below 0x20, a byte equal to 0x22 or 0x5C); the last few one by one. A UTF-8
    /// byte of a longer character (0x80 and up) never counts.
    static func needsEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while index + 8 <= bytes.count {
                let word = raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                let control = (word &- ones &* 0x20) & ~word & highs
                let quote = word ^ (ones &* 0x22)
                let backslash = word ^ (ones &* 0x5C)
                let quoted = (quote &- ones) & ~quote & highs
                let escaped = (backslash &- ones) & ~backslash & highs
                if control | quoted | escaped != 0 { return true }
                index += 8
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
            index += 1
        }
        return false
    }

    /// `formatNumber`'s text, or `null` when the number is not finite.
    static func writeNumber(_ number: Double, to output: inout [UInt8]) {
        guard number.isFinite else { return output.append(contentsOf: "null".utf8) }
        guard isWrittenWhole(number) else {
            // Appended from the text's bytes: about 80 instructions a number fewer than the generic append of its
            // `utf8` view (`deploy/worker-cost.sh`'s profile).
            var text = number.description
            return text.withUTF8 { output.append(contentsOf: $0) }
        }
        // An integer (most numbers: counts, ids, amounts): its digits written straight in, as `formatNumber` spells them.
        var magnitude = UInt64(abs(number))
        if number < 0, magnitude > 0 { output.append(UInt8(ascii: "-")) }
        // At most 16 digits (2^53 has 16).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            output.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start...]))
        }
    }

    static func writeString(_ string: String, to output: inout [UInt8]) {
        var string = string
        string.withUTF8 { bytes in
            output.append(UInt8(ascii: "\""))
            // Most strings need no escape: copied in one go.
            if !needsEscape(bytes) {
                output.append(contentsOf: bytes)
                output.append(UInt8(ascii: "\""))
                return
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""):
                    output.append(UInt8(ascii: "\\"))
                    output.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"):
                    output.append(UInt8(ascii: "\\"))
                    output.append(UInt8(ascii: "\\"))
                case 0x0A:
                    output.append(UInt8(ascii: "\\"))
                    output.append(UInt8(ascii: "n"))
                case 0x0D:
                    output.append(UInt8(ascii: "\\"))
                    output.append(UInt8(ascii: "r"))
                case 0x09:
                    output.append(UInt8(ascii: "\\"))
                    output.append(UInt8(ascii: "t"))
                case 0x00..<0x20:
                    output.append(contentsOf: [
                        UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                        hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)],
                    ])
                default:
                    output.append(byte)
                }
            }
            output.append(UInt8(ascii: "\""))
        }
    }
}

// MARK: - Parsing

/// Why bytes are not a JSON document, and where.
public struct JSONValueError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// What sort of problem the parser found, for a program to branch on.
    public enum Kind: String, Sendable, Hashable {
        /// The input ended before the document did.
        case unexpectedEndOfInput
        /// A character that cannot stand where it is (a missing comma, a stray bracket, a misspelled literal).
        case unexpectedCharacter
        /// Bytes that are not valid UTF-8.
        case invalidUTF8
        /// A backslash escape JSON does not have, or a `\u` escape that is no character (a lone surrogate).
        case invalidEscape
        /// A malformed number (a leading zero, a missing digit), or one too large for a `Double`.
        case invalidNumber
        /// A control character written raw in a string, where JSON requires it escaped.
        case controlCharacterInString
        /// Arrays and objects nested deeper than `JSONValue.maximumDepth`.
        case depthLimitExceeded
        /// Something other than white space after the value.
        case trailingData
        /// An object names a key twice: parsers disagree on which value wins, so neither does.
        case duplicateKey
    }

    /// What sort of problem it is.
    public var kind: Kind
    /// What is wrong, without the position.
    public var message: String
    /// Where in the input (in bytes from the start) the problem was found.
    public var offset: Int

    /// An error of `kind` saying `message`, found `offset` bytes into the input.
    public init(kind: Kind, message: String, offset: Int) {
        self.kind = kind
        self.message = message
        self.offset = offset
    }

    /// The message and the byte offset it was found at.
    public var description: String { "\(message) at byte offset \(offset)" }
    /// The same as `description`, for `localizedDescription`.
    public var errorDescription: String? { description }
}

extension JSONValue {
    /// The maximum nesting of arrays and objects `parse` accepts.
    public static let maximumDepth = 64

    /// Parses strict UTF-8 JSON (RFC 8259; any value at the top level,
    /// surrounding whitespace allowed). Throws `JSONValueError`.
    public static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { try parse(rawBuffer: $0) }
    }

    /// Parses strict UTF-8 JSON from bytes, as `parse(_:)` does from `Data`. Throws `JSONValueError`.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBytes { try parse(rawBuffer: $0) }
    }

    /// Parses strict JSON from a string's UTF-8. Throws `JSONValueError`.
    public static func parse(_ string: String) throws -> JSONValue {
        var string = string
        return try string.withUTF8 { try parse(rawBuffer: UnsafeRawBufferPointer($0)) }
    }

    /// Parses strict UTF-8 JSON from any collection of bytes: in place when they are contiguous (a delivery's body
    /// is), from a copy otherwise. Throws `JSONValueError`.
    static func parse(bytes: some Collection<UInt8>) throws -> JSONValue {
        let inPlace = try bytes.withContiguousStorageIfAvailable { try parse(rawBuffer: UnsafeRawBufferPointer($0)) }
        return try inPlace ?? parse(Data(bytes))
    }

    /// Parses strict UTF-8 JSON from bytes read only during the call (the other `parse` functions come here). Throws
    /// `JSONValueError`.
    public static func parse(rawBuffer: UnsafeRawBufferPointer) throws -> JSONValue {
        var parser = _JSONParser(bytes: rawBuffer)
        return try parser.parseDocument()
    }

    /// For a reader of one known shape (the recorder, of every status event): hands each member of the document's
    /// object to `member` as the parser meets it — its key's bytes, and the parser at its value, which `member`
    /// reads (whole with `parseValue(depth: 1)`, or member by member with `forEachMember(depth: 2)` when it is an
    /// object) — without building the object. True when the document was one object, every key was plain (ASCII,
    /// no escape) and `member` took every member; false as soon as one of these fails; and throws, as `parse`
    /// would, for JSON that is not well formed. A caller that gets false or an error reads the document again with
    /// `parse`.
    static func forEachMember(
        in bytes: UnsafeRawBufferPointer, _ member: (_ key: UnsafeRawBufferPointer, _ value: inout _JSONParser) throws -> Bool
    ) throws -> Bool {
        var parser = _JSONParser(bytes: bytes)
        parser.skipWhitespace()
        // The document's object is at depth 1, as `parseObject` parses it.
        guard try parser.forEachMember(depth: 1, member) else { return false }
        parser.skipWhitespace()
        return parser.index == bytes.count
    }
}

/// An object of a few members of known names, read member by member with no dictionary: each value kept in
/// the place of its name. Any other key, or one given twice, and the reading is not taken (the reader reads the
/// object again from a tree), so whatever it takes is what the tree holds. Not generic, so that nothing in it
/// asks the runtime for a type's metadata.
struct KnownMembers {
    /// The names, each in its place.
    private let names: [StaticString]
    private var values: [JSONValue?]

    init(names: [StaticString]) {
        self.names = names
        values = Array(repeating: nil, count: names.count)
    }

    /// The value of the member named `names[place]`, if the object had it.
    subscript(place: Int) -> JSONValue? { values[place] }

    /// Reads the object at `parser` (at `depth`, as `parseObject` counts), in place of what was read before; false
    /// when it is not an object, or has a key that is not plain, not one of the names or given twice.
    mutating func read(from parser: inout _JSONParser, depth: Int) throws -> Bool {
        for place in values.indices { values[place] = nil }
        return try parser.forEachMember(depth: depth) { key, parser in
            guard let place = Self.place(of: key, in: names), values[place] == nil else { return false }
            values[place] = try parser.parseValue(depth: depth)
            return true
        }
    }

    /// Reads the document in `bytes`, which must be one such object (whitespace around it aside), in place of what
    /// was read before; false when it is not, and throws, as `JSONValue.parse` would, for JSON that is not well
    /// formed.
    mutating func readDocument(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        var parser = _JSONParser(bytes: bytes)
        parser.skipWhitespace()
        // The document's object is at depth 1, as `parseObject` parses it.
        guard try read(from: &parser, depth: 1) else { return false }
        parser.skipWhitespace()
        return parser.index == bytes.count
    }

    /// The place of the name whose bytes `key` holds, if any.
    static func place(of key: UnsafeRawBufferPointer, in names: [StaticString]) -> Int? {
        guard let start = key.baseAddress, !key.isEmpty else { return nil }
        for (place, name) in names.enumerated()
        where name.utf8CodeUnitCount == key.count && memcmp(name.utf8Start, start, key.count) == 0 {
            return place
        }
        return nil
    }

    /// `name` as a dictionary of the tree keys it.
    static func key(_ name: StaticString) -> String { name.withUTF8Buffer { String(decoding: $0, as: UTF8.self) } }
}

struct _JSONParser {
    let bytes: UnsafeRawBufferPointer
    var index = 0
    /// The members of the objects being parsed, innermost last: an object's dictionary is made once its
    /// members are counted, at the size that holds them, instead of grown (and every key hashed again) as they come.
    var members: [(key: String, offset: Int, value: JSONValue)] = []

    init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    // MARK: Errors

    func error(_ kind: JSONValueError.Kind, _ message: String, at offset: Int? = nil) -> JSONValueError {
        JSONValueError(kind: kind, message: message, offset: offset ?? index)
    }

    func unexpected(_ expecting: String) -> JSONValueError {
        guard index < bytes.count else {
            return error(.unexpectedEndOfInput, "unexpected end of input, expected \(expecting)")
        }
        return error(.unexpectedCharacter, "unexpected \(describeByte(bytes[index])), expected \(expecting)")
    }

    func describeByte(_ byte: UInt8) -> String {
        if byte >= 0x20 && byte < 0x7F {
            return "character '\(Character(Unicode.Scalar(byte)))'"
        }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x\(hex.count == 1 ? "0" + hex : hex)"
    }

    // MARK: Structure

    mutating func parseDocument() throws -> JSONValue {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if index < bytes.count {
            throw error(.trailingData, "unexpected \(describeByte(bytes[index])) after the JSON value")
        }
        return value
    }

    @inline(__always)
    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func parseValue(depth: Int) throws -> JSONValue {
        guard index < bytes.count else { throw unexpected("a value") }
        switch bytes[index] {
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "t"):
            try parseLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try parseLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try parseLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw unexpected("a value")
        }
    }

    mutating func parseLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        let pointer = literal.utf8Start
        for offset in 0..<count {
            guard index < bytes.count else {
                throw error(.unexpectedEndOfInput, "unexpected end of input in '\(literal)'")
            }
            guard bytes[index] == pointer[offset] else {
                throw error(.unexpectedCharacter, "unexpected \(describeByte(bytes[index])), expected '\(literal)'")
            }
            index += 1
        }
    }

    mutating func checkDepth(_ depth: Int) throws {
        if depth > JSONValue.maximumDepth {
            throw error(.depthLimitExceeded, "arrays and objects are nested more than \(JSONValue.maximumDepth) deep")
        }
    }

    mutating func parseArray(depth: Int) throws -> JSONValue {
        try checkDepth(depth)
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw unexpected("',' or ']'") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw unexpected("',' or ']'")
            }
        }
    }

    mutating func parseObject(depth: Int) throws -> JSONValue {
        try checkDepth(depth)
        index += 1  // {
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        let first = members.count
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw unexpected("a string key")
            }
            let keyOffset = index
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw unexpected("':'") }
            index += 1
            skipWhitespace()
            members.append((key, keyOffset, try parseValue(depth: depth)))
            skipWhitespace()
            guard index < bytes.count else { throw unexpected("',' or '}'") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(try takeMembers(from: first))
            default: throw unexpected("',' or '}'")
            }
        }
    }

    /// The object at `index`, nested at `depth` as `parseObject(depth:)` counts, member by
    /// member: each member's key (plain ASCII, no escape) and the parser at its value, which `member` reads (at
    /// `depth`, as `parseObject` reads its members' values). False when it is not an object, a key is not plain or
    /// `member` does not take one (the reading stops there); throws as `parseObject` would.
    mutating func forEachMember(depth: Int, _ member: (UnsafeRawBufferPointer, inout _JSONParser) throws -> Bool) throws -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return false }
        try checkDepth(depth)
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return true
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return false }
            let start = index + 1
            var end = plainRunEnd(from: start)
            while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != UInt8(ascii: "\\"), bytes[end] >= 0x20,
                bytes[end] < 0x80
            {
                end += 1
            }
            guard end < bytes.count, bytes[end] == UInt8(ascii: "\"") else { return false }
            index = end + 1
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
            index += 1
            skipWhitespace()
            guard try member(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), &self) else { return false }
            skipWhitespace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return true
            default: return false
            }
        }
    }

    /// The array at `index`, nested at `depth` as `parseArray(depth:)` counts, element by element: the parser at
    /// each element, which `element` reads (at `depth`, as `parseArray` reads its elements). False when it is not
    /// an array or `element` does not take one; throws as `parseArray` would.
    mutating func forEachElement(depth: Int, _ element: (inout _JSONParser) throws -> Bool) throws -> Bool {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "[") else { return false }
        try checkDepth(depth)
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return true
        }
        while true {
            skipWhitespace()
            guard try element(&self) else { return false }
            skipWhitespace()
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return true
            default: return false
            }
        }
    }

    /// The byte the value at `index` starts with, if any.
    var nextByte: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// The members from `first` on, as one object's dictionary; a key given twice is an error.
    mutating func takeMembers(from first: Int) throws -> [String: JSONValue] {
        var object = [String: JSONValue](minimumCapacity: members.count - first)
        for member in members[first...] where object.updateValue(member.value, forKey: member.key) != nil {
            throw JSONValueError(
                kind: .duplicateKey, message: "the key \"\(member.key.escapingControlCharacters)\" appears twice in one object",
                offset: member.offset)
        }
        members.removeSubrange(first...)
        return object
    }

    // MARK: Strings

    /// Where the run of plain string bytes (ASCII, not a control character, a quote or a backslash) from `start`
    /// ends, looked at eight bytes at a time: the first word holding another byte is left to the caller, which
    /// reads on byte by byte from the index returned.
    func plainRunEnd(from start: Int) -> Int {
        var end = start
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while end + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: end, as: UInt64.self)
            // Whether any byte is zero after an exclusive or, or is under 0x20: exact for "any", as each byte's high
            // bit is set only by a borrow from a byte that is itself zero (or under), never by a neighbour alone.
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let special =
                ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash) | ((word &- ones &* 0x20) & ~word) | word
            if special & highs != 0 { break }
            end += 8
        }
        return end
    }

    /// At the opening quote; returns after the closing quote.
    mutating func parseString() throws -> String {
        index += 1
        let start = index
        index = plainRunEnd(from: start)
        // Fast path: no escapes, so the string is a slice of the input.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let string = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return string
            } else if byte == UInt8(ascii: "\\") {
                return try parseEscapedString(start: start)
            } else if byte < 0x20 {
                throw controlCharacterError(byte)
            } else if byte < 0x80 {
                index += 1
            } else {
                try skipUTF8Sequence()
            }
        }
        throw error(.unexpectedEndOfInput, "unexpected end of input in a string that starts", at: start - 1)
    }

    func controlCharacterError(_ byte: UInt8) -> JSONValueError {
        error(.controlCharacterInString, "unescaped control character \(describeByte(byte)) in a string")
    }

    /// Continues `parseString` from the first backslash, building the string in a buffer.
    mutating func parseEscapedString(start: Int) throws -> String {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(index - start + 16)
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: buffer, as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                try parseEscape(into: &buffer)
            } else if byte < 0x20 {
                throw controlCharacterError(byte)
            } else if byte < 0x80 {
                buffer.append(byte)
                index += 1
            } else {
                let sequenceStart = index
                try skipUTF8Sequence()
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[sequenceStart..<index]))
            }
        }
        throw error(.unexpectedEndOfInput, "unexpected end of input in a string that starts", at: start - 1)
    }

    /// At a backslash: appends the escaped character's UTF-8.
    mutating func parseEscape(into buffer: inout [UInt8]) throws {
        let escapeStart = index
        index += 1
        guard index < bytes.count else {
            throw error(.unexpectedEndOfInput, "unexpected end of input in an escape sequence", at: escapeStart)
        }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            let unit = try parseHex4(escapeStart: escapeStart)
            let scalarValue: UInt32
            switch unit {
            case 0xD800...0xDBFF:
                // A high surrogate must be followed by an escaped low surrogate.
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                    throw error(.invalidEscape, "high surrogate \\u\(hex4(unit)) is not followed by a low surrogate", at: escapeStart)
                }
                let lowStart = index
                index += 2
                let low = try parseHex4(escapeStart: lowStart)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error(
                        .invalidEscape, "high surrogate \\u\(hex4(unit)) is followed by \\u\(hex4(low)), not a low surrogate", at: escapeStart)
                }
                scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
            case 0xDC00...0xDFFF:
                throw error(.invalidEscape, "lone low surrogate \\u\(hex4(unit))", at: escapeStart)
            default:
                scalarValue = UInt32(unit)
            }
            let scalar = Unicode.Scalar(scalarValue)!
            buffer.append(contentsOf: UTF8.encode(scalar)!)
        default:
            index -= 1
            throw error(.invalidEscape, "invalid escape sequence '\\\(describeEscapeByte(byte))' in a string", at: escapeStart)
        }
    }

    func describeEscapeByte(_ byte: UInt8) -> String {
        byte >= 0x20 && byte < 0x7F ? String(Character(Unicode.Scalar(byte))) : describeByte(byte)
    }

    func hex4(_ value: UInt16) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - hex.count) + hex
    }

    mutating func parseHex4(escapeStart: Int) throws -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard index < bytes.count else {
                throw error(.unexpectedEndOfInput, "unexpected end of input in a \\u escape", at: escapeStart)
            }
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default:
                throw error(.invalidEscape, "\\u escape needs four hex digits, found \(describeByte(byte))", at: escapeStart)
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    /// At a byte >= 0x80: checks one well-formed UTF-8 sequence (no overlong
    /// forms, no surrogates, nothing above U+10FFFF) and steps over it.
    mutating func skipUTF8Sequence() throws {
        let lead = bytes[index]
        let length: Int
        var lowerBound: UInt8 = 0x80
        var upperBound: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            lowerBound = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            upperBound = 0x9F
        case 0xF0:
            length = 4
            lowerBound = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            upperBound = 0x8F
        default:
            throw error(.invalidUTF8, "invalid UTF-8: \(describeByte(lead)) cannot start a character")
        }
        guard index + length <= bytes.count else {
            // Check what is there so the message is about the actual problem.
            for offset in 1..<(bytes.count - index) {
                let byte = bytes[index + offset]
                let low = offset == 1 ? lowerBound : 0x80
                let high = offset == 1 ? upperBound : 0xBF
                if byte < low || byte > high {
                    throw error(.invalidUTF8, "invalid UTF-8: \(describeByte(byte)) cannot continue the character", at: index + offset)
                }
            }
            throw error(.unexpectedEndOfInput, "unexpected end of input in a UTF-8 sequence")
        }
        let second = bytes[index + 1]
        guard second >= lowerBound && second <= upperBound else {
            throw error(.invalidUTF8, "invalid UTF-8: \(describeByte(second)) cannot continue the character", at: index + 1)
        }
        var offset = 2
        while offset < length {
            let byte = bytes[index + offset]
            guard byte & 0xC0 == 0x80 else {
                throw error(.invalidUTF8, "invalid UTF-8: \(describeByte(byte)) cannot continue the character", at: index + offset)
            }
            offset += 1
        }
        index += length
    }

    // MARK: Numbers

    /// 10^0 through 10^22: the powers of ten a Double holds exactly.
    static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
        1e21, 1e22,
    ]

    /// 10^0 through 10^19: the powers of ten a UInt64 holds.
    static let integerPowersOfTen: [UInt64] = (0...19).map { power in (0..<power).reduce(1) { value, _ in value * 10 } }

    /// `numerator` / 10^`exponent` (`exponent` at most 19, so that both fit in 64 bits) rounded to the nearest Double,
    /// ties to even, as reading its text does: the quotient is taken to at least 63 bits in 128-bit integers, its bits
    /// past the 53 a Double keeps decide the rounding, and a remainder breaks what would otherwise be a tie.
    static func nearestDouble(to numerator: UInt64, overPowerOfTen exponent: Int) -> Double {
        guard numerator != 0 else { return 0 }
        let divisor = integerPowersOfTen[exponent]
        // The numerator shifted up to just under 2^127: over a divisor under 2^64, a quotient of over 2^62.
        let shift = 63 + numerator.leadingZeroBitCount
        let (quotient, remainder) = (UInt128(numerator) << shift).quotientAndRemainder(dividingBy: UInt128(divisor))
        let dropped = (128 - quotient.leadingZeroBitCount) - 53
        var significand = UInt64(truncatingIfNeeded: quotient >> dropped)
        let rest = quotient & ((1 << dropped) - 1)
        let half = UInt128(1) << (dropped - 1)
        if rest > half || (rest == half && (remainder != 0 || significand & 1 == 1)) {
            significand += 1  // at most 2^53, still exact in a Double
        }
        return Double(sign: .plus, exponent: dropped - shift, significand: Double(significand))
    }

    mutating func parseNumber() throws -> Double {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        // Integer part, accumulated for the common exact case.
        var integer: UInt64 = 0
        var digitCount = 0
        guard index < bytes.count, isDigit(bytes[index]) else {
            throw numberError(start: start, "a digit")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            digitCount = 1
            if index < bytes.count, isDigit(bytes[index]) {
                throw error(.invalidNumber, "numbers cannot have leading zeros", at: start)
            }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                if digitCount < 19 { integer = integer &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0")) }
                digitCount += 1
                index += 1
            }
        }
        var isInteger = true
        // The digits after the point, accumulated into `integer` while all of them fit in 19 digits (a UInt64).
        var fractionDigits = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw numberError(start: start, "a digit after '.'")
            }
            while index < bytes.count, isDigit(bytes[index]) {
                if digitCount + fractionDigits < 19 { integer = integer &* 10 &+ UInt64(bytes[index] &- UInt8(ascii: "0")) }
                fractionDigits += 1
                index += 1
            }
        }
        var hasExponent = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            hasExponent = true
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw numberError(start: start, "a digit in the exponent")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger && digitCount <= 15 {
            // Exact in a Double; no text conversion needed.
            let magnitude = Double(integer)
            return negative ? -magnitude : magnitude
        }
        if !hasExponent, digitCount + fractionDigits <= 15, fractionDigits < Self.powersOfTen.count {
            // A decimal of at most 15 digits (a timestamp, say): its digits and 10^fractionDigits are both exact in a
            // Double, so one division rounds as correctly as reading the text does (Clinger's fast path).
            let magnitude = Double(integer) / Self.powersOfTen[fractionDigits]
            return negative ? -magnitude : magnitude
        }
        if !hasExponent, digitCount + fractionDigits <= 19 {
            // Up to 19 digits (a clock's timestamp has 16 or 17): the quotient of two integers, rounded exactly.
            let magnitude = Self.nearestDouble(to: integer, overPowerOfTen: fractionDigits)
            return negative ? -magnitude : magnitude
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let number = Double(text), number.isFinite else {
            throw error(.invalidNumber, "number \(text) is out of range", at: start)
        }
        return number
    }

    func numberError(start: Int, _ expecting: String) -> JSONValueError {
        guard index < bytes.count else {
            return error(.unexpectedEndOfInput, "unexpected end of input in a number, expected \(expecting)")
        }
        return error(.invalidNumber, "invalid number: unexpected \(describeByte(bytes[index])), expected \(expecting)")
    }

    @inline(__always)
    func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
