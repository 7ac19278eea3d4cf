import IntentKit

/// The example app: registers its handlers with a worker's registry.
public enum HairdressersApp {
    public static func register(into registry: inout IntentRegistry, database: HairdressersDatabase) throws {
        try registry.register(SendMessageHandler(database: database))
        try registry.register(OrderSoupHandler(database: database))
        try registry.register(BookAppointmentHandler(database: database))
        try registry.register(SendPaymentHandler(database: database))
    }
}
