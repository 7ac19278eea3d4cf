import Foundation
import IntentKit
import IntentStore

/// "Order two tomato soups."
public struct OrderSoup: Intent, Hashable {
    public static let typeName = "OrderSoup"

    @Parameter("Which soup would you like?") public var soup: Soup
    @Parameter("How many would you like?", in: 1...20) public var quantity: Int

    public init() {}
}

/// Resolves the soup against the menu and the quantity against 1…20; confirm
/// refuses a sold-out soup and asks to confirm a big order; handle records
/// the order once.
public struct OrderSoupHandler: DatabaseIntentHandler {
    /// The failure code when the soup is on the menu but sold out.
    public static let soldOut = "soupSoldOut"
    /// Orders of more soups than this ask the user to confirm the whole order first.
    public static let confirmAbove = 10

    public let database: AppDatabase

    public init(database: AppDatabase) {
        self.database = database
    }

    public func confirm(_ intent: OrderSoup, context: IntentContext) async throws {
        let soup = intent.soup.name
        let available = try await database.read { db in
            try db.queryFirst("SELECT available FROM soup WHERE name = ?", [.text(soup)]) { $0.int(0) == 1 } ?? false
        }
        guard available else { throw IntentFailure(code: Self.soldOut, message: "\(soup) is sold out today") }
        if intent.quantity > Self.confirmAbove {
            try context.requestConfirmation(IntentDialog(full: "Order \(intent.quantity) × \(soup)?", supporting: "\(intent.quantity) soups?"))
        }
    }

    public func handle(_ intent: OrderSoup, context: IntentContext) async throws -> IntentResponse {
        let soup = intent.soup.name
        let quantity = intent.quantity
        return try await database.once(context) { db in
            let price = try db.queryFirst("SELECT price_cents FROM soup WHERE name = ?", [.text(soup)]) { $0.int(0) } ?? 0
            let total = price * quantity
            try db.run(
                "INSERT INTO soup_order(created_at, soup, quantity, total_cents, intent_id) VALUES (?, ?, ?, ?, ?)",
                [.real(Date().timeIntervalSince1970), .text(soup), .int(quantity), .int(total), .text(context.intentID)])
            return .success(
                "Your order is confirmed!",
                payload: ["soup": .string(soup), "quantity": .number(Double(quantity)), "totalCents": .number(Double(total))])
        }
    }

    /// The order line: "2 × Tomato Soup".
    public static func render(_ view: IntentView) -> String? {
        let soup = view.value("soup")?.displayString ?? "?"
        let quantity = view.value("quantity")?.displayString ?? "?"
        var line = "\(quantity) × \(soup)"
        if case .number(let cents)? = view.response?.payload?["totalCents"] {
            line += String(format: " — $%.2f", cents / 100)
        }
        return line
    }
}
