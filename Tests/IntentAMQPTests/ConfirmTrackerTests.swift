import Testing
@testable import IntentAMQP

/// Publisher confirms by sequence number: single, multiple and out of order.
@Suite struct ConfirmTrackerTests {
    @Test func singleAndMultipleConfirmsSettleExactlyWhatTheyName() {
        var tracker = ConfirmTracker()
        for sequence in 1...6 as ClosedRange<UInt64> { tracker.published(sequence) }
        #expect(tracker.inFlight == 6 && tracker.watermark == 0)
        tracker.confirm(3, multiple: false)
        #expect(tracker.inFlight == 5 && tracker.watermark == 0, "3 alone does not move the watermark past 1 and 2")
        tracker.confirm(2, multiple: true)
        #expect(tracker.inFlight == 3 && tracker.watermark == 3, "1 and 2, and the 3 already confirmed")
        tracker.confirm(3, multiple: false)
        #expect(tracker.inFlight == 3, "a confirm seen twice counts once")
        tracker.confirm(6, multiple: true)
        #expect(tracker.inFlight == 0 && tracker.watermark == 6)
    }

    @Test func aLongRunKeepsCountingRightAcrossCompaction() {
        var tracker = ConfirmTracker()
        var next: UInt64 = 1
        for round in 0..<100 {
            for _ in 0..<100 {
                tracker.published(next)
                next += 1
            }
            // Every other one alone, then the rest together.
            for sequence in stride(from: next - 100, to: next, by: 2) { tracker.confirm(sequence, multiple: false) }
            #expect(tracker.inFlight == 50, "round \(round)")
            tracker.confirm(next - 1, multiple: true)
            #expect(tracker.inFlight == 0 && tracker.watermark == next - 1, "round \(round)")
        }
    }
}
