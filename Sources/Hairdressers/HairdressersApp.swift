import IntentKit
import IntentStore

/// The example app: its handlers, over its database.
public enum HairdressersApp {
    public static func register(into registry: inout IntentRegistry, database: AppDatabase) throws {
        try registry.register(SendMessageHandler(database: database))
        try registry.register(OrderSoupHandler(database: database))
        try registry.register(BookAppointmentHandler(database: database))
        try registry.register(SendPaymentHandler(database: database))
    }
}
