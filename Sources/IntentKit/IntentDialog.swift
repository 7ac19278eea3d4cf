/// What the user is asked, in words (App Intents' `IntentDialog`): the full
/// sentence for a screen or a voice, and an optional short one for a small
/// space (a notification, a watch).
public struct IntentDialog: Sendable, Hashable, Decodable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// The full sentence, for a screen or a voice.
    public var full: String
    /// A short form for a small space (a notification, a watch), when there is one.
    public var supporting: String?

    /// A dialog in `full` words, with a short form only when given.
    public init(full: String, supporting: String? = nil) {
        self.full = full
        self.supporting = supporting
    }

    /// A dialog of one sentence, without a short form.
    public init(_ full: String) {
        self.init(full: full)
    }

    /// A dialog written as a string literal (`"Who should get the message?"`), without a short form.
    public init(stringLiteral value: String) {
        self.init(full: value)
    }

    /// The full sentence.
    public var description: String { full }

    /// `{"full", "supporting"}`, as a question's `prompt` travels.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["full": .string(full)]
        if let supporting { object["supporting"] = .string(supporting) }
        return .object(object)
    }
}
