import Foundation
import IntentKit
import IntentStore

/// "Book me with Alice at 3pm": the app calls the salon, which takes a while
/// and sometimes finds the line busy.
///
/// `callSeconds` and `busyCalls` stand in for the salon's telephone, so that
/// slow handlers and retries can be seen and tested: the call lasts
/// `callSeconds` (default 1, at most 60), and the first `busyCalls` calls
/// (default 0) find the line busy, a transient failure retried with backoff.
public struct BookAppointment: Intent, Hashable {
    public static let typeName = "BookAppointment"

    @Parameter("Which hairdresser would you like?") public var hairdresser: Hairdresser
    @Parameter("At what time?") public var time: String
    // The call cannot be hung up (see `hold`): a minute at most, so no submitter holds a worker's slots for long.
    @Parameter(in: 0...60) public var callSeconds: Double?
    @Parameter public var busyCalls: Int?

    public init() {}
}

/// Reports progress while "on the phone" and records the booking once.
public struct BookAppointmentHandler: DatabaseIntentHandler {
    public let database: AppDatabase

    public init(database: AppDatabase) {
        self.database = database
    }

    /// "Book Jeff for Tuesday" is resolved when it is said: which Jeff is asked
    /// while the user is there, and only the call waits for the due time.
    public var resolutionTime: ResolutionTime { .atSubmission }

    /// A busy line is tried again after about 1 s, then 2 s, then 2 s.
    public var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: 3, initialDelay: 1, maxDelay: 2) }

    public func resolve(_ intent: BookAppointment, context: IntentContext) async throws {
        if intent.time.trimmingWhitespace().isEmpty { throw intent.$time.needsValue() }
    }

    public func handle(_ intent: BookAppointment, context: IntentContext) async throws -> IntentResponse {
        let hairdresser = intent.hairdresser.name
        let time = intent.time
        if context.attempt <= intent.busyCalls ?? 0 {
            throw TransientFailure("the salon's line is busy (call \(context.attempt))")
        }
        let seconds = intent.callSeconds ?? 1
        let steps = max(1, Int((seconds / 0.5).rounded(.up)))
        for step in 0..<steps {
            context.reportProgress(fraction: Double(step) / Double(steps), message: "on the phone with \(hairdresser)'s salon")
            await Self.hold(seconds / Double(steps))
        }
        return try await database.once(context) { db in
            try db.run(
                "INSERT INTO appointment(created_at, hairdresser, time, intent_id) VALUES (?, ?, ?, ?)",
                [.real(Date().timeIntervalSince1970), .text(hairdresser), .text(time), .text(context.intentID)])
            return .success("Booked with \(hairdresser) at \(time)", payload: ["hairdresser": .string(hairdresser), "time": .string(time)])
        }
    }

    /// The call goes on whatever happens to the task: a salon's telephone does
    /// not hang up when the intent's time limit passes. The booking written
    /// after a late call then finds `timedOut` decided and commits nothing.
    static func hold(_ seconds: Double) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + max(0, seconds)) { continuation.resume() }
        }
    }

    public static func render(_ view: IntentView) -> String? {
        "Appointment with \(view.value("hairdresser")?.displayString ?? "?") at \(view.value("time")?.displayString ?? "?")"
    }
}
