import IntentKit
import IntentStore
import Testing

@testable import IntentWorker

/// The recorder's hold on submissions: what it writes at once, what it holds back and until when, and how far it
/// lets the recorder ack.
@Suite struct SubmissionHoldTests {
    /// A submission read as delivery `tag`, after the ledger delivery `previous` (by default the one just before).
    func submission(_ id: String, tag: UInt64, previous: UInt64? = nil, dueAt: Double? = nil) -> SubmissionHold.Read {
        var envelope = IntentEnvelope(id: id, type: "SendMessage", parameters: [:], submittedAt: 1)
        envelope.dueAt = dueAt
        return SubmissionHold.Read(update: .queued(envelope, by: nil), tag: tag, previous: previous ?? tag - 1)
    }

    func outcome(_ id: String, tag: UInt64) -> SubmissionHold.Read {
        SubmissionHold.Read(update: .event(StatusEvent(id: id, type: "SendMessage", state: .success, attempt: 1)), tag: tag, previous: tag - 1)
    }

    /// Each update as "kind:id", in order.
    func names(_ reads: [SubmissionHold.Read]) -> [String] {
        reads.map { read in
            switch read.update {
            case .queued: "queued:\(read.update.intentID)"
            case .event(let event): "\(event.state.rawValue):\(event.id)"
            case .cancelRequested: "cancel:\(read.update.intentID)"
            case .requeued: "requeued:\(read.update.intentID)"
            case .refusal: "refusal:\(read.update.intentID)"
            case .turnDeadLettered: "lost answer:\(read.update.intentID)"
            }
        }
    }

    @Test func aSubmissionIsHeldUntilItsOutcomeAndThenWrittenFirstWithIt() {
        var hold = SubmissionHold()
        #expect(hold.take([submission("a", tag: 1)], now: 100, hold: 0.02, limit: 10).isEmpty)
        #expect(hold.count == 1)
        #expect(hold.nextRelease == 100.02)
        // Nothing may be acked past the delivery before the held one.
        #expect(hold.writtenThrough(1) == 0)
        // Another intent's outcome does not release it.
        #expect(names(hold.take([outcome("b", tag: 2)], now: 100.01, hold: 0.02, limit: 10)) == ["success:b"])
        #expect(hold.writtenThrough(2) == 0)
        // Its own does, before it.
        #expect(names(hold.take([outcome("a", tag: 3)], now: 100.015, hold: 0.02, limit: 10)) == ["queued:a", "success:a"])
        #expect(hold.count == 0)
        #expect(hold.nextRelease == nil)
        #expect(hold.writtenThrough(3) == 3)
    }

    @Test func aSubmissionWhoseOutcomeDoesNotComeIsWrittenWhenItsTimeIsUp() {
        var hold = SubmissionHold()
        _ = hold.take([submission("a", tag: 1), submission("b", tag: 2)], now: 100, hold: 0.02, limit: 10)
        #expect(hold.take([], now: 100.019, hold: 0.02, limit: 10).isEmpty)
        #expect(names(hold.take([], now: 100.02, hold: 0.02, limit: 10)) == ["queued:a", "queued:b"])
        #expect(hold.writtenThrough(2) == 2)
    }

    @Test func theAckBoundIsBeforeTheOldestHeldSubmission() {
        var hold = SubmissionHold()
        _ = hold.take([submission("a", tag: 5)], now: 100, hold: 0.02, limit: 10)
        _ = hold.take([outcome("x", tag: 6), submission("b", tag: 7)], now: 100.01, hold: 0.02, limit: 10)
        #expect(hold.writtenThrough(7) == 4)
        // "a" written with its outcome: "b" now bounds it.
        _ = hold.take([outcome("a", tag: 8)], now: 100.012, hold: 0.02, limit: 10)
        #expect(hold.writtenThrough(8) == 6)
        #expect(hold.nextRelease == 100.03)
    }

    /// The channel numbers the status requests it answers (unacked) with the ledger's deliveries: acking one of
    /// theirs is a channel error, which would cost the recorder its connection.
    @Test func theAckBoundIsALedgerDeliveryNeverTheTagJustBeforeTheHeldOne() {
        var hold = SubmissionHold()
        _ = hold.take([outcome("x", tag: 3)], now: 100, hold: 0.02, limit: 10)
        // Tags 4 and 5 were status requests.
        _ = hold.take([submission("a", tag: 6, previous: 3)], now: 100.001, hold: 0.02, limit: 10)
        #expect(hold.writtenThrough(6) == 3)
        // Nothing read before it: nothing to ack.
        var first = SubmissionHold()
        _ = first.take([submission("b", tag: 2, previous: 0)], now: 100, hold: 0.02, limit: 10)
        #expect(first.writtenThrough(2) == 0)
    }

    @Test func allWritesEveryHeldSubmissionAndHoldsNone() {
        var hold = SubmissionHold()
        _ = hold.take([submission("a", tag: 1)], now: 100, hold: 0.02, limit: 10)
        #expect(names(hold.take([submission("b", tag: 2)], now: 100.001, hold: 0.02, limit: 10, all: true)) == ["queued:a", "queued:b"])
        #expect(hold.count == 0)
        #expect(hold.writtenThrough(2) == 2)
    }

    @Test func whatIsNotHeld() {
        var hold = SubmissionHold()
        // A submission followed, in the same reads, by an update of its intent; a scheduled intent (its release is
        // timed from the store); anything other than a submission.
        let reads = [
            submission("a", tag: 1), SubmissionHold.Read(update: .cancelRequested(id: "a", by: nil), tag: 2, previous: 1),
            submission("s", tag: 3, dueAt: 200), outcome("o", tag: 4),
        ]
        #expect(names(hold.take(reads, now: 100, hold: 0.02, limit: 10)) == ["queued:a", "cancel:a", "queued:s", "success:o"])
        #expect(hold.count == 0)
        // With no hold, nothing is held.
        #expect(names(hold.take([submission("b", tag: 5)], now: 100, hold: 0, limit: 10)) == ["queued:b"])
        #expect(hold.count == 0)
    }

    @Test func anUpdateOfAHeldIntentReleasesItFirstWhateverItIs() {
        var hold = SubmissionHold()
        _ = hold.take([submission("a", tag: 1)], now: 100, hold: 0.02, limit: 10)
        let cancel = SubmissionHold.Read(update: .cancelRequested(id: "a", by: nil), tag: 2, previous: 1)
        #expect(names(hold.take([cancel], now: 100.001, hold: 0.02, limit: 10)) == ["queued:a", "cancel:a"])
        // A second submission of the same id: the first goes out, the second is held in its place.
        _ = hold.take([submission("b", tag: 3)], now: 100.002, hold: 0.02, limit: 10)
        #expect(names(hold.take([submission("b", tag: 4)], now: 100.003, hold: 0.02, limit: 10)) == ["queued:b"])
        #expect(hold.count == 1)
        #expect(hold.writtenThrough(4) == 3)
    }

    @Test func noMoreThanTheLimitIsHeld() {
        var hold = SubmissionHold()
        let reads = (1...5).map { submission("i\($0)", tag: UInt64($0)) }
        // The latest are held, the earlier written at once.
        #expect(names(hold.take(reads, now: 100, hold: 0.02, limit: 3)) == ["queued:i1", "queued:i2"])
        #expect(hold.count == 3)
        #expect(hold.writtenThrough(5) == 2)
        #expect(names(hold.take([submission("j", tag: 6)], now: 100.001, hold: 0.02, limit: 3)) == ["queued:j"])
    }
}
