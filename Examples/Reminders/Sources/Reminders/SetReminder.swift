import IntentQueue

/// "Remind me to call the salon in 30 minutes."
public struct SetReminder: Intent {
    public static let typeName = "SetReminder"
    @Parameter("What should I remind you of?") public var text: String
    @Parameter("In how many minutes?", in: 1...10_080) public var inMinutes: Int
    public init() {}
}

/// Stores the reminder once; one more than a day away is confirmed first.
public struct SetReminderHandler: DatabaseIntentHandler {
    public let database: AppDatabase

    public init(database: AppDatabase) {
        self.database = database
    }

    public func confirm(_ intent: SetReminder, context: IntentContext) async throws {
        if intent.inMinutes > 1_440 { try context.requestConfirmation("Remind you in \(intent.inMinutes / 1_440) days?") }
    }

    public func handle(_ intent: SetReminder, context: IntentContext) async throws -> IntentResponse {
        try await database.once(context) { db in
            try db.run("INSERT INTO reminder VALUES (?, ?)", [.text(intent.text), .int(intent.inMinutes)])
            return .success("I'll remind you to \(intent.text)", payload: ["inMinutes": .number(Double(intent.inMinutes))])
        }
    }

    public static let migrations = ["CREATE TABLE reminder(text TEXT NOT NULL, in_minutes INTEGER NOT NULL)"]
}
