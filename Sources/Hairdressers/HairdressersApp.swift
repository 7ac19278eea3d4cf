import IntentKit

/// The example app: registers its handlers with a worker's registry.
public enum HairdressersApp {
    public static func register(into registry: inout IntentRegistry, database: HairdressersDatabase) throws {
        try registry.register(SendMessageHandler(database: database))
        try registry.register(OrderSoupHandler(database: database))
        try registry.register(BookAppointmentHandler(database: database))
        try registry.register(SendPaymentHandler(database: database))
    }

    /// The app's views of its intents, registered with each handler type.
    public static let renderers: [String: @Sendable (IntentView) -> String?] = [
        SendMessage.typeName: SendMessageHandler.render,
        OrderSoup.typeName: OrderSoupHandler.render,
        BookAppointment.typeName: BookAppointmentHandler.render,
        SendPayment.typeName: SendPaymentHandler.render,
    ]

    /// The app's view of an intent, if it has one for the type.
    public static func render(_ view: IntentView) -> String? {
        renderers[view.type]?(view)
    }
}
