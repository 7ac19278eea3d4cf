import Foundation
import IntentKit

/// The intent every phase sends: a SendMessage to one hairdresser, and the
/// status events a worker publishes for it (used as same-sized bodies by the ceiling).
enum Workload {
    static let type = "SendMessage"
    static let recipient = "Alice Smith"
    static let content = "Running late"

    static let parameters: [String: JSONValue] = [
        "recipients": .array([.string(recipient)]),
        "content": .string(content),
    ]

    static func newID() -> String { IntentID.make() }

    static func envelope(id: String, submittedAt: Double = Date().timeIntervalSince1970) -> IntentEnvelope {
        IntentEnvelope(id: id, type: type, parameters: parameters, submittedAt: submittedAt)
    }

    /// The two status events the worker publishes for one intent: `inProgress`, then `success`.
    static func statusEvents(id: String, worker: String) -> [StatusEvent] {
        let resolutions = [
            ParameterResolution("recipients", index: 0, .success(.string(recipient))),
            ParameterResolution("content", .success(.string(content))),
            ParameterResolution("groupName", .notRequired),
        ]
        let response = IntentResponse(
            code: "success", message: "Message sent to \(recipient)",
            payload: ["recipients": .array([.string(recipient)]), "content": .string(content)])
        return [
            StatusEvent(id: id, type: type, state: .inProgress, attempt: 1, worker: worker),
            StatusEvent(id: id, type: type, state: .success, attempt: 1, response: response, resolutions: resolutions, worker: worker),
        ]
    }
}
