import Foundation

/// Decodes `Decodable` types straight from a `JSONValue` tree. With `lenient`
/// — for the command line's values, which all arrive as strings, and only
/// there —
///
/// - a string where an array is expected is split on commas (parts trimmed,
///   empty parts dropped): `"Alice, Bob"` → `["Alice", "Bob"]`;
/// - a string where a number is expected is parsed: `"3"` → `3`;
/// - a string where a boolean is expected may be `true`/`false`/`yes`/`no`/`1`/`0`
///   (any case), and the numbers `1` and `0` are accepted too;
/// - a number or boolean where a string is expected is rendered with `displayString`.
///
/// Integers must be whole and in range. A missing key and `null` both count as
/// absent for optionals (`decodeIfPresent`, `contains`). Like `JSONDecoder`'s
/// defaults, `URL` decodes from a string, `Data` from base64 and `Decimal` from
/// a number. Errors are `DecodingError`s whose `debugDescription` names the
/// parameter, e.g. `expected an integer for 'quantity', found the string "lots"`.
public struct JSONValueDecoder: Sendable {
    /// The command-line conversions below (off by default: on the wire, a
    /// value is of the type the field declares, or the field is refused).
    public var lenient: Bool
    /// What the decoded types' `init(from:)` find in `decoder.userInfo`.
    public var userInfo: [CodingUserInfoKey: any Sendable]

    /// A decoder, strict unless `lenient`, that hands the decoded types `userInfo` (empty by default).
    public init(lenient: Bool = false, userInfo: [CodingUserInfoKey: any Sendable] = [:]) {
        self.lenient = lenient
        self.userInfo = userInfo
    }

    /// The settings of the decode under way, seen by the static helpers.
    @TaskLocal static var current = JSONValueDecoder()

    /// Decodes a `T` from `value`; where it does not fit, throws a `DecodingError` that names the parameter.
    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        // A decode of its own inside the pipeline's decode of an intent (a custom `init(from:)`'s) reads its own
        // tree: it is not handed the intent's declarations and parameters.
        if ParameterDecoding.current != nil {
            return try ParameterDecoding.$current.withValue(nil) { try decodeTree(T.self, from: value) }
        }
        return try decodeTree(T.self, from: value)
    }

    /// `decode` with whatever intent decode is under way: the pipeline's own entry.
    func decodeTree<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try Self.$current.withValue(self) {
            try _JSONValueUnbox.decodable(value, as: T.self, codingPath: [])
        }
    }
}

// MARK: - Decoder

/// The `Decoder` for one value of the tree; also its own single-value container.
final class _JSONValueTreeDecoder: Decoder, SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    init(value: JSONValue, codingPath: [any CodingKey]) {
        self.value = value
        self.codingPath = codingPath
    }

    var userInfo: [CodingUserInfoKey: Any] { JSONValueDecoder.current.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try _JSONValueUnbox.keyedContainer(value, keyedBy: Key.self, codingPath: codingPath)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try _JSONValueUnbox.unkeyedContainer(value, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        self
    }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool { value.isNull }

    func decode(_ type: Bool.Type) throws -> Bool { try _JSONValueUnbox.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try _JSONValueUnbox.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try _JSONValueUnbox.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try _JSONValueUnbox.float(value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try _JSONValueUnbox.integer(value, as: Int.self, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try _JSONValueUnbox.integer(value, as: Int8.self, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try _JSONValueUnbox.integer(value, as: Int16.self, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try _JSONValueUnbox.integer(value, as: Int32.self, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try _JSONValueUnbox.integer(value, as: Int64.self, codingPath) }
    func decode(_ type: Int128.Type) throws -> Int128 { try _JSONValueUnbox.integer(value, as: Int128.self, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try _JSONValueUnbox.integer(value, as: UInt.self, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try _JSONValueUnbox.integer(value, as: UInt8.self, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try _JSONValueUnbox.integer(value, as: UInt16.self, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try _JSONValueUnbox.integer(value, as: UInt32.self, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try _JSONValueUnbox.integer(value, as: UInt64.self, codingPath) }
    func decode(_ type: UInt128.Type) throws -> UInt128 { try _JSONValueUnbox.integer(value, as: UInt128.self, codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        if _JSONValueUnbox.isSpecial(T.self, value) { return try _JSONValueUnbox.special(value, as: T.self, codingPath) }
        return try T(from: self)
    }
}

// MARK: - Coding keys

struct _JSONValueCodingKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    /// An unkeyed container's position, shown as `[n]` in messages.
    let isIndex: Bool

    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
        self.isIndex = false
    }

    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
        self.isIndex = false
    }

    init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
        self.isIndex = true
    }

    static let `super` = _JSONValueCodingKey(stringValue: "super")
}

// MARK: - Keyed container

struct _JSONValueKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] {
        object.keys.compactMap { Key(stringValue: $0) }
    }

    /// Present and not `null`.
    func contains(_ key: Key) -> Bool {
        guard let value = object[key.stringValue] else { return false }
        return !value.isNull
    }

    /// `true` for `null` and for a missing key.
    func decodeNil(forKey key: Key) throws -> Bool {
        object[key.stringValue]?.isNull ?? true
    }

    @inline(__always)
    private func required(_ key: Key) throws -> JSONValue {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "missing required value for '\(_JSONValueUnbox.describe(codingPath + [key]))'"))
        }
        return value
    }

    @inline(__always)
    private func present(_ key: Key) -> JSONValue? {
        guard let value = object[key.stringValue], !value.isNull else { return nil }
        return value
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try _JSONValueUnbox.bool(required(key), codingPath + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try _JSONValueUnbox.string(required(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try _JSONValueUnbox.double(required(key), codingPath + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try _JSONValueUnbox.float(required(key), codingPath + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: Int128.Type, forKey key: Key) throws -> Int128 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }
    func decode(_ type: UInt128.Type, forKey key: Key) throws -> UInt128 { try integer(key) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try _JSONValueUnbox.decodable(required(key), as: T.self, codingPath: codingPath + [key])
    }

    @inline(__always)
    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try _JSONValueUnbox.integer(required(key), as: T.self, codingPath + [key])
    }

    // One dictionary lookup instead of the default `contains` + `decodeNil` + `decode`.

    /// Unboxes the key's value when present; its path is made only when an error needs it.
    @inline(__always)
    private func ifPresent<T>(_ key: Key, _ unbox: (JSONValue, () -> [any CodingKey]) throws -> T) throws -> T? {
        guard let value = present(key) else { return nil }
        return try unbox(value) { codingPath + [key] }
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try ifPresent(key) { try _JSONValueUnbox.bool($0, $1()) } }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try ifPresent(key) { try _JSONValueUnbox.string($0, $1()) } }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try ifPresent(key) { try _JSONValueUnbox.double($0, $1()) } }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try ifPresent(key) { try _JSONValueUnbox.float($0, $1()) } }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: Int128.Type, forKey key: Key) throws -> Int128? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try integerIfPresent(key) }
    func decodeIfPresent(_ type: UInt128.Type, forKey key: Key) throws -> UInt128? { try integerIfPresent(key) }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = present(key) else { return nil }
        return try _JSONValueUnbox.decodable(value, as: T.self, codingPath: codingPath + [key])
    }

    @inline(__always)
    private func integerIfPresent<T: FixedWidthInteger>(_ key: Key) throws -> T? {
        guard let value = present(key) else { return nil }
        return try _JSONValueUnbox.integer(value, as: T.self, codingPath + [key])
    }

    // MARK: Nesting

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try _JSONValueUnbox.keyedContainer(required(key), keyedBy: NestedKey.self, codingPath: codingPath + [key])
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try _JSONValueUnbox.unkeyedContainer(required(key), codingPath: codingPath + [key])
    }

    func superDecoder() throws -> any Decoder {
        _JSONValueTreeDecoder(
            value: object[_JSONValueCodingKey.super.stringValue] ?? .null,
            codingPath: codingPath + [_JSONValueCodingKey.super])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        _JSONValueTreeDecoder(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

// MARK: - Unkeyed container

struct _JSONValueUnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private var elementPath: [any CodingKey] {
        codingPath + [_JSONValueCodingKey(index: currentIndex)]
    }

    @inline(__always)
    private func current<T>(_ type: T.Type) throws -> JSONValue {
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(
                T.self,
                DecodingError.Context(
                    codingPath: elementPath,
                    debugDescription: "expected \(_JSONValueUnbox.article(for: T.self)) for '\(_JSONValueUnbox.describe(elementPath))', "
                        + "but the array has only \(elements.count) element\(elements.count == 1 ? "" : "s")"))
        }
        return elements[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard case .null = try current(Never?.self) else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next(type) { try _JSONValueUnbox.bool($0, $1()) } }
    mutating func decode(_ type: String.Type) throws -> String { try next(type) { try _JSONValueUnbox.string($0, $1()) } }
    mutating func decode(_ type: Double.Type) throws -> Double { try next(type) { try _JSONValueUnbox.double($0, $1()) } }
    mutating func decode(_ type: Float.Type) throws -> Float { try next(type) { try _JSONValueUnbox.float($0, $1()) } }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: Int128.Type) throws -> Int128 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
    mutating func decode(_ type: UInt128.Type) throws -> UInt128 { try integer() }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try next(type) { try _JSONValueUnbox.decodable($0, as: T.self, codingPath: $1()) }
    }

    @inline(__always)
    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        try next(T.self) { try _JSONValueUnbox.integer($0, as: T.self, $1()) }
    }

    /// Unboxes the current element and moves past it; its path is made only when an error needs it.
    @inline(__always)
    private mutating func next<T>(_ type: T.Type, _ unbox: (JSONValue, () -> [any CodingKey]) throws -> T) throws -> T {
        let path = { [codingPath, currentIndex] in codingPath + [_JSONValueCodingKey(index: currentIndex)] }
        let result = try unbox(current(type), path)
        currentIndex += 1
        return result
    }

    // MARK: Nesting

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next(KeyedDecodingContainer<NestedKey>.self) { try _JSONValueUnbox.keyedContainer($0, keyedBy: NestedKey.self, codingPath: $1()) }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next((any UnkeyedDecodingContainer).self) { try _JSONValueUnbox.unkeyedContainer($0, codingPath: $1()) }
    }

    mutating func superDecoder() throws -> any Decoder {
        let decoder = _JSONValueTreeDecoder(value: try current((any Decoder).self), codingPath: elementPath)
        currentIndex += 1
        return decoder
    }
}

// MARK: - Conversions

/// The conversions from a `JSONValue` to each primitive (the lenient ones
/// only when the decode under way is lenient), with the errors.
@usableFromInline enum _JSONValueUnbox {
    // MARK: Containers

    static func keyedContainer<Key: CodingKey>(
        _ value: JSONValue, keyedBy: Key.Type, codingPath: [any CodingKey]
    ) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else {
            throw mismatch([String: JSONValue].self, "an object", value, codingPath)
        }
        return KeyedDecodingContainer(_JSONValueKeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    static func unkeyedContainer(_ value: JSONValue, codingPath: [any CodingKey]) throws -> any UnkeyedDecodingContainer {
        switch value {
        case .array(let elements):
            return _JSONValueUnkeyedContainer(elements: elements, codingPath: codingPath)
        case .string(let string) where JSONValueDecoder.current.lenient:
            return _JSONValueUnkeyedContainer(elements: splitList(string), codingPath: codingPath)
        default:
            throw mismatch([JSONValue].self, "an array", value, codingPath)
        }
    }

    /// `"Alice, Bob,"` → `["Alice", "Bob"]`.
    static func splitList(_ string: String) -> [JSONValue] {
        var elements: [JSONValue] = []
        for part in string.unicodeScalars.split(separator: ",", omittingEmptySubsequences: true) {
            let trimmed = trim(Substring(part))
            if !trimmed.isEmpty { elements.append(.string(String(trimmed))) }
        }
        return elements
    }

    /// Without leading and trailing white space (Unicode's definition).
    static func trim(_ text: Substring) -> Substring {
        let scalars = text.unicodeScalars
        var start = scalars.startIndex
        var end = scalars.endIndex
        while start < end, isWhitespace(scalars[start]) {
            start = scalars.index(after: start)
        }
        while start < end {
            let last = scalars.index(before: end)
            guard isWhitespace(scalars[last]) else { break }
            end = last
        }
        if start == scalars.startIndex && end == scalars.endIndex { return text }
        return Substring(scalars[start..<end])
    }

    @inline(__always)
    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            return scalar == " " || (0x09...0x0D).contains(scalar.value)
        }
        return scalar.properties.isWhitespace
    }

    // MARK: Values

    /// Types decoded as a whole rather than through their own `init(from:)`:
    /// `JSONValue` (taken as is) and the types `JSONEncoder` writes specially.
    /// `Data` only when it is not an array of bytes, which is left to `Data`'s own `init(from:)`.
    @inline(__always)
    static func isSpecial<T: Decodable>(_ type: T.Type, _ value: JSONValue) -> Bool {
        if T.self == Data.self, case .array = value { return false }
        return T.self == JSONValue.self || T.self == URL.self || T.self == Data.self || T.self == Decimal.self
    }

    /// A value of a type `isSpecial` names, for the value. Not an optional of `T`, whose metadata an unspecialized
    /// caller (the decode of every intent) would look up on each call.
    static func special<T: Decodable>(_ value: JSONValue, as type: T.Type, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> T {
        if T.self == URL.self { return try url(value, codingPath()) as! T }
        if T.self == Data.self { return try data(value, codingPath()) as! T }
        if T.self == Decimal.self { return try decimal(value, codingPath()) as! T }
        return value as! T
    }

    @inlinable @inline(__always)
    static func decodable<T: Decodable>(_ value: JSONValue, as type: T.Type, codingPath: @autoclosure () -> [any CodingKey]) throws
        -> T
    {
        // Common leaves of arrays and dictionaries, without a decoder per element.
        if T.self == String.self { return try string(value, codingPath()) as! T }
        if T.self == Int.self { return try integer(value, as: Int.self, codingPath()) as! T }
        if T.self == Double.self { return try double(value, codingPath()) as! T }
        if T.self == Bool.self { return try bool(value, codingPath()) as! T }
        // What most parameters say (a name, a list of names, either of them optional), read as `init(from:)` would
        // read them, without a decoder and its containers; any other shape goes through them, for their errors.
        if T.self == String?.self { return try (value == .null ? nil : string(value, codingPath())) as String? as! T }
        if T.self == [String].self || T.self == [String]?.self {
            if value == .null, T.self == [String]?.self { return (nil as [String]?) as! T }
            if let strings = plainStrings(value) { return T.self == [String].self ? strings as! T : (strings as [String]?) as! T }
        }
        return try decodedThroughTree(value, as: T.self, codingPath: codingPath())
    }

    /// Any other type: `JSONValue` and the types `JSONEncoder` writes specially, else through a decoder of the tree
    /// (for `decodable`, whose body is inlined into the modules that declare intents, where this decoder is not
    /// visible). The coding path is made only when it is used, as it was before the split.
    @usableFromInline static func decodedThroughTree<T: Decodable>(
        _ value: JSONValue, as type: T.Type, codingPath: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        if isSpecial(T.self, value) { return try special(value, as: T.self, codingPath()) }
        return try T(from: _JSONValueTreeDecoder(value: value, codingPath: codingPath()))
    }

    /// The strings of an array of strings only, as `[String]`'s `init(from:)` reads them; nil for anything else.
    @usableFromInline static func plainStrings(_ value: JSONValue) -> [String]? {
        guard case .array(let elements) = value else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let string) = element else { return nil }
            strings.append(string)
        }
        return strings
    }

    @usableFromInline static func bool(_ value: JSONValue, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Bool {
        switch value {
        case .bool(let bool):
            return bool
        case .string(let string) where JSONValueDecoder.current.lenient:
            switch trim(string[...]).lowercased() {
            case "true", "yes", "1": return true
            case "false", "no", "0": return false
            default: break
            }
        case .number(let number) where JSONValueDecoder.current.lenient:
            if number == 1 { return true }
            if number == 0 { return false }
        default:
            break
        }
        throw mismatch(Bool.self, "a boolean", value, codingPath())
    }

    @usableFromInline static func string(_ value: JSONValue, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> String {
        switch value {
        case .string(let string): return string
        case .number where JSONValueDecoder.current.lenient, .bool where JSONValueDecoder.current.lenient: return value.displayString
        default: throw mismatch(String.self, "a string", value, codingPath())
        }
    }

    @usableFromInline static func double(_ value: JSONValue, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch value {
        case .number(let number):
            return number
        case .string(let string) where JSONValueDecoder.current.lenient:
            if let number = Double(trim(string[...])) { return number }
        default:
            break
        }
        throw mismatch(Double.self, "a number", value, codingPath())
    }

    static func float(_ value: JSONValue, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Float {
        let number = try double(value, codingPath())
        guard !number.isFinite || abs(number) <= Double(Float.greatestFiniteMagnitude) else {
            let path = codingPath()
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path,
                    debugDescription: "expected a number that fits in Float\(forPath(path)), found \(found(value))"))
        }
        return Float(number)
    }

    @usableFromInline static func integer<T: FixedWidthInteger>(
        _ value: JSONValue, as type: T.Type, _ codingPath: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        let number: Double
        switch value {
        case .number(let double):
            if let integer = T(exactly: double) { return integer }
            number = double
        case .string(let string) where JSONValueDecoder.current.lenient:
            let text = trim(string[...])
            if let integer = T(text, radix: 10) { return integer }
            // "3.0" and numbers out of range get a precise message below.
            guard let double = Double(text), double.isFinite else {
                throw mismatch(T.self, "an integer", value, codingPath())
            }
            if let integer = T(exactly: double) { return integer }
            number = double
        default:
            throw mismatch(T.self, "an integer", value, codingPath())
        }
        let path = codingPath()
        let expected =
            number.rounded(.towardZero) == number
            ? "an integer from \(T.min) to \(T.max)"
            : "an integer"
        throw DecodingError.dataCorrupted(
            DecodingError.Context(
                codingPath: path, debugDescription: "expected \(expected)\(forPath(path)), found \(found(value))"))
    }

    static func url(_ value: JSONValue, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> URL {
        guard case .string(let string) = value else { throw mismatch(URL.self, "a URL", value, codingPath()) }
        guard let url = URL(string: string) else {
            let path = codingPath()
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path, debugDescription: "expected a URL\(forPath(path)), found \(found(value))"))
        }
        return url
    }

    /// Base64 like `JSONEncoder`'s default (an array of bytes is left to `Data`'s own `init(from:)`: see `isSpecial`).
    static func data(_ value: JSONValue, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Data {
        switch value {
        case .string(let string):
            if let data = Data(base64Encoded: string) { return data }
            let path = codingPath()
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path, debugDescription: "expected base64 data\(forPath(path)), found \(found(value))"))
        default:
            throw mismatch(Data.self, "base64 data", value, codingPath())
        }
    }

    static func decimal(_ value: JSONValue, _ codingPath: @autoclosure () -> [any CodingKey]) throws -> Decimal {
        switch value {
        case .number(let number) where number.isFinite:
            // Through the shortest text form, so 0.1 stays 0.1.
            if let decimal = Decimal(string: JSONValue.formatNumber(number), locale: nil) { return decimal }
        case .string(let string):
            let text = trim(string[...])
            if !text.isEmpty, let decimal = Decimal(string: String(text), locale: nil) { return decimal }
        default:
            break
        }
        throw mismatch(Decimal.self, "a number", value, codingPath())
    }

    // MARK: Errors

    static func mismatch(_ type: Any.Type, _ expected: String, _ value: JSONValue, _ codingPath: [any CodingKey]) -> DecodingError {
        let context = DecodingError.Context(
            codingPath: codingPath, debugDescription: "expected \(expected)\(forPath(codingPath)), found \(found(value))")
        if case .null = value {
            return DecodingError.valueNotFound(type, context)
        }
        return DecodingError.typeMismatch(type, context)
    }

    /// ` for 'items[0].quantity'`, or nothing at the top level.
    static func forPath(_ codingPath: [any CodingKey]) -> String {
        codingPath.isEmpty ? "" : " for '\(describe(codingPath))'"
    }

    /// `items[0].quantity`
    static func describe(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let key = key as? _JSONValueCodingKey, key.isIndex {
                text += "[\(key.intValue!)]"
            } else {
                if !text.isEmpty { text += "." }
                text += key.stringValue
            }
        }
        return text
    }

    /// `the string "lots"`, `the number 3.5`, `an object`…
    static func found(_ value: JSONValue) -> String {
        switch value {
        case .null:
            return "null"
        case .bool(let bool):
            return "the boolean \(bool)"
        case .number:
            return "the number \(value.displayString)"
        case .string(let string):
            let shown = string.count > 60 ? String(string.prefix(57)) + "..." : string
            return "the string \(JSONValue.string(shown).jsonString)"
        case .array(let elements):
            return elements.isEmpty ? "an empty array" : "an array of \(elements.count) element\(elements.count == 1 ? "" : "s")"
        case .object:
            return "an object"
        }
    }

    /// What a type is called in "expected … for 'x'".
    static func article(for type: Any.Type) -> String {
        switch type {
        case is Bool.Type: return "a boolean"
        case is String.Type: return "a string"
        case is Double.Type, is Float.Type, is Decimal.Type: return "a number"
        case is any FixedWidthInteger.Type: return "an integer"
        default: return "a value"
        }
    }
}
