/// An intent: a request a user makes of an app, carried through the queue as JSON.
///
/// Its parameters are `@Parameter` properties, each with its type and rules:
/// the framework resolves them (the app looks up only what it must, in the
/// parameter's type), asks in their prompts' words for what is missing or
/// unclear, and hands the handler the resolved intent.
///
/// ```swift
/// struct SendMessage: Intent {
///     static let typeName = "SendMessage"
///     @Parameter("Who should get the message?") var recipients: [Hairdresser]
///     @Parameter("What should it say?") var content: String
/// }
/// ```
public protocol Intent: Codable, Sendable {
    /// The stable name of the type on the wire, and the routing key its
    /// submissions are published with. Never change it once intents are queued.
    static var typeName: String { get }

    /// An intent with nothing said yet: every parameter as declared.
    init()
}
