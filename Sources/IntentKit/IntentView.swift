/// What a renderer sees of an intent: enough to draw it the way its app would
/// (SiriKit's UI extension), without a database or a handler instance.
public struct IntentView: Sendable {
    /// The intent's type name, which picks the handler that draws it.
    public var type: String
    /// Where the intent stands now.
    public var state: IntentState
    /// What was submitted, with the answers given so far merged in, as JSON.
    public var parameters: [String: JSONValue]
    /// Each parameter's resolution in the latest outcome, questions included.
    public var resolutions: [ParameterResolution]
    /// What the intent ended with, once it has ended.
    public var response: IntentResponse?

    /// A view of an intent of `type` in `state`, with its parameters, its resolutions and its response (nil until it ends).
    public init(type: String, state: IntentState, parameters: [String: JSONValue], resolutions: [ParameterResolution], response: IntentResponse?) {
        self.type = type
        self.state = state
        self.parameters = parameters
        self.resolutions = resolutions
        self.response = response
    }

    /// The resolved value of a parameter, else what was submitted.
    public func value(_ parameter: String) -> JSONValue? {
        for resolution in resolutions where resolution.parameter == parameter && resolution.index == nil {
            if case .success(let value) = resolution.result { return value }
        }
        return parameters[parameter]
    }

    /// The resolved elements of a list parameter, else what was submitted.
    public func values(_ parameter: String) -> [String] {
        // One pass, with no list of the resolutions in between.
        var resolved: [String] = []
        for resolution in resolutions where resolution.parameter == parameter && resolution.index != nil {
            if case .success(let value) = resolution.result, let text = value.stringValue { resolved.append(text) }
        }
        if !resolved.isEmpty { return resolved }
        switch parameters[parameter] {
        case .array(let items)?: return items.map(\.displayString)
        case .string(let text)?: return text.split(separator: ",").map { String($0).trimmingCharacters(in: " ") }
        default: return []
        }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        var slice = Substring(self)
        while slice.first == set { slice.removeFirst() }
        while slice.last == set { slice.removeLast() }
        return String(slice)
    }
}
