import Foundation
import IntentKit
import IntentStore
import Testing

/// The seed's story, end to end through the executables, a real broker and real SQLite files.
@Suite(.timeLimit(.minutes(10)))
struct StoryTests {
    @Test func theFiveStoriesEndAsTheAppSays() async throws {
        let sandbox = try await Sandbox("stories")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()

        // 1. Two hairdressers: two Message rows.
        let two = try await sandbox.submit([
            "SendMessage", "recipients=Alice,Bob", "content=Running late, sorry", "--id", "story-1", "--wait", "--json",
        ])
        #expect(two.exitCode == 0, "\(two)")
        #expect(two.stdout.contains("\"state\":\"success\""))
        #expect(try sandbox.messageCount(intentID: "story-1") == 2)

        // 2. "Jeff": needsInput listing both Jeffs, nothing stored.
        let jeff = try await sandbox.submit(["SendMessage", "recipients=Jeff", "content=3pm?", "--id", "story-2", "--wait"])
        #expect(jeff.exitCode == 3, "\(jeff)")
        let jeffStatus = try #require(try sandbox.statusStore().status(id: "story-2"))
        #expect(jeffStatus.state == .needsInput)
        let question = try #require(jeffStatus.resolutions?.first { $0.parameter == "recipients" })
        #expect(question.result == .disambiguation(["Jeff Baker", "Jeff Chen"]))
        #expect(jeff.stdout.contains("Jeff Baker | Jeff Chen"))
        #expect(try sandbox.messageCount(intentID: "story-2") == 0)

        // 3. The group "co" resolves to coworkers.
        let group = try await sandbox.submit(["SendMessage", "groupName=co", "content=Lunch", "--id", "story-3", "--wait"])
        #expect(group.exitCode == 0, "\(group)")
        let groupStatus = try #require(try sandbox.statusStore().status(id: "story-3"))
        #expect(groupStatus.resolutions?.first { $0.parameter == "groupName" }?.result == .success("coworkers"))
        #expect(try sandbox.messageCount(intentID: "story-3") == 3)

        // 4. Soup order confirmed.
        let soup = try await sandbox.submit(["OrderSoup", "soup=tomato", "quantity=2", "--id", "story-4", "--wait", "--json"])
        #expect(soup.exitCode == 0, "\(soup)")
        #expect(soup.stdout.contains("Your order is confirmed!"))

        // 5. Sold out: failure with the app's own code.
        let soldOut = try await sandbox.submit(["OrderSoup", "soup=Minestrone", "quantity=1", "--id", "story-5", "--wait"])
        #expect(soldOut.exitCode == 1, "\(soldOut)")
        let soldOutStatus = try #require(try sandbox.statusStore().status(id: "story-5"))
        #expect(soldOutStatus.state == .failure)
        #expect(soldOutStatus.response?.code == "soupSoldOut")

        // intent-status agrees with the store, with the same exit codes.
        #expect(try await sandbox.status(["story-1"]).exitCode == 0)
        #expect(try await sandbox.status(["story-2"]).exitCode == 3)
        #expect(try await sandbox.status(["story-5"]).exitCode == 1)
        let listed = try await sandbox.status(["list", "--state", "needsInput", "--json"])
        #expect(listed.exitCode == 0)
        #expect(listed.stdout.contains("story-2") && !listed.stdout.contains("story-1"))
    }

    /// A resubmitted id that already ended repeats none of its effects, and the
    /// status stream shows nothing after its end: the worker publishes the
    /// recorded outcome again, without a fresh `inProgress`. (The worker publishes
    /// every run's `inProgress` at once here, so the first run is seen to start.)
    @Test func resubmittingAFinishedIDRepeatsNoEffectAndNoStateAfterItsEnd() async throws {
        let sandbox = try await Sandbox("same-id")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker(["--with-recorder", "--started-event-delay", "0"])
        let watch = try await sandbox.startWatcher()
        defer { watch.process.interrupt() }

        let arguments = ["SendMessage", "recipients=Alice,Bob", "content=Once only", "--id", "twice", "--wait"]
        let first = try await sandbox.submit(arguments)
        #expect(first.exitCode == 0, "\(first)")
        #expect(try sandbox.messageCount(intentID: "twice") == 2)
        for _ in 0..<2 {
            let again = try await sandbox.submit(arguments)
            #expect(again.exitCode == 0, "\(again)")
        }
        try await eventually(timeout: 20, "both resubmissions to be taken (log: \(worker.logPath))") {
            worker.log.components(separatedBy: "already decided (success)").count - 1 == 2
        }
        try await eventually(timeout: 60, "the republished outcomes on the stream") { try watch.events(of: "twice").count == 4 }
        let states = try watch.events(of: "twice").map(\.state)
        #expect(states == [.inProgress, .success, .success, .success], "\(states)")
        #expect(try sandbox.messageCount(intentID: "twice") == 2, "the effects happened once")
        #expect(try sandbox.statusStore().status(id: "twice")?.state == .success)
        #expect(try sandbox.statusStore().conflictCount() == 0)
    }
}
