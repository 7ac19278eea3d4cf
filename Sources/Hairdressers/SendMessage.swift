import Foundation
import IntentKit
import IntentStore

/// "Send 'Running late' to Alice and Bob", or to a group of hairdressers.
public struct SendMessage: Intent, Hashable {
    public static let typeName = "SendMessage"

    @Parameter("Who should get the message?") public var recipients: [Hairdresser]?
    @Parameter("What should the message say?") public var content: String
    @Parameter("Which group should get it?") public var groupName: HairdresserGroup?

    public init() {}
}

/// Stores one `message` row per recipient — the named ones and the group's
/// members — once.
public struct SendMessageHandler: DatabaseIntentHandler {
    public let database: AppDatabase

    public init(database: AppDatabase) {
        self.database = database
    }

    /// A message needs someone to go to, and something to say.
    public func resolve(_ intent: SendMessage, context: IntentContext) async throws {
        if intent.recipients == nil, intent.groupName == nil { throw intent.$recipients.needsValue() }
        if intent.content.trimmingWhitespace().isEmpty { throw intent.$content.needsValue() }
    }

    public func handle(_ intent: SendMessage, context: IntentContext) async throws -> IntentResponse {
        // Two names for one hairdresser ("Alice", "Alice Smith") are one recipient.
        let named = (intent.recipients ?? []).map(\.name).reduce(into: [String]()) { names, name in
            if !names.contains(name) { names.append(name) }
        }
        let group = intent.groupName?.name
        let content = intent.content
        return try await database.once(context) { db in
            var recipients = named
            if let group {
                let members = try db.query(
                    """
                    SELECT h.name FROM hairdresser h
                    JOIN group_member m ON m.hairdresser_id = h.id
                    JOIN "group" g ON g.id = m.group_id
                    WHERE g.name = ? ORDER BY h.name
                    """, [.text(group)]
                ) { $0.string(0) }
                recipients += members.filter { !recipients.contains($0) }
            }
            guard !recipients.isEmpty else {
                throw IntentFailure(code: "noRecipients", message: "the group '\(group ?? "")' has no members")
            }
            let now = Date().timeIntervalSince1970
            for recipient in recipients {
                try db.run(
                    "INSERT INTO message(created_at, hairdresser, content, group_name, intent_id) VALUES (?, ?, ?, ?, ?)",
                    [.real(now), .text(recipient), .text(content), .optional(group), .text(context.intentID)])
            }
            return .success(
                "Message sent to \(recipients.joined(separator: ", "))",
                payload: ["recipients": .array(recipients.map(JSONValue.string)), "content": .string(content)])
        }
    }

    /// "To: Alice Smith, Bob Jones" and the message, once.
    public static func render(_ view: IntentView) -> String? {
        var recipients = view.values("recipients")
        if let group = view.value("groupName")?.stringValue { recipients.append("group \(group)") }
        let content = view.parameters["content"]?.displayString ?? ""
        return "To: \(recipients.isEmpty ? "?" : recipients.joined(separator: ", "))\n\(content)"
    }
}
