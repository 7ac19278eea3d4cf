import Foundation
import IntentKit
import IntentStore

/// "Pay Alice 20 dollars": restricted, as SiriKit restricts payments while the
/// device is locked — handled only for submitters on the worker's allow-list
/// (`intent-worker --allow-user`), whose AMQP `user_id` RabbitMQ has verified.
public struct SendPayment: Intent, Hashable {
    public static let typeName = "SendPayment"

    public var hairdresser: String?
    public var amount: Double?
    public var currency: String?
    /// Stands in for the bank: its first `busyAttempts` answers (default 0)
    /// are "busy", a transient failure retried with backoff.
    public var busyAttempts: Int?

    public init(hairdresser: String? = nil, amount: Double? = nil, currency: String? = nil, busyAttempts: Int? = nil) {
        self.hairdresser = hairdresser
        self.amount = amount
        self.currency = currency
        self.busyAttempts = busyAttempts
    }
}

public struct SendPaymentHandler: IntentHandler {
    public static let currencies = ["EUR", "GBP", "USD"]
    let database: HairdressersDatabase

    public init(database: HairdressersDatabase) {
        self.database = database
    }

    public var ledger: (any OutcomeLedger)? { database.ledger }

    public var isRestricted: Bool { true }

    /// A busy bank is tried again after about a second.
    public var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: 3, initialDelay: 1, maxDelay: 2) }

    public func resolve(_ intent: SendPayment, context: IntentContext) async throws -> [ParameterResolution] {
        var resolutions = [try await database.resolveHairdresser(intent.hairdresser)]
        switch intent.amount {
        case nil: resolutions.append(ParameterResolution("amount", .needsValue))
        case let amount? where amount > 0 && amount <= 10_000: resolutions.append(ParameterResolution("amount", .success(.number(amount))))
        case let amount?: resolutions.append(ParameterResolution("amount", .unsupported(reason: "an amount must be above 0 and at most 10000, not \(amount)")))
        }
        let currency = (intent.currency ?? "USD").uppercased()
        resolutions.append(ParameterResolution(
            "currency", Self.currencies.contains(currency)
                ? .success(.string(currency)) : .unsupported(reason: "'\(currency)' is not one of \(Self.currencies.joined(separator: ", "))")))
        return resolutions
    }

    public func handle(_ intent: SendPayment, context: IntentContext) async throws -> HandleOutcome {
        guard let hairdresser = context.resolvedValue("hairdresser")?.stringValue, let amount = intent.amount,
              let currency = context.resolvedValue("currency")?.stringValue
        else {
            return .failure(code: FailureCode.invalidIntent, message: "the payment is incomplete")
        }
        if context.attempt <= intent.busyAttempts ?? 0 {
            throw TransientFailure("the bank is busy (attempt \(context.attempt))")
        }
        return try await database.queue.write { db in
            try OnceOnly.perform(in: db, context: context) { db in
                try db.run(
                    "INSERT INTO payment(created_at, hairdresser, amount, currency, payer, intent_id) VALUES (?, ?, ?, ?, ?, ?)",
                    [.real(Date().timeIntervalSince1970), .text(hairdresser), .real(amount), .text(currency),
                     .optional(context.userID), .text(context.intentID)])
                return .success(IntentResponse(
                    code: "success", message: "Paid \(String(format: "%.2f", amount)) \(currency) to \(hairdresser)",
                    payload: ["hairdresser": .string(hairdresser), "amount": .number(amount), "currency": .string(currency)]))
            }
        }
    }
}

extension SendPaymentHandler: IntentRendering {
    public static func render(_ view: IntentView) -> String? {
        "Pay \(view.value("amount")?.displayString ?? "?") \(view.value("currency")?.displayString ?? "USD") to \(view.value("hairdresser")?.displayString ?? "?")"
    }
}
