import Foundation
import IntentKit
import IntentStore

/// "Send 'Running late' to Alice and Bob", or to a group of hairdressers.
public struct SendMessage: Intent, Hashable {
    public static let typeName = "SendMessage"

    public var recipients: [String]?
    public var content: String?
    public var groupName: String?

    public init(recipients: [String]? = nil, content: String? = nil, groupName: String? = nil) {
        self.recipients = recipients
        self.content = content
        self.groupName = groupName
    }
}

/// Resolves recipients against the `hairdresser` table and the group against
/// `group` by substring; stores one `message` row per recipient, once.
public struct SendMessageHandler: IntentHandler {
    let database: HairdressersDatabase

    public init(database: HairdressersDatabase) {
        self.database = database
    }

    public var ledger: (any OutcomeLedger)? { database.ledger }

    public func resolve(_ intent: SendMessage, context: IntentContext) async throws -> [ParameterResolution] {
        let (hairdressers, groups, words, groupWords) = try await database.queue.read { db in
            (try db.query("SELECT name FROM hairdresser ORDER BY name") { $0.string(0) },
             try db.query("SELECT name FROM \"group\" ORDER BY name") { $0.string(0) },
             try Vocabulary.terms(.hairdresser, in: db), try Vocabulary.terms(.group, in: db))
        }
        var resolutions: [ParameterResolution] = []
        let recipients = (intent.recipients ?? []).filter { !$0.trimmingWhitespace().isEmpty }
        if recipients.isEmpty {
            resolutions.append(ParameterResolution("recipients", intent.groupName == nil ? .needsValue : .notRequired))
        }
        for (index, name) in recipients.enumerated() {
            resolutions.append(ParameterResolution(
                "recipients", index: index, NameMatcher.resolveHairdresser(Vocabulary.read(name, words), in: hairdressers)))
        }

        let content = intent.content?.trimmingWhitespace() ?? ""
        resolutions.append(ParameterResolution("content", content.isEmpty ? .needsValue : .success(.string(intent.content!))))

        if let group = intent.groupName {
            let wanted = Vocabulary.read(group, groupWords).lowercased().trimmingWhitespace()
            let matches = wanted.isEmpty ? [] : groups.filter { $0.lowercased().contains(wanted) }
            let result: ResolutionResult =
                switch matches.count {
                case 0: .needsValue
                case 1: .success(.string(matches[0]))
                default: .disambiguation(matches.map(JSONValue.string))
                }
            resolutions.append(ParameterResolution("groupName", result))
        } else {
            resolutions.append(ParameterResolution("groupName", .notRequired))
        }
        return resolutions
    }

    public func handle(_ intent: SendMessage, context: IntentContext) async throws -> HandleOutcome {
        let named = context.resolvedValues("recipients").compactMap(\.stringValue)
        let group = context.resolvedValue("groupName")?.stringValue
        let content = intent.content ?? ""
        return try await database.queue.write { db in
            try OnceOnly.perform(in: db, context: context) { db in
                var recipients = named
                if let group {
                    let members = try db.query(
                        """
                        SELECT h.name FROM hairdresser h
                        JOIN group_member m ON m.hairdresser_id = h.id
                        JOIN "group" g ON g.id = m.group_id
                        WHERE g.name = ? ORDER BY h.name
                        """, [.text(group)]) { $0.string(0) }
                    recipients += members.filter { !recipients.contains($0) }
                }
                guard !recipients.isEmpty else {
                    return .failure(code: "noRecipients", message: "the group '\(group ?? "")' has no members")
                }
                let now = Date().timeIntervalSince1970
                for recipient in recipients {
                    try db.run(
                        "INSERT INTO message(created_at, hairdresser, content, group_name, intent_id) VALUES (?, ?, ?, ?, ?)",
                        [.real(now), .text(recipient), .text(content), .optional(group), .text(context.intentID)])
                }
                return .success(IntentResponse(
                    code: "success", message: "Message sent to \(recipients.joined(separator: ", "))",
                    payload: ["recipients": .array(recipients.map(JSONValue.string)), "content": .string(content)]))
            }
        }
    }
}

extension SendMessageHandler: IntentRendering {
    /// "To: Alice Smith, Bob Jones" and the message, once.
    public static func render(_ view: IntentView) -> String? {
        var recipients = view.values("recipients")
        if let group = view.value("groupName")?.stringValue { recipients.append("group \(group)") }
        let content = view.parameters["content"]?.displayString ?? ""
        return "To: \(recipients.isEmpty ? "?" : recipients.joined(separator: ", "))\n\(content)"
    }
}
