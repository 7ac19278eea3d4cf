import Foundation
import IntentKit
import IntentStore

/// "Order two tomato soups."
public struct OrderSoup: Intent, Hashable {
    public static let typeName = "OrderSoup"

    public var soup: String?
    public var quantity: Int?

    public init(soup: String? = nil, quantity: Int? = nil) {
        self.soup = soup
        self.quantity = quantity
    }
}

/// Resolves the soup against the menu and the quantity against 1…20; confirm
/// refuses a sold-out soup; handle records the order once.
public struct OrderSoupHandler: IntentHandler {
    public static let quantities = 1...20
    /// The failure code when the soup is on the menu but sold out.
    public static let soldOut = "soupSoldOut"

    let database: HairdressersDatabase

    public init(database: HairdressersDatabase) {
        self.database = database
    }

    public var ledger: (any OutcomeLedger)? { database.ledger }

    public func resolve(_ intent: OrderSoup, context: IntentContext) async throws -> [ParameterResolution] {
        let (menu, words) = try await database.queue.read { db in
            (try db.query("SELECT name FROM soup ORDER BY name") { $0.string(0) }, try Vocabulary.terms(.soup, in: db))
        }
        var resolutions: [ParameterResolution] = []
        if let soup = intent.soup, !soup.trimmingWhitespace().isEmpty {
            let wanted = Vocabulary.read(soup, words).lowercased().trimmingWhitespace()
            let exact = menu.filter { $0.lowercased() == wanted }
            let matches = exact.isEmpty ? menu.filter { $0.lowercased().contains(wanted) } : exact
            let result: ResolutionResult =
                switch matches.count {
                case 0: .unsupported(reason: "'\(soup)' is not on the menu")
                case 1: .success(.string(matches[0]))
                default: .disambiguation(matches.map(JSONValue.string))
                }
            resolutions.append(ParameterResolution("soup", result))
        } else {
            resolutions.append(ParameterResolution("soup", .needsValue))
        }
        if let quantity = intent.quantity {
            resolutions.append(ParameterResolution(
                "quantity",
                Self.quantities.contains(quantity)
                    ? .success(.number(Double(quantity)))
                    : .unsupported(reason: "the quantity must be from \(Self.quantities.lowerBound) to \(Self.quantities.upperBound), not \(quantity)")))
        } else {
            resolutions.append(ParameterResolution("quantity", .needsValue))
        }
        return resolutions
    }

    public func confirm(_ intent: OrderSoup, context: IntentContext) async throws -> ConfirmOutcome {
        guard let soup = context.resolvedValue("soup")?.stringValue else {
            return .failure(code: FailureCode.invalidIntent, message: "no soup was resolved")
        }
        let available = try await database.queue.read { db in
            try db.queryFirst("SELECT available FROM soup WHERE name = ?", [.text(soup)]) { $0.int(0) == 1 } ?? false
        }
        guard available else { return .failure(code: Self.soldOut, message: "\(soup) is sold out today") }
        if let quantity = intent.quantity, quantity > Self.confirmAbove {
            return .confirmationRequired(prompt: "Order \(quantity) × \(soup)?")
        }
        return .ready
    }

    /// Orders of more soups than this ask the user to confirm the whole order first.
    public static let confirmAbove = 10

    public func handle(_ intent: OrderSoup, context: IntentContext) async throws -> HandleOutcome {
        guard let soup = context.resolvedValue("soup")?.stringValue, let quantity = intent.quantity else {
            return .failure(code: FailureCode.invalidIntent, message: "the order is incomplete")
        }
        return try await database.queue.write { db in
            try OnceOnly.perform(in: db, context: context) { db in
                let price = try db.queryFirst("SELECT price_cents FROM soup WHERE name = ?", [.text(soup)]) { $0.int(0) } ?? 0
                let total = price * quantity
                try db.run(
                    "INSERT INTO soup_order(created_at, soup, quantity, total_cents, intent_id) VALUES (?, ?, ?, ?, ?)",
                    [.real(Date().timeIntervalSince1970), .text(soup), .int(quantity), .int(total), .text(context.intentID)])
                return .success(IntentResponse(
                    code: "success", message: "Your order is confirmed!",
                    payload: ["soup": .string(soup), "quantity": .number(Double(quantity)), "totalCents": .number(Double(total))]))
            }
        }
    }
}

extension OrderSoupHandler: IntentRendering {
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
