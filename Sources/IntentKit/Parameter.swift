import Synchronization

/// What resolving one parameter came to, typed (SiriKit's resolution results).
public enum ParameterResult<Value: Sendable>: Sendable {
    /// The parameter has this value.
    case success(Value)
    /// The user must say it, asked in these words.
    case needsValue(IntentDialog? = nil)
    /// Several values fit; the user must choose one of these.
    case disambiguation([ParameterOption<Value>], IntentDialog? = nil)
    /// This value fits, but the user must confirm it.
    case confirmationRequired(Value, IntentDialog? = nil)
    /// The parameter does not matter here.
    case notRequired
    /// The value cannot be used; the intent fails with `unsupportedParameter`.
    case unsupported(String)
}

/// One choice offered to the user: the value an answer gives back, and what people read.
public struct ParameterOption<Value: Sendable>: Sendable {
    /// The value an answer choosing this option gives back.
    public var value: Value
    /// What people read for it.
    public var title: String

    /// An option offering `value`, shown as `title`.
    public init(_ value: Value, title: String) {
        self.value = value
        self.title = title
    }
}

/// The type of a parameter: what arrives on the wire for it (`Spoken`: what
/// the user said), how that becomes a value, and how the value is shown.
///
/// Plain values (`String`, `Int`, `Double`, `Bool`, string enums) resolve to
/// themselves. A type the app must look up — a hairdresser named by the user —
/// implements `resolve(_:context:)` and finds what it needs in
/// `context.dependency(…)`.
public protocol ParameterValue: Sendable {
    /// What a submission carries for it.
    associatedtype Spoken: Codable & Sendable
    /// Turns what the user said into a value.
    static func resolve(_ spoken: Spoken, context: IntentContext) async throws -> ParameterResult<Self>
    /// What a submission would carry for this value (for a typed client).
    var spoken: Spoken { get }
    /// The value as the status shows and stores it.
    var displayValue: JSONValue { get }

    /// Resolves a whole parameter: one resolution, or one per element of a
    /// list. Provided; lists and optionals have their own.
    static func _resolveParameter(
        _ spoken: Spoken?, name: String, prompt: IntentDialog?, context: IntentContext
    ) async throws -> (resolutions: [ParameterResolution], value: Self?)
}

extension ParameterValue {
    /// One resolution, by `resolve(_:context:)`; nothing said needs a value, asked in `prompt`'s words.
    @inlinable public static func _resolveParameter(
        _ spoken: Spoken?, name: String, prompt: IntentDialog?, context: IntentContext
    ) async throws -> (resolutions: [ParameterResolution], value: Self?) {
        guard let spoken else {
            return ([ParameterResolution(name, .needsValue, prompt: prompt)], nil)
        }
        let (resolution, value) = ParameterRequest.resolution(of: try await resolve(spoken, context: context), name: name, index: nil, prompt: prompt)
        return ([resolution], value)
    }
}

extension ParameterValue where Spoken == Self {
    /// A value said as itself resolves to itself.
    public static func resolve(_ spoken: Self, context: IntentContext) async throws -> ParameterResult<Self> { .success(spoken) }
    /// The value itself.
    public var spoken: Self { self }
}

extension String: ParameterValue {
    /// The text as a JSON string.
    public var displayValue: JSONValue { .string(self) }
}

extension Int: ParameterValue {
    /// The integer as a JSON number.
    public var displayValue: JSONValue { .number(Double(self)) }
}

extension Double: ParameterValue {
    /// The number as a JSON number.
    public var displayValue: JSONValue { .number(self) }
}

extension Bool: ParameterValue {
    /// The boolean as JSON `true` or `false`.
    public var displayValue: JSONValue { .bool(self) }
}

/// A string enum whose cases are what the user may say (any case): anything
/// else is unsupported, naming the cases.
extension ParameterValue where Self: RawRepresentable & CaseIterable & Codable, RawValue == String, Spoken == String {
    /// The case whose raw value is what was said, in any case; anything else is unsupported, naming the cases.
    public static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<Self> {
        let wanted = spoken.lowercased()
        if let match = allCases.first(where: { $0.rawValue.lowercased() == wanted }) { return .success(match) }
        return .unsupported("'\(spoken)' is not one of \(allCases.map(\.rawValue).joined(separator: ", "))")
    }

    /// The case's raw value.
    public var spoken: String { rawValue }
    /// The case's raw value, as a JSON string.
    public var displayValue: JSONValue { .string(rawValue) }
}

/// A list, resolved element by element (`recipients[0]`, `recipients[1]`…);
/// an empty one needs a value.
extension Array: ParameterValue where Element: ParameterValue {
    /// What is said for each element, in order.
    public typealias Spoken = [Element.Spoken]

    /// Each element by its type: the list resolves when every element does, and needs a value otherwise.
    @inlinable public static func resolve(_ spoken: [Element.Spoken], context: IntentContext) async throws -> ParameterResult<[Element]> {
        var values: [Element] = []
        for item in spoken {
            guard case .success(let value) = try await Element.resolve(item, context: context) else { return .needsValue() }
            values.append(value)
        }
        return .success(values)
    }

    /// What a submission carries for each element, in order.
    public var spoken: [Element.Spoken] { map(\.spoken) }
    /// Each element's display value, as a JSON array.
    public var displayValue: JSONValue { .array(map(\.displayValue)) }

    /// One resolution per element (`recipients[0]`, `recipients[1]`…), with the value only when every element resolved. An
    /// absent or empty list needs a value; one longer than `IntentPipeline.maximumResolutions` fails with `outcomeTooLarge`.
    @inlinable public static func _resolveParameter(
        _ spoken: [Element.Spoken]?, name: String, prompt: IntentDialog?, context: IntentContext
    ) async throws -> (resolutions: [ParameterResolution], value: [Element]?) {
        guard let spoken, !spoken.isEmpty else {
            return ([ParameterResolution(name, .needsValue, prompt: prompt)], nil)
        }
        guard spoken.count <= IntentPipeline.maximumResolutions else {
            throw IntentFailure(
                code: FailureCode.outcomeTooLarge,
                message: "'\(name)' has \(spoken.count) values, over the limit of \(IntentPipeline.maximumResolutions) an intent may have")
        }
        var resolutions: [ParameterResolution] = []
        var values: [Element] = []
        // By index rather than `enumerated()`, whose sequence and iterator, generic over `Element.Spoken` here, would
        // each have their metadata looked up on every call.
        for index in spoken.indices {
            let (resolution, value) = ParameterRequest.resolution(
                of: try await Element.resolve(spoken[index], context: context), name: name, index: index, prompt: prompt)
            resolutions.append(resolution)
            if let value { values.append(value) }
        }
        return (resolutions, values.count == spoken.count ? values : nil)
    }
}

/// An optional parameter: absent (or `null`) is `notRequired`.
extension Optional: ParameterValue where Wrapped: ParameterValue {
    /// What is said for the wrapped type, or nothing.
    public typealias Spoken = Wrapped.Spoken?

    /// Nothing said resolves to nil; anything else resolves as the wrapped type resolves it.
    @inlinable public static func resolve(_ spoken: Wrapped.Spoken?, context: IntentContext) async throws -> ParameterResult<Wrapped?> {
        guard let spoken else { return .success(nil) }
        switch try await Wrapped.resolve(spoken, context: context) {
        case .success(let value): return .success(value)
        case .needsValue(let dialog): return .needsValue(dialog)
        case .disambiguation(let options, let dialog):
            return .disambiguation(options.map { ParameterOption(Optional($0.value), title: $0.title) }, dialog)
        case .confirmationRequired(let value, let dialog): return .confirmationRequired(value, dialog)
        case .notRequired: return .notRequired
        case .unsupported(let reason): return .unsupported(reason)
        }
    }

    /// What a submission carries for the wrapped value; nil for none.
    public var spoken: Wrapped.Spoken? { self?.spoken }
    /// The wrapped value's display value; `null` for none.
    public var displayValue: JSONValue { self?.displayValue ?? .null }

    /// Absent or `null` is `notRequired` and resolves to nil; a value is resolved as a parameter of the wrapped type.
    @inlinable public static func _resolveParameter(
        _ spoken: Wrapped.Spoken??, name: String, prompt: IntentDialog?, context: IntentContext
    ) async throws -> (resolutions: [ParameterResolution], value: Wrapped??) {
        guard let present = spoken ?? nil else { return ([ParameterResolution(name, .notRequired)], .some(nil)) }
        let (resolutions, value) = try await Wrapped._resolveParameter(present, name: name, prompt: prompt, context: context)
        return (resolutions, value.map { .some($0) })
    }
}

/// A parameter of an intent, declared with its type and rules (App Intents'
/// `@Parameter`): required unless its type is optional, asked in `prompt`'s
/// words when missing, checked against a range or chosen among the values a
/// query gives. After resolution, `handle` reads the resolved value.
///
/// ```swift
/// struct OrderSoup: Intent {
///     static let typeName = "OrderSoup"
///     @Parameter("Which soup would you like?", choices: { try await $0.dependency(Menu.self).soups() }) var soup: String
///     @Parameter("How many?", in: 1...20) var quantity: Int
/// }
/// ```
@propertyWrapper
public struct Parameter<Value: ParameterValue>: Sendable {
    /// What the user is asked when the value is missing or unclear.
    public let prompt: IntentDialog?
    @usableFromInline let check: (@Sendable (Value) -> String?)?
    @usableFromInline let choices: (@Sendable (IntentContext) async throws -> [String])?
    /// The parameter's name on the wire (its property's name), known once decoded.
    public internal(set) var name = ""
    @usableFromInline var spokenValue: Value.Spoken?
    /// The resolved value, in a box the pipeline fills while it resolves the
    /// intent it decoded (every copy of that intent sees it): one decode per
    /// delivery. Setting `resolved` puts it in a box of its own.
    @usableFromInline var storage = ResolvedValue()

    var resolved: Value? {
        get { storage.value as? Value }
        set { storage = ResolvedValue(newValue) }
    }

    /// The identity of the box its resolved value goes in.
    @usableFromInline var box: ObjectIdentifier { ObjectIdentifier(storage) }

    /// Sets `name`, for `read`: inlinable code may not use the internal setter.
    @usableFromInline mutating func setName(_ name: String) { self.name = name }

    /// Fills the box this parameter shares with the intent it was decoded in.
    @inlinable func resolveInPlace(_ value: Value) {
        storage.value = value
    }

    /// A parameter resolved by its type alone, asked in `prompt`'s words when it needs the user.
    @inlinable public init(_ prompt: IntentDialog? = nil) {
        self.prompt = prompt
        check = nil
        choices = nil
    }

    /// With a rule of the app's: `check` returns why a resolved value cannot
    /// be used (the parameter is then unsupported), or nil.
    public init(_ prompt: IntentDialog? = nil, check: @escaping @Sendable (Value) -> String?) {
        self.init(prompt: prompt, check: check, choices: nil)
    }

    @usableFromInline init(
        prompt: IntentDialog?, check: (@Sendable (Value) -> String?)?, choices: (@Sendable (IntentContext) async throws -> [String])?
    ) {
        self.prompt = prompt
        self.check = check
        self.choices = choices
    }

    /// The resolved value. Read it in `resolve`, `confirm` and `handle`, which
    /// see only resolved intents; set it to build an intent to submit.
    public var wrappedValue: Value {
        get {
            // Cast straight to `Value` when one is stored (only a `Value` ever is): an `Optional<Value>` on the
            // way would look its generic metadata up on every read.
            if let stored = storage.value { return stored as! Value }
            return unresolvedValue()
        }
        set { resolved = newValue }
    }

    /// Nothing stored: an optional parameter reads as nil, anything else was read too early. Apart from the
    /// getter, whose every call would otherwise look up `Optional<Value>`'s metadata for this path's local.
    @inline(never)
    private func unresolvedValue() -> Value {
        guard let resolved else {
            preconditionFailure("parameter '\(name)' was read before it was resolved (or set)")
        }
        return resolved
    }

    /// The parameter itself: for asking about it (`intent.$quantity.needsValue(…)`).
    public var projectedValue: Parameter<Value> { self }

    /// Resolves it: among its choices, or by its type; then against its range.
    @inlinable func resolve(context: IntentContext) async throws -> (resolutions: [ParameterResolution], value: Value?) {
        if let choices {
            // Only a `String` parameter is declared with choices.
            guard let said = spokenValue.map({ $0 as Any }) as? String, !said.trimmingWhitespace().isEmpty else {
                return ([ParameterResolution(name, .needsValue, prompt: prompt)], nil)
            }
            let (resolution, value) = ParameterRequest.resolution(
                of: Choices.match(said, among: try await choices(context)), name: name, index: nil, prompt: prompt)
            return ([resolution], value.map { $0 as Any } as? Value)
        }
        var (resolutions, value) = try await Value._resolveParameter(spokenValue, name: name, prompt: prompt, context: context)
        if value == nil, let settled = notRequired(resolutions) { (resolutions, value) = settled }
        if let check, let found = value, let problem = check(found) {
            resolutions = [ParameterResolution(name, .unsupported(reason: problem), prompt: prompt)]
            value = nil
        }
        return (resolutions, value)
    }

    /// Resolved with no value and nothing to ask (its type said `notRequired`): nil for an optional parameter; for
    /// any other, which `handle` could not read (the read would stop the worker), `unsupported`. Nil when a
    /// resolution asks the user or is unsupported already, which stops the pipeline as it is.
    @usableFromInline func notRequired(_ resolutions: [ParameterResolution]) -> (resolutions: [ParameterResolution], value: Value?)? {
        let settled = resolutions.allSatisfy { resolution in
            switch resolution.result {
            case .success, .notRequired: true
            case .needsValue, .disambiguation, .confirmationRequired, .unsupported: false
            }
        }
        guard !resolutions.isEmpty, settled else { return nil }
        if let none = (Value.self as? any AbsentValue.Type)?.absent as? Value { return (resolutions, none) }
        let reason = "its type resolved it as not required, but '\(name)' has no value without one: declare it optional"
        return ([ParameterResolution(name, .unsupported(reason: reason), prompt: prompt)], nil)
    }
}

/// A type with a value for "none" (`Optional`'s nil): what a parameter its type resolved as not required holds.
protocol AbsentValue {
    static var absent: Self { get }
}

extension Optional: AbsentValue {
    static var absent: Self { nil }
}

extension Parameter where Value: Comparable {
    /// Required and within `range`.
    public init(_ prompt: IntentDialog? = nil, in range: ClosedRange<Value>) {
        self.init(
            prompt: prompt,
            check: { value in
                range.contains(value) ? nil : "must be from \(range.lowerBound) to \(range.upperBound), not \(value)"
            }, choices: nil)
    }
}

extension Parameter {
    /// Optional, and within `range` when given.
    public init<Wrapped: Comparable & ParameterValue>(_ prompt: IntentDialog? = nil, in range: ClosedRange<Wrapped>) where Value == Wrapped? {
        self.init(
            prompt: prompt,
            check: { value in
                guard let value else { return nil }
                return range.contains(value) ? nil : "must be from \(range.lowerBound) to \(range.upperBound), not \(value)"
            }, choices: nil)
    }
}

extension Parameter where Value == String {
    /// One of the values `choices` gives (a query of the app's): an exact match
    /// (any case) or the only one containing what was said resolves; several
    /// ask the user to choose; none is unsupported.
    public init(_ prompt: IntentDialog? = nil, choices: @escaping @Sendable (IntentContext) async throws -> [String]) {
        self.init(prompt: prompt, check: nil, choices: choices)
    }
}

/// Matching what the user said against a list of names.
public enum Choices {
    /// An exact match (any case, spaces trimmed) or the only name containing
    /// what was said; several such names to choose from; else unsupported.
    public static func match(_ said: String, among names: [String]) -> ParameterResult<String> {
        let wanted = said.trimmingWhitespace().lowercased()
        if let exact = names.first(where: { $0.lowercased() == wanted }) { return .success(exact) }
        let containing = wanted.isEmpty ? [] : names.filter { $0.lowercased().contains(wanted) }
        switch containing.count {
        case 0: return .unsupported("'\(said)' is not one of \(names.joined(separator: ", "))")
        case 1: return .success(containing[0])
        default:
            let titles = containing.joined(separator: ", ")
            return .disambiguation(containing.map { ParameterOption($0, title: $0) }, IntentDialog(full: "Which one do you mean: \(titles)?"))
        }
    }
}

/// Two parameters are equal when they hold the same: what was said, and the resolved value.
extension Parameter: Equatable where Value: Equatable, Value.Spoken: Equatable {
    /// Whether both have the same name, what was said and the same resolved value.
    public static func == (a: Parameter, b: Parameter) -> Bool {
        a.name == b.name && a.spokenValue == b.spokenValue && a.resolved == b.resolved
    }
}

extension Parameter: Hashable where Value: Hashable, Value.Spoken: Hashable {
    /// Hashes the name, what was said and the resolved value.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(spokenValue)
        hasher.combine(resolved)
    }
}

extension Parameter: Codable {
    /// Reads what was said for the parameter under its key (nothing, for `null`); while the pipeline decodes an intent, the
    /// parameter keeps the prompt and rules its type declares.
    public init(from decoder: any Decoder) throws {
        let key = decoder.codingPath.last?.stringValue ?? ""
        let decoding = ParameterDecoding.current
        self.init(declaredAs: key, in: decoding)
        let container = try decoder.singleValueContainer()
        spokenValue = container.decodeNil() ? nil : try container.decode(Value.Spoken.self)
        decoding?.decoded.append(self)
    }

    /// The parameter named `key` as the decoded type declares it (prompt and rules), with a box of its own and nothing said yet.
    private init(declaredAs key: String, in decoding: ParameterDecoding.Decoding?) {
        if let template = decoding?.templates[key] as? DeclaredParameter<Value> {
            self = template.parameter
            storage = ResolvedValue()
        } else {
            self.init()
        }
        name = key
    }

    /// While the pipeline decodes an intent: its declared parameter `key` read straight from the submission's
    /// parameters, as `init(from:)` would read it from the decoder the keyed container makes for it (`null`
    /// and a missing key are nothing said; errors name `codingPath + [key]`), without that decoder and its
    /// containers. `template` is what the intent declares for `key`.
    @inlinable static func read(
        from parameters: [String: JSONValue], template: Parameter, key: some CodingKey, codingPath: [any CodingKey],
        in decoding: ParameterDecoding.Decoding
    ) throws -> Parameter {
        var parameter = template
        parameter.storage = ResolvedValue()
        parameter.setName(key.stringValue)
        if let said = parameters[key.stringValue], !said.isNull {
            parameter.spokenValue = try _JSONValueUnbox.decodable(said, as: Value.Spoken.self, codingPath: codingPath + [key])
        }
        // Resolved through a closure made here, where the intent's module specializes it for `Value`.
        let decoded = parameter
        decoding.decoded.append(
            DecodedParameter(parameterName: decoded.name, box: decoded.box) { context in try await decoded.resolveParameter(context: context) })
        return parameter
    }

    /// Writes what a submission carries: the resolved value's `spoken` form, else what was said, else `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let spoken = resolved?.spoken ?? spokenValue {
            try container.encode(spoken)
        } else {
            try container.encodeNil()
        }
    }
}

extension KeyedDecodingContainer {
    /// A parameter whose key is missing decodes as one with nothing said (the
    /// synthesized `init(from:)` would otherwise refuse it as a missing key).
    ///
    /// Inlinable, as `Parameter.read` and `Parameter.init(_:)` are, so that the module declaring an intent specializes
    /// them for its own parameter types: unspecialized, every decode looked `Parameter<Value>`'s metadata up in the
    /// runtime's cache three times per parameter (about 7,000 instructions an intent, `deploy/worker-cost.sh`).
    @inlinable public func decode<Value>(_ type: Parameter<Value>.Type, forKey key: Key) throws -> Parameter<Value> {
        // The pipeline's decode of an intent, at the top of its tree, where the submission's parameters are (a
        // decode of another tree inside it sees no `ParameterDecoding`), and a parameter the intent declares.
        // The template is found with a class cast (a comparison of its type), not a cast out of an existential.
        if let decoding = ParameterDecoding.current, let parameters = decoding.parameters, codingPath.isEmpty,
            let template = decoding.templates[key.stringValue] as? DeclaredParameter<Value>
        {
            // `codingPath` is empty here (checked above): not asked of the container a second time.
            return try Parameter<Value>.read(from: parameters, template: template.parameter, key: key, codingPath: [], in: decoding)
        }
        return try decodeThroughDecoder(type, forKey: key)
    }

    /// Any other parameter: through the decoder the keyed container makes for it, or as nothing said when absent.
    @inline(never) @usableFromInline
    func decodeThroughDecoder<Value>(_ type: Parameter<Value>.Type, forKey key: Key) throws -> Parameter<Value> {
        if let decoded = try decodeIfPresent(type, forKey: key) { return decoded }
        return try Parameter<Value>(from: _MissingParameterDecoder(codingPath: codingPath + [key]))
    }
}

extension KeyedEncodingContainer {
    /// A parameter with nothing said is left out of the submission.
    public mutating func encode<Value>(_ parameter: Parameter<Value>, forKey key: Key) throws {
        guard parameter.resolved != nil || parameter.spokenValue != nil else { return }
        try encodeIfPresent(parameter, forKey: key)
    }
}

/// What the pipeline hands `Parameter.read` (and `Parameter.init(from:)`) while it decodes an
/// intent: each parameter as its type declares it (prompt and rules), by name. `Decoding.decoded`
/// collects what they made: a `DecodedParameter` from `read`, the `Parameter` itself from `init(from:)`.
/// A task-local rather than `userInfo`, which every read would copy.
@usableFromInline enum ParameterDecoding {
    @usableFromInline @TaskLocal static var current: Decoding?

    /// One decode of an intent: the templates it reads from, and the parameters it made, in the order it made them.
    @usableFromInline final class Decoding: @unchecked Sendable {
        // @unchecked: made, filled and read by one decode, on one thread, before anything else sees it.
        @usableFromInline let templates: [String: ParameterTemplate]
        /// The submission's parameters, which the decode reads through a keyed container at the top level
        /// of its tree: a parameter decoded there is read from them directly. Nil: only through the decoder.
        @usableFromInline let parameters: [String: JSONValue]?
        @usableFromInline var decoded: [any ResolvableParameter] = []

        init(templates: [String: ParameterTemplate], parameters: [String: JSONValue]? = nil) {
            self.templates = templates
            self.parameters = parameters
            // Room for one of each declared parameter: no growth of the array while the decode appends them.
            decoded.reserveCapacity(templates.count)
        }
    }
}

/// A parameter as its intent's type declares it (prompt and rules), which every decode of that type starts from: a
/// class, so that a decode finds its own `Parameter<Value>` with a class cast, one comparison of the object's type,
/// where a cast out of an existential took about 270 instructions (two per parameter per delivery).
@usableFromInline class ParameterTemplate: @unchecked Sendable {
    // @unchecked: it holds nothing (a class that others inherit from cannot be checked).
}

/// The template of a `Parameter<Value>`.
@usableFromInline final class DeclaredParameter<Value: ParameterValue>: ParameterTemplate, @unchecked Sendable {
    // @unchecked: its one property is an immutable `Parameter`, itself `Sendable`.
    @usableFromInline let parameter: Parameter<Value>

    init(_ parameter: Parameter<Value>) {
        self.parameter = parameter
    }
}

/// What the pipeline finds declared in an intent's type: a parameter, as its template.
protocol DeclaresParameter {
    var template: ParameterTemplate { get }
}

extension Parameter: DeclaresParameter {
    var template: ParameterTemplate { DeclaredParameter(self) }
}

/// A parameter's resolved value, shared by the copies of one decoded intent.
/// Not generic: a box made for every parameter of every delivery would
/// otherwise look its generic metadata up each time.
@usableFromInline final class ResolvedValue: Sendable {
    private let stored: Mutex<(any Sendable)?>

    @usableFromInline init(_ value: (any Sendable)? = nil) {
        stored = Mutex(value)
    }

    @usableFromInline var value: (any Sendable)? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

/// The decoder a missing key's parameter is made from: it holds nothing.
struct _MissingParameterDecoder: Decoder, SingleValueDecodingContainer {
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "absent"))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw DecodingError.valueNotFound([Any].self, .init(codingPath: codingPath, debugDescription: "absent"))
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }
    func decodeNil() -> Bool { true }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        throw DecodingError.valueNotFound(type, .init(codingPath: codingPath, debugDescription: "absent"))
    }
}

/// A question about one parameter (or the whole intent), thrown from a
/// handler's `resolve`, `confirm` or `handle`: the intent stops at
/// `needsInput` with it, and its effects wait for the answer.
public struct ParameterRequest: Error, Sendable {
    /// The question: the parameter, what it needs and the words it is asked in.
    public var resolution: ParameterResolution

    /// A question asking the user for what `resolution` needs.
    public init(_ resolution: ParameterResolution) {
        self.resolution = resolution
    }

    /// A typed result as the resolution the status carries, with the value when it resolved.
    @inlinable static func resolution<Value>(
        of result: ParameterResult<Value>, name: String, index: Int?, prompt: IntentDialog?
    ) -> (ParameterResolution, Value?) where Value: ParameterValue {
        switch result {
        case .success(let value):
            return (ParameterResolution(name, index: index, .success(value.displayValue)), value)
        case .needsValue(let dialog):
            return (ParameterResolution(name, index: index, .needsValue, prompt: dialog ?? prompt), nil)
        case .disambiguation(let options, let dialog):
            return (
                ParameterResolution(
                    name, index: index, .disambiguation(options.map(\.value.displayValue)), prompt: dialog ?? prompt,
                    optionTitles: options.map(\.title)), nil
            )
        case .confirmationRequired(let value, let dialog):
            return (ParameterResolution(name, index: index, .confirmationRequired(value.displayValue), prompt: dialog ?? prompt), value)
        case .notRequired:
            return (ParameterResolution(name, index: index, .notRequired), nil)
        case .unsupported(let reason):
            return (ParameterResolution(name, index: index, .unsupported(reason: reason), prompt: prompt), nil)
        }
    }
}

extension Parameter {
    /// Asks the user for this parameter's value (App Intents' `requestValue`).
    public func needsValue(_ dialog: IntentDialog? = nil) -> ParameterRequest {
        ParameterRequest(ParameterResolution(name, .needsValue, prompt: dialog ?? prompt))
    }

    /// Asks the user to choose among `options` (App Intents' `requestDisambiguation(among:dialog:)`).
    public func disambiguation(among options: [ParameterOption<Value>], _ dialog: IntentDialog? = nil) -> ParameterRequest {
        ParameterRequest(
            ParameterResolution(
                name, .disambiguation(options.map(\.value.displayValue)), prompt: dialog ?? prompt, optionTitles: options.map(\.title)))
    }

    /// Whether the user confirmed this parameter's value, in an answer to a question that asked.
    public func isConfirmed(in context: IntentContext) -> Bool { context.isConfirmed(name) }

    /// Asks the user to confirm this value unless they did (App Intents'
    /// `requestConfirmation`); returns once they have.
    public func requestConfirmation(_ dialog: IntentDialog, in context: IntentContext) throws(ParameterRequest) {
        guard !context.isConfirmed(name), let resolved else { return }
        throw ParameterRequest(ParameterResolution(name, .confirmationRequired(resolved.displayValue), prompt: dialog))
    }
}
