import IntentQueue

/// "Remind me to buy milk in two days, on the shopping list."
struct AddTodo: Intent {
    static let typeName = "AddTodo"
    @Parameter("What should I remind you of?") var title: String
    @Parameter("Which list?", choices: { try await $0.dependency(AppDatabase.self).strings("SELECT name FROM list") }) var list: String
    @Parameter("In how many days?", in: 0...365) var dueInDays: Int?
}

struct AddTodoHandler: DatabaseIntentHandler {
    let database: AppDatabase
    func handle(_ intent: AddTodo, context: IntentContext) async throws -> IntentResponse {
        try await database.once(context) { db in  // the row and "handled" commit together: a redelivery adds nothing
            try db.run("INSERT INTO todo VALUES (?, ?, ?)", [.text(intent.title), .text(intent.list), .optional(intent.dueInDays)])
            return .success("Added “\(intent.title)” to \(intent.list)")
        }
    }
}

let path = ProcessInfo.processInfo.environment["TODO_DB"] ?? "todo.sqlite"
let lists = "CREATE TABLE list(name TEXT PRIMARY KEY); INSERT INTO list VALUES ('Shopping'), ('Work')"
let todos = "CREATE TABLE todo(title TEXT NOT NULL, list TEXT NOT NULL, due_in_days INTEGER)"
try await Worker.serve(AddTodoHandler(database: try AppDatabase(path: path, migrations: [lists, todos])))
