import Testing

@testable import IntentGateway

/// A connection's sleep in libmicrohttpd: woken only once the round that put it to sleep is over, and never left
/// asleep by a wake that came early.
@Suite struct ConnectionSleepTests {
    @Test func aWakeInTheRoundThatPutItToSleepResumesItWhenTheRoundIsOver() {
        var sleep = Sleep()
        sleep.fallAsleep()
        let wokenInTheRound = sleep.wake()
        #expect(!wokenInTheRound, "not within the round")
        let resumed = sleep.settle()
        #expect(resumed, "resumed once the round is over")
        #expect(!sleep.isAsleep)
    }

    @Test func aWakeAfterTheRoundResumesItAtOnce() {
        var sleep = Sleep()
        sleep.fallAsleep()
        let resumedAtTheEnd = sleep.settle()
        #expect(!resumedAtTheEnd)
        #expect(sleep.isAsleep)
        let woken = sleep.wake()
        #expect(woken)
        #expect(!sleep.isAsleep)
    }

    /// The server stopping answers a request between its look at `stopping` and the suspend: the answer's wake
    /// comes before the sleep, and the round's end resumes it.
    @Test func aWakeBeforeTheSleepResumesItWhenTheRoundIsOver() {
        var sleep = Sleep()
        let wokenEarly = sleep.wake()
        #expect(!wokenEarly)
        sleep.fallAsleep()
        let resumed = sleep.settle()
        #expect(resumed, "the early wake was kept")
        #expect(!sleep.isAsleep)
    }
}
