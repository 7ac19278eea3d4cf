import IntentKit
import IntentStore

/// "Remind me to buy milk in two days."
struct AddTodo: Intent {
    static let typeName = "AddTodo"

    var title: String?
    var dueInDays: Int?
}

struct AddTodoHandler: IntentHandler {
    let database: DatabaseQueue
    /// Cancels and time limits are decided in the same database as the todos.
    let ledger: (any OutcomeLedger)?

    func resolve(_ intent: AddTodo, context: IntentContext) async throws -> [ParameterResolution] {
        let title: ResolutionResult = intent.title.map { $0.isEmpty ? .needsValue : .success(.string($0)) } ?? .needsValue
        let due: ResolutionResult =
            switch intent.dueInDays {
            case nil: .notRequired
            case let days? where (0...365).contains(days): .success(.number(Double(days)))
            case let days?: .unsupported(reason: "\(days) days is not within a year")
            }
        return [ParameterResolution("title", title), ParameterResolution("dueInDays", due)]
    }

    func handle(_ intent: AddTodo, context: IntentContext) async throws -> HandleOutcome {
        let title = intent.title ?? ""
        let days = intent.dueInDays
        return try await database.write { db in
            // The row and the "handled" record commit together: a redelivery returns this same outcome.
            try OnceOnly.perform(in: db, context: context) { db in
                try db.run(
                    "INSERT INTO todo(title, due_in_days, intent_id) VALUES (?, ?, ?)",
                    [.text(title), days.map { .int($0) } ?? .null, .text(context.intentID)])
                return .success(.success("Added “\(title)”", payload: ["title": .string(title)]))
            }
        }
    }
}
