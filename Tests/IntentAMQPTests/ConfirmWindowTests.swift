import Testing

@testable import IntentAMQP

/// Publisher confirms by sequence number: single, multiple and out of order, with the groups they settle.
@Suite struct ConfirmWindowTests {
    @Test func singleAndMultipleConfirmsSettleExactlyWhatTheyName() {
        var tracker = ConfirmWindow<Int>()
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
        var tracker = ConfirmWindow<Int>()
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

    @Test func aConfirmReturnsTheGroupsOfWhatItSettledOnce() {
        var window = ConfirmWindow<Int>()
        window.published(1, group: 10)
        window.published(2)
        window.published(3, group: 30)
        window.published(4, group: 40)
        #expect(window.confirm(3, multiple: false) == [30])
        #expect(window.confirm(3, multiple: false) == [], "seen twice, settled once")
        #expect(window.confirm(4, multiple: true) == [10, 40], "the ones still open, in order; 2 has no group")
        #expect(window.inFlight == 0)
    }
}
