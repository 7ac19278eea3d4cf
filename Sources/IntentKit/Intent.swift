/// An intent: a request a user makes of an app, carried through the queue as JSON.
///
/// The stored properties of a conforming type are its parameters. Make them
/// optional when the user may leave them out: resolution is where a missing
/// value becomes a `needsValue` question, not decoding.
///
/// ```swift
/// struct SendMessage: Intent {
///     static let typeName = "SendMessage"
///     var recipients: [String]?
///     var content: String?
/// }
/// ```
public protocol Intent: Codable, Sendable {
    /// The stable name of the type on the wire, and the routing key its
    /// submissions are published with. Never change it once intents are queued.
    static var typeName: String { get }
}
