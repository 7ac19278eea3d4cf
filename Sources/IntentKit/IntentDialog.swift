/// What the user is asked, in words (App Intents' `IntentDialog`): the full
/// sentence for a screen or a voice, and an optional short one for a small
/// space (a notification, a watch).
public struct IntentDialog: Sendable, Hashable, Decodable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public var full: String
    public var supporting: String?

    public init(full: String, supporting: String? = nil) {
        self.full = full
        self.supporting = supporting
    }

    public init(_ full: String) {
        self.init(full: full)
    }

    public init(stringLiteral value: String) {
        self.init(full: value)
    }

    public var description: String { full }

    /// `{"full", "supporting"}`, as a question's `prompt` travels.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["full": .string(full)]
        if let supporting { object["supporting"] = .string(supporting) }
        return .object(object)
    }
}
