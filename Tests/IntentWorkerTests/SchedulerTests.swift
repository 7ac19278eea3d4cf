import Foundation
import IntentKit
import IntentStore
import Testing

@testable import IntentWorker

/// Which due times of a schedule a scheduler submits.
@Suite struct SchedulerTests {
    let path = NSTemporaryDirectory() + "scheduler-\(UUID().uuidString).sqlite"

    /// A scheduler counted a schedule's due times from when it first read it: one made with the default first due
    /// time (the next whole second) and read after that time lost its first run, three times in four with readings
    /// every 2 s. And one restarted caught up on the due times of a pause just ended. The store now says since when
    /// each schedule is active (made, or last resumed), and every scheduler counts from then.
    @Test func aSchedulesDueTimesCountFromWhenTheStoreMadeOrResumedIt() throws {
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = try StatusStore(path: path)
        let hourly = Schedule(name: "hourly", owner: "alice", type: "SendMessage", parameters: [:], every: 3_600, starts: 1_001)
        #expect(try store.addSchedule(hourly, now: 1_000.3))
        let made = try #require(try store.reader.schedules().first)
        #expect(made.activeSince == 1_000.3)
        // First read at 1_002.5, after its first due time: that time is submitted all the same.
        let first = Scheduler.countedFrom(made, now: 1_002.5, catchUp: 60, seenActiveSince: 1_002.5)
        #expect(made.dueTimes(after: first, upTo: 1_002.5) == [1_001])
        // Made after its first due time (a start asked for as the next whole second, reaching a busy recorder
        // seconds later): that time is its first all the same; one a minute back is not caught up on.
        let raced = Schedule(name: "raced", owner: "alice", type: "SendMessage", parameters: [:], every: 3_600, starts: 1_001)
        #expect(try store.addSchedule(raced, now: 1_004.5))
        let back = Schedule(name: "back", owner: "alice", type: "SendMessage", parameters: [:], every: 3_600, starts: 941)
        #expect(try store.addSchedule(back, now: 1_001.2))
        let read = Dictionary(uniqueKeysWithValues: try store.reader.schedules().map { ($0.name, $0) })
        let racedRead = try #require(read["raced"])
        let backRead = try #require(read["back"])
        #expect(racedRead.activeSince == 1_001 && backRead.activeSince == 1_001.2 - Schedule.startAllowance)
        #expect(racedRead.dueTimes(after: Scheduler.countedFrom(racedRead, now: 1_003, catchUp: 60, seenActiveSince: nil), upTo: 1_003) == [1_001])
        #expect(backRead.dueTimes(after: Scheduler.countedFrom(backRead, now: 1_003, catchUp: 60, seenActiveSince: nil), upTo: 1_003).isEmpty)
        #expect(try store.removeSchedule("raced", owner: "alice") && store.removeSchedule("back", owner: "alice"))
        // As a remote answer carries it.
        #expect(try StatusQuery.decodeReply(StatusQuery.reply(.success(.schedules([made])))) == .schedules([made]))

        // Paused before 4_601 and resumed just after: a scheduler restarted then does not catch up on 4_601.
        #expect(try store.setSchedule("hourly", paused: true, owner: "alice", now: 4_000))
        #expect(try store.reader.schedules().first?.activeSince == 1_000.3, "a pause does not change it")
        #expect(try store.setSchedule("hourly", paused: false, owner: "alice", now: 4_610))
        let resumed = try #require(try store.reader.schedules().first)
        #expect(resumed.activeSince == 4_610)
        let restarted = Scheduler.countedFrom(resumed, now: 4_620, catchUp: 60, seenActiveSince: nil)
        #expect(resumed.dueTimes(after: restarted, upTo: 4_620).isEmpty, "4_601 fell in the pause")
        #expect(resumed.dueTimes(after: Scheduler.countedFrom(resumed, now: 8_210, catchUp: 60, seenActiveSince: nil), upTo: 8_210) == [8_201])
        #expect(try store.setSchedule("hourly", paused: false, owner: "alice", now: 5_000))
        #expect(try store.reader.schedules().first?.activeSince == 4_610, "resuming a schedule that runs changes nothing")
        // Given again as it is (a deployment applying its schedules once more), it keeps its time: a scheduler that
        // was down meanwhile still catches up. Given with another period, it is a schedule made now.
        #expect(try store.addSchedule(hourly, now: 8_205))
        #expect(try store.reader.schedules().first?.activeSince == 4_610)
        var otherWords = hourly
        otherWords.parameters = ["content": "other words"]
        #expect(try store.addSchedule(otherWords, now: 8_205.5))
        #expect(try store.reader.schedules().first?.activeSince == 8_205.5 - Schedule.startAllowance, "other parameters: made now")
        var halfHourly = hourly
        halfHourly.every = 1_800
        #expect(try store.addSchedule(halfHourly, now: 8_206))
        #expect(try store.reader.schedules().first?.activeSince == 8_206 - Schedule.startAllowance)

        // Schedules from a store that does not say (an older recorder's): from when this scheduler saw it active.
        var older = resumed
        older.activeSince = nil
        #expect(Scheduler.countedFrom(older, now: 4_620, catchUp: 60, seenActiveSince: 4_615) == 4_615)
        #expect(Scheduler.countedFrom(older, now: 4_620, catchUp: 60, seenActiveSince: nil) == 4_560)
    }

    /// A scheduler that could not submit for longer than its catch-up (the broker or the recorder away for minutes)
    /// dropped every due time of that while, without a word: a daily run due during a three-minute outage did not run
    /// that day. It now submits the latest of the due times it missed (one, not an hour's worth of a schedule that
    /// runs every minute), and says how many it missed; due times of a pause are not missed ones.
    @Test func dueTimesMissedInAnOutageLongerThanTheCatchUpGiveOneRunTheLatest() {
        let daily = Schedule(name: "daily", owner: "alice", type: "SendMessage", parameters: [:], every: 86_400, starts: 32_400, activeSince: 0)
        // The last run this scheduler submitted was yesterday's 09:00; the broker was away from 08:59 to 09:03.
        let yesterday = 32_400.0
        let today = yesterday + 86_400
        let late = Scheduler.dueNow(daily, now: today + 190, catchUp: 60, seenActiveSince: nil, lastDue: yesterday)
        #expect(late.due == [today] && late.missed == 1, "\(late)")
        // Without one submitted before (a scheduler just started), the catch-up alone says.
        #expect(Scheduler.dueNow(daily, now: today + 190, catchUp: 60, seenActiveSince: nil, lastDue: nil).due.isEmpty)
        // Within the catch-up, nothing was missed: the due time is submitted as any other.
        let onTime = Scheduler.dueNow(daily, now: today + 30, catchUp: 60, seenActiveSince: nil, lastDue: yesterday)
        #expect(onTime.due == [today] && onTime.missed == 0)
        // Submitted already: nothing more.
        #expect(Scheduler.dueNow(daily, now: today + 190, catchUp: 60, seenActiveSince: nil, lastDue: today) == ([], 0))

        // Every minute, an hour away: one run for the hour's 60 missed, then the catch-up's own.
        let minutely = Schedule(name: "minutely", owner: "alice", type: "SendMessage", parameters: [:], every: 60, starts: 0, activeSince: 0)
        let back = Scheduler.dueNow(minutely, now: 7_230, catchUp: 60, seenActiveSince: nil, lastDue: 3_600)
        #expect(back.due == [7_140, 7_200] && back.missed == 59, "\(back)")
        // Resumed (or made) after the outage began: the due times before that are a pause's, not missed.
        var resumed = minutely
        resumed.activeSince = 7_150
        let afterPause = Scheduler.dueNow(resumed, now: 7_230, catchUp: 60, seenActiveSince: nil, lastDue: 3_600)
        #expect(afterPause.due == [7_200] && afterPause.missed == 0, "\(afterPause)")
    }
}
