import Foundation

/// Encodes `Encodable` types into a `JSONValue` tree, which `serialized()`
/// writes: the encoding half of IntentQueue's one JSON stack (a typed intent's
/// parameters, a user's payloads). `nil` optionals are left out, as
/// `JSONEncoder` leaves them; `Date` is seconds since 1970, `Data` base64,
/// `URL` its string; a number that is not finite is refused.
public struct JSONValueEncoder: Sendable {
    /// An encoder; it has no settings.
    public init() {}

    /// The value as a JSON tree. Throws `EncodingError.invalidValue` for a number that is not finite.
    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        try _JSONValueBox.box(value, codingPath: [])
    }
}

/// Where an encoding writes: a slot filled once by a single value, or grown by a container.
class _JSONValueSlot {
    var value: JSONValue = .null
}

enum _JSONValueBox {
    static func box<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> JSONValue {
        switch value {
        case let value as JSONValue: return value
        case let date as Date: return .number(date.timeIntervalSince1970)
        case let data as Data: return .string(data.base64EncodedString())
        case let url as URL: return .string(url.absoluteString)
        case let decimal as Decimal: return try number(NSDecimalNumber(decimal: decimal).doubleValue, codingPath)
        default:
            let slot = _JSONValueSlot()
            try value.encode(to: _JSONValueTreeEncoder(slot: slot, codingPath: codingPath))
            return slot.value
        }
    }

    static func number(_ value: Double, _ codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "\(value) is not a JSON number"))
        }
        return .number(value)
    }
}

struct _JSONValueTreeEncoder: Encoder {
    let slot: _JSONValueSlot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if case .object = slot.value {} else { slot.value = .object([:]) }
        return KeyedEncodingContainer(_JSONValueKeyedEncoder<Key>(slot: slot, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if case .array = slot.value {} else { slot.value = .array([]) }
        return _JSONValueUnkeyedEncoder(slot: slot, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        _JSONValueSingleEncoder(slot: slot, codingPath: codingPath)
    }
}

struct _JSONValueSingleEncoder: SingleValueEncodingContainer {
    let slot: _JSONValueSlot
    let codingPath: [any CodingKey]

    mutating func encodeNil() throws { slot.value = .null }
    mutating func encode(_ value: Bool) throws { slot.value = .bool(value) }
    mutating func encode(_ value: String) throws { slot.value = .string(value) }
    mutating func encode(_ value: Double) throws { slot.value = try _JSONValueBox.number(value, codingPath) }
    mutating func encode(_ value: Float) throws { slot.value = try _JSONValueBox.number(Double(value), codingPath) }
    mutating func encode(_ value: Int) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: Int8) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: Int16) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: Int32) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: Int64) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: UInt) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: UInt8) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: UInt16) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: UInt32) throws { slot.value = .number(Double(value)) }
    mutating func encode(_ value: UInt64) throws { slot.value = .number(Double(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws { slot.value = try _JSONValueBox.box(value, codingPath: codingPath) }
}

struct _JSONValueKeyedEncoder<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let slot: _JSONValueSlot
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue, _ key: Key) {
        guard case .object(var object) = slot.value else { return }
        slot.value = .null  // keeps the dictionary uniquely referenced while it changes
        object[key.stringValue] = value
        slot.value = .object(object)
    }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(try _JSONValueBox.number(value, codingPath + [key]), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.number(Double(value)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        set(try _JSONValueBox.box(value, codingPath: codingPath + [key]), key)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        let member = _ChildSlot(parent: slot, place: .member(key.stringValue), initial: .object([:]))
        return KeyedEncodingContainer(_JSONValueKeyedEncoder<NestedKey>(slot: member, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        _JSONValueUnkeyedEncoder(slot: _ChildSlot(parent: slot, place: .member(key.stringValue), initial: .array([])), codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(forKey: Key(stringValue: "super")!) }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        _JSONValueTreeEncoder(slot: _ChildSlot(parent: slot, place: .member(key.stringValue), initial: .null), codingPath: codingPath + [key])
    }
}

/// A nested container's own slot: a member of its parent object, or an
/// element of its parent array (appended when made), written back into the
/// parent on every change.
final class _ChildSlot: _JSONValueSlot {
    enum Place {
        case member(String)
        case element(Int)
    }

    let parent: _JSONValueSlot
    let place: Place

    init(parent: _JSONValueSlot, place: Place, initial: JSONValue) {
        self.parent = parent
        self.place = place
        super.init()
        if case .element = place, case .array(var array) = parent.value {
            array.append(initial)
            parent.value = .array(array)
        }
        value = initial
    }

    override var value: JSONValue {
        didSet {
            switch (place, parent.value) {
            case (.member(let key), .object(var object)):
                object[key] = value
                parent.value = .object(object)
            case (.element(let index), .array(var array)) where array.indices.contains(index):
                array[index] = value
                parent.value = .array(array)
            default:
                break
            }
        }
    }
}

struct _JSONValueUnkeyedEncoder: UnkeyedEncodingContainer {
    let slot: _JSONValueSlot
    let codingPath: [any CodingKey]

    var count: Int {
        if case .array(let array) = slot.value { return array.count }
        return 0
    }

    private struct Index: CodingKey {
        var intValue: Int?
        var stringValue: String { "\(intValue ?? 0)" }
        init(_ index: Int) { intValue = index }
        init?(stringValue: String) { nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    private func append(_ value: JSONValue) {
        guard case .array(var array) = slot.value else { return }
        slot.value = .null
        array.append(value)
        slot.value = .array(array)
    }

    mutating func encodeNil() throws { append(.null) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try _JSONValueBox.number(value, codingPath + [Index(count)])) }
    mutating func encode(_ value: Int) throws { append(.number(Double(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        append(try _JSONValueBox.box(value, codingPath: codingPath + [Index(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        let element = _ChildSlot(parent: slot, place: .element(count), initial: .object([:]))
        return KeyedEncodingContainer(_JSONValueKeyedEncoder<NestedKey>(slot: element, codingPath: codingPath + [Index(count)]))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        _JSONValueUnkeyedEncoder(slot: _ChildSlot(parent: slot, place: .element(count), initial: .array([])), codingPath: codingPath + [Index(count)])
    }

    mutating func superEncoder() -> any Encoder {
        _JSONValueTreeEncoder(slot: _ChildSlot(parent: slot, place: .element(count), initial: .null), codingPath: codingPath + [Index(count)])
    }
}
