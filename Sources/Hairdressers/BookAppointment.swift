import Foundation
import IntentKit
import IntentStore

/// "Book me with Alice at 3pm": the app calls the salon, which takes a while
/// and sometimes finds the line busy.
///
/// `callSeconds` and `busyCalls` stand in for the salon's telephone, so that
/// slow handlers and retries can be seen and tested: the call lasts
/// `callSeconds` (default 1), and the first `busyCalls` calls (default 0) find
/// the line busy, a transient failure that is retried with backoff.
public struct BookAppointment: Intent, Hashable {
    public static let typeName = "BookAppointment"

    public var hairdresser: String?
    public var time: String?
    public var callSeconds: Double?
    public var busyCalls: Int?

    public init(hairdresser: String? = nil, time: String? = nil, callSeconds: Double? = nil, busyCalls: Int? = nil) {
        self.hairdresser = hairdresser
        self.time = time
        self.callSeconds = callSeconds
        self.busyCalls = busyCalls
    }
}

/// Resolves the hairdresser like SendMessage's recipients; handle reports
/// progress while "on the phone" and records the booking once.
public struct BookAppointmentHandler: IntentHandler {
    let database: HairdressersDatabase

    public init(database: HairdressersDatabase) {
        self.database = database
    }

    public var ledger: (any OutcomeLedger)? { database.ledger }

    /// A busy line is tried again after about 1 s, then 2 s, then 2 s.
    public var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: 3, initialDelay: 1, maxDelay: 2) }

    public func resolve(_ intent: BookAppointment, context: IntentContext) async throws -> [ParameterResolution] {
        var resolutions = [try await database.resolveHairdresser(intent.hairdresser)]
        let time = intent.time?.trimmingWhitespace() ?? ""
        resolutions.append(ParameterResolution("time", time.isEmpty ? .needsValue : .success(.string(time))))
        if let seconds = intent.callSeconds, !(0...60).contains(seconds) {
            // The call cannot be hung up (see `hold`): a minute at most, so no submitter can hold a worker's slots for long.
            resolutions.append(ParameterResolution("callSeconds", .unsupported(reason: "a call lasts from 0 to 60 seconds")))
        }
        return resolutions
    }

    public func handle(_ intent: BookAppointment, context: IntentContext) async throws -> HandleOutcome {
        guard let hairdresser = context.resolvedValue("hairdresser")?.stringValue, let time = intent.time else {
            return .failure(code: FailureCode.invalidIntent, message: "the booking is incomplete")
        }
        let intentID = context.intentID
        if let booked = try await database.queue.read({ db in try OnceOnly.recordedOutcome(in: db, intentID: intentID) }) {
            return booked
        }
        if context.attempt <= intent.busyCalls ?? 0 {
            throw TransientFailure("the salon's line is busy (call \(context.attempt))")
        }
        let seconds = intent.callSeconds ?? 1
        let steps = max(1, Int((seconds / 0.5).rounded(.up)))
        for step in 0..<steps {
            context.reportProgress(fraction: Double(step) / Double(steps), message: "on the phone with \(hairdresser)'s salon")
            await Self.hold(seconds / Double(steps))
        }
        return try await database.queue.write { db in
            try OnceOnly.perform(in: db, context: context) { db in
                try db.run(
                    "INSERT INTO appointment(created_at, hairdresser, time, intent_id) VALUES (?, ?, ?, ?)",
                    [.real(Date().timeIntervalSince1970), .text(hairdresser), .text(time), .text(context.intentID)])
                return .success(IntentResponse(
                    code: "success", message: "Booked with \(hairdresser) at \(time)",
                    payload: ["hairdresser": .string(hairdresser), "time": .string(time)]))
            }
        }
    }
}

extension BookAppointmentHandler {
    /// The call goes on whatever happens to the task: a salon's telephone does
    /// not hang up when the intent's time limit passes. The booking written
    /// after a late call then finds `timedOut` decided and commits nothing.
    static func hold(_ seconds: Double) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { continuation.resume() }
        }
    }
}

extension BookAppointmentHandler: IntentRendering {
    public static func render(_ view: IntentView) -> String? {
        "Appointment with \(view.value("hairdresser")?.displayString ?? "?") at \(view.value("time")?.displayString ?? "?")"
    }
}
