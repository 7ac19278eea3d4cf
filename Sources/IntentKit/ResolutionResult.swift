/// The outcome of resolving one parameter, in SiriKit's vocabulary.
public enum ResolutionResult: Sendable, Hashable {
    /// The parameter has this value.
    case success(JSONValue)
    /// The user must supply a value.
    case needsValue
    /// Several values fit; the user must choose one of these.
    case disambiguation([JSONValue])
    /// This value fits, but the user must confirm it.
    case confirmationRequired(JSONValue)
    /// The parameter does not matter for this intent.
    case notRequired
    /// The value cannot be used; the intent fails with `unsupportedParameter`.
    case unsupported(reason: String)

    /// The outcome's wire name.
    public var outcome: String {
        switch self {
        case .success: "success"
        case .needsValue: "needsValue"
        case .disambiguation: "disambiguation"
        case .confirmationRequired: "confirmationRequired"
        case .notRequired: "notRequired"
        case .unsupported: "unsupported"
        }
    }

    /// Whether the user has to answer before the intent can go on.
    public var needsInput: Bool {
        switch self {
        case .needsValue, .disambiguation, .confirmationRequired: true
        case .success, .notRequired, .unsupported: false
        }
    }
}

/// The resolution of one parameter (or one element of a list parameter).
public struct ParameterResolution: Sendable, Hashable {
    /// The parameter's name, as in the intent's JSON.
    public var parameter: String
    /// For a list parameter resolved element by element, the element's position.
    public var index: Int?
    /// What resolving it came to.
    public var result: ResolutionResult
    /// What the user is asked, for a result that needs an answer.
    public var prompt: IntentDialog?
    /// For a disambiguation: the title people read for each option, in order
    /// (the options themselves are the values an answer gives back).
    public var optionTitles: [String]?

    /// The resolution of `parameter` (of its element `index`, for a list) to `result`, with the words it is asked in and a
    /// disambiguation's option titles when given.
    public init(_ parameter: String, index: Int? = nil, _ result: ResolutionResult, prompt: IntentDialog? = nil, optionTitles: [String]? = nil) {
        self.parameter = parameter
        self.index = index
        self.result = result
        self.prompt = prompt
        self.optionTitles = optionTitles
    }

    /// `recipients` or `recipients[1]`.
    public var label: String {
        index.map { "\(parameter)[\($0)]" } ?? parameter
    }
}

extension ParameterResolution {
    /// The JSON form, as `Codable` writes it.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["parameter": .string(parameter), "outcome": .string(result.outcome)]
        if let index { object["index"] = .number(Double(index)) }
        if let prompt { object["prompt"] = prompt.jsonValue }
        if let optionTitles { object["optionTitles"] = .array(optionTitles.map(JSONValue.string)) }
        switch result {
        case .success(let value), .confirmationRequired(let value): object["value"] = value
        case .disambiguation(let options): object["options"] = .array(options)
        case .unsupported(let reason): object["reason"] = .string(reason)
        case .needsValue, .notRequired: break
        }
        return .object(object)
    }

    /// The bytes of `jsonValue` for each resolution, as a JSON array, written member by member in sorted key
    /// order with no dictionary in between (every status event with resolutions, and the recorder's copy of them).
    public static func serialized(_ resolutions: [ParameterResolution]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(96 * resolutions.count + 2)
        serialize(resolutions, into: &output)
        return output
    }

    /// `serialized(_:)`'s bytes, appended to `output`.
    static func serialize(_ resolutions: [ParameterResolution], into output: inout [UInt8]) {
        output.append(UInt8(ascii: "["))
        for (position, resolution) in resolutions.enumerated() {
            if position > 0 { output.append(UInt8(ascii: ",")) }
            resolution.write(into: &output)
        }
        output.append(UInt8(ascii: "]"))
    }

    /// The bytes of `jsonValue`, its members in sorted key order, appended to `output`.
    private func write(into output: inout [UInt8]) {
        JSONObjectWriter.write(into: &output) { json in members(of: &json) }
    }

    private func members(of json: inout JSONObjectWriter) {
        if let index { json.number("index", Double(index)) }
        if let optionTitles { json.value("optionTitles", .array(optionTitles.map(JSONValue.string))) }
        if case .disambiguation(let options) = result { json.value("options", .array(options)) }
        json.string("outcome", result.outcome)
        json.string("parameter", parameter)
        if let prompt { json.value("prompt", prompt.jsonValue) }
        switch result {
        case .unsupported(let reason): json.string("reason", reason)
        case .success(let value), .confirmationRequired(let value): json.value("value", value)
        case .needsValue, .notRequired, .disambiguation: break
        }
    }
}

extension ParameterResolution {
    /// The resolution `value` holds, read straight from the tree as `init(from:)` reads it (the recorder
    /// reads those of every event); nil when anything is missing, null or of another type, for `init(from:)`
    /// to say what.
    static func read(_ value: JSONValue) -> ParameterResolution? {
        guard case .object(let fields) = value else { return nil }
        return read { fields[$0.key] }
    }

    /// Its JSON members, each in the place of its name in `names`.
    enum Field: Int {
        case parameter, index, outcome, value, options, reason, prompt, optionTitles

        /// The members' JSON names, by raw value.
        static let names: [StaticString] = ["parameter", "index", "outcome", "value", "options", "reason", "prompt", "optionTitles"]

        /// The member's JSON name.
        var key: String { KnownMembers.key(Self.names[rawValue]) }
    }

    /// The resolution an object with these members holds, as `read(_:)` reads it from its tree: the recorder reads
    /// every event's resolutions with it, member by member (`KnownMembers` with `Field.names`).
    static func read(_ field: (Field) -> JSONValue?) -> ParameterResolution? {
        guard case .string(let parameter)? = field(.parameter), case .string(let outcome)? = field(.outcome) else { return nil }
        var resolution = ParameterResolution(parameter, .needsValue)
        if let index = field(.index), index != .null {
            guard case .number(let number) = index, let index = Int(exactly: number) else { return nil }
            resolution.index = index
        }
        if let prompt = field(.prompt), prompt != .null {
            guard case .object(let dialog) = prompt, case .string(let full)? = dialog["full"] else { return nil }
            var read = IntentDialog(full: full)
            if let supporting = dialog["supporting"], supporting != .null {
                guard case .string(let supporting) = supporting else { return nil }
                read.supporting = supporting
            }
            resolution.prompt = read
        }
        if let titles = field(.optionTitles), titles != .null {
            guard case .array(let elements) = titles else { return nil }
            var read: [String] = []
            for element in elements {
                guard case .string(let title) = element else { return nil }
                read.append(title)
            }
            resolution.optionTitles = read
        }
        switch outcome {
        case "success", "confirmationRequired":
            guard let found = field(.value), found != .null else { return nil }
            resolution.result = outcome == "success" ? .success(found) : .confirmationRequired(found)
        case "needsValue": resolution.result = .needsValue
        case "disambiguation":
            guard case .array(let options)? = field(.options), !options.contains(.null) else { return nil }
            resolution.result = .disambiguation(options)
        case "notRequired": resolution.result = .notRequired
        case "unsupported":
            guard case .string(let reason)? = field(.reason) else { return nil }
            resolution.result = .unsupported(reason: reason)
        default: return nil
        }
        return resolution
    }
}

extension ParameterResolution: Decodable {
    private enum CodingKeys: String, CodingKey {
        case parameter, index, outcome, value, options, reason, prompt, optionTitles
    }

    /// Reads the JSON form `jsonValue` writes; an unknown `outcome` is a `DecodingError`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        parameter = try container.decode(String.self, forKey: .parameter)
        index = try container.decodeIfPresent(Int.self, forKey: .index)
        prompt = try container.decodeIfPresent(IntentDialog.self, forKey: .prompt)
        optionTitles = try container.decodeIfPresent([String].self, forKey: .optionTitles)
        let outcome = try container.decode(String.self, forKey: .outcome)
        switch outcome {
        case "success": result = .success(try container.decode(JSONValue.self, forKey: .value))
        case "needsValue": result = .needsValue
        case "disambiguation": result = .disambiguation(try container.decode([JSONValue].self, forKey: .options))
        case "confirmationRequired": result = .confirmationRequired(try container.decode(JSONValue.self, forKey: .value))
        case "notRequired": result = .notRequired
        case "unsupported": result = .unsupported(reason: try container.decode(String.self, forKey: .reason))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .outcome, in: container, debugDescription: "unknown resolution outcome '\(outcome)'")
        }
    }
}
