import Foundation
import IntentKit
import IntentStore

/// "Pay Alice 20 dollars": restricted, as SiriKit restricts payments while the
/// device is locked — handled only for submitters on the worker's allow-list
/// (`intent-worker --allow-user`), whose AMQP `user_id` RabbitMQ has verified.
public struct SendPayment: Intent, Hashable {
    public static let typeName = "SendPayment"

    @Parameter("Whom should I pay?") public var hairdresser: Hairdresser
    @Parameter("How much?", check: { $0 > 0 && $0 <= 10_000 ? nil : "an amount must be above 0 and at most 10000, not \($0)" })
    public var amount: Double
    @Parameter public var currency: Currency?
    /// Stands in for the bank: its first `busyAttempts` answers (default 0)
    /// are "busy", a transient failure retried with backoff.
    @Parameter public var busyAttempts: Int?

    public init() {}
}

public struct SendPaymentHandler: DatabaseIntentHandler {
    public let database: AppDatabase

    public init(database: AppDatabase) {
        self.database = database
    }

    public var isRestricted: Bool { true }

    /// A busy bank is tried again after about a second.
    public var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: 3, initialDelay: 1, maxDelay: 2) }

    public func handle(_ intent: SendPayment, context: IntentContext) async throws -> IntentResponse {
        let hairdresser = intent.hairdresser.name
        let amount = intent.amount
        let currency = (intent.currency ?? .usd).rawValue
        if context.attempt <= intent.busyAttempts ?? 0 {
            throw TransientFailure("the bank is busy (attempt \(context.attempt))")
        }
        return try await database.once(context) { db in
            try db.run(
                "INSERT INTO payment(created_at, hairdresser, amount, currency, payer, intent_id) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    .real(Date().timeIntervalSince1970), .text(hairdresser), .real(amount), .text(currency),
                    .optional(context.userID), .text(context.intentID),
                ])
            return .success(
                "Paid \(String(format: "%.2f", amount)) \(currency) to \(hairdresser)",
                payload: ["hairdresser": .string(hairdresser), "amount": .number(amount), "currency": .string(currency)])
        }
    }

    public static func render(_ view: IntentView) -> String? {
        "Pay \(view.value("amount")?.displayString ?? "?") \(view.value("currency")?.displayString ?? "USD") to \(view.value("hairdresser")?.displayString ?? "?")"
    }
}
