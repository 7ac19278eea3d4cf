import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Testing

/// The SiriKit conversation across the queue: questions answered later,
/// confirmation, slow handlers, cancellation, restricted intents, deletion.
@Suite(.timeLimit(.minutes(10)))
struct ConversationTests {
    @Test func theJeffQuestionAnsweredLaterEndsWithOneMessageAndItsHistory() async throws {
        let sandbox = try await Sandbox("answer")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()

        let asked = try await sandbox.submit(["SendMessage", "recipients=Jeff", "content=3pm?", "--id", "jeff", "--wait"])
        #expect(asked.exitCode == 3, "\(asked)")
        let notWaiting = try await sandbox.submit(["--answer", "no-such-intent", "recipients=Jeff Baker"])
        #expect(notWaiting.exitCode == 4, "\(notWaiting)")

        let answered = try await sandbox.submit(["--answer", "jeff", "recipients=Jeff Baker", "--wait", "--json"])
        #expect(answered.exitCode == 0, "\(answered)")
        let status = try #require(try sandbox.statusStore().status(id: "jeff"))
        #expect(status.state == .success)
        #expect(status.turn == 1)
        let database = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        let rows = try database.query("SELECT hairdresser, content FROM message WHERE intent_id = 'jeff'") { [$0.string(0), $0.string(1)] }
        #expect(rows == [["Jeff Baker", "3pm?"]])

        let history = try #require(status.history)
        #expect(history.count == 1)
        #expect(history[0].question.contains { $0.result == .disambiguation(["Jeff Baker", "Jeff Chen"]) })
        #expect(history[0].answer == ["recipients": "Jeff Baker"])
        let shown = try await sandbox.status(["jeff"])
        #expect(
            shown.stdout.contains("asked: Which Jeff do you mean: Jeff Baker or Jeff Chen?")
                && shown.stdout.contains("answered: recipients=Jeff Baker"), "\(shown.stdout)")

        // An intent that is not waiting refuses an answer.
        let again = try await sandbox.submit(["--answer", "jeff", "recipients=Jeff Chen"])
        #expect(again.exitCode == 2, "\(again)")
        #expect(again.stderr.contains("not waiting for an answer"))
    }

    @Test func aBigSoupOrderWaitsForConfirmation() async throws {
        let sandbox = try await Sandbox("confirm")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()

        for id in ["big-yes", "big-no"] {
            let waiting = try await sandbox.submit(["OrderSoup", "soup=tomato", "quantity=12", "--id", id, "--wait"])
            #expect(waiting.exitCode == 3, "\(waiting)")
            #expect(waiting.stdout.contains("intent:       Order 12 × Tomato Soup?"), "\(waiting.stdout)")
        }
        let confirmed = try await sandbox.submit(["--confirm", "big-yes", "--wait"])
        #expect(confirmed.exitCode == 0, "\(confirmed)")
        #expect(try sandbox.statusStore().status(id: "big-yes")?.response?.message == "Your order is confirmed!")

        let denied = try await sandbox.submit(["--deny", "big-no", "--wait"])
        #expect(denied.exitCode == 1, "\(denied)")
        let status = try #require(try sandbox.statusStore().status(id: "big-no"))
        #expect(status.state == .failure)
        #expect(status.response?.code == FailureCode.denied)
        let orders = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
            .query("SELECT intent_id FROM soup_order ORDER BY intent_id") { $0.string(0) }
        #expect(orders == ["big-yes"])
    }

    @Test func aSlowHandlerReportsProgressAndItsTimeLimitHolds() async throws {
        let sandbox = try await Sandbox("slow")
        defer { Task { await sandbox.tearDown() } }
        // Heartbeat 5 s, an 11 s call (longer than two missed heartbeats, and than a machine's starving the process for
        // a few seconds); its limit far above it, however busy the machine, and 1 s for the second worker's type, whose
        // call lasts 10 s so that the limit wins however busy the machine.
        try await sandbox.startWorker(["--with-recorder", "--heartbeat", "5", "--time-limit", "BookAppointment=60"])
        let slow = try await sandbox.submit(
            ["BookAppointment", "hairdresser=Alice", "time=15:00", "callSeconds=11", "--id", "slow-call", "--wait", "--timeout", "90"],
            timeout: 120)
        #expect(slow.exitCode == 0, "\(slow)")
        let status = try #require(try sandbox.statusStore().status(id: "slow-call"))
        #expect(status.attempts == 1, "no redelivery")
        let log = try String(contentsOfFile: sandbox.directory.appendingPathComponent("worker-0.log").path, encoding: .utf8)
        #expect(!log.contains("connection lost"))

        let limited = try await Sandbox("slow-limit")
        defer { Task { await limited.tearDown() } }
        try await limited.startWorker(["--with-recorder", "--time-limit", "BookAppointment=1"])
        let timedOut = try await limited.submit([
            "BookAppointment", "hairdresser=Bob", "time=16:00", "callSeconds=10", "--id", "too-slow", "--wait", "--timeout", "30",
        ])
        #expect(timedOut.exitCode == 1, "\(timedOut)")
        #expect(try limited.statusStore().status(id: "too-slow")?.response?.code == FailureCode.timedOut)
        // The call goes on past the limit and then tries to book: only then can the booking be checked.
        try await eventually(timeout: 30, "the late call to return") {
            (try? String(contentsOfFile: limited.directory.appendingPathComponent("worker-0.log").path, encoding: .utf8))?
                .contains("returned after its time limit") ?? false
        }
        let booked = try Database(path: limited.appDatabasePath, mode: .readOnly).queryFirst("SELECT count(*) FROM appointment") { $0.int(0) }
        #expect(booked == 0, "a timed-out call books nothing")
    }

    @Test func progressEventsArePublishedWhileTheHandlerRuns() async throws {
        let sandbox = try await Sandbox("progress")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        // Every event the broker carries, as it comes: the store keeps only the latest of a run's updates.
        let watcher = try await sandbox.startWatcher()
        let submitted = try await sandbox.submit(
            ["BookAppointment", "hairdresser=Carol", "time=11:00", "callSeconds=3", "--id", "progress", "--wait", "--timeout", "60"],
            timeout: 90)
        #expect(submitted.exitCode == 0, "\(submitted)")
        try await eventually(timeout: 60, "the outcome on the stream") { try watcher.events(of: "progress").contains { $0.state == .success } }
        let fractions = try watcher.events(of: "progress").filter { $0.state == .inProgress }.compactMap { $0.progress?.fraction }
        #expect(Set(fractions).count >= 3, "several inProgress updates were published: \(fractions)")
        #expect(fractions == fractions.sorted(), "in the order the handler reported them: \(fractions)")
        #expect(try sandbox.statusStore().status(id: "progress")?.state == .success)
        watcher.process.interrupt()
        #expect(try await watcher.stop() == 0)
    }

    @Test func aCancelSentWhileNoWorkerRunsHolds() async throws {
        let sandbox = try await Sandbox("cancel")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startRecorderWithNoWorker()

        let queued = try await sandbox.submit(["SendMessage", "recipients=Alice", "content=never", "--id", "to-cancel"])
        #expect(queued.exitCode == 0)
        try await eventually(timeout: 60, "the submission to be recorded") {
            FileManager.default.fileExists(atPath: sandbox.statusStorePath) && (try? sandbox.statusStore().status(id: "to-cancel")) != nil
        }
        let requested = try await sandbox.status(["cancel", "to-cancel", "--timeout", "1"])
        #expect(requested.exitCode == 3, "no worker has decided it yet: \(requested)")
        #expect(requested.stdout.contains("cancel requested"), "\(requested)")
        try await eventually(timeout: 60, "the store to show the request") {
            try sandbox.statusStore().status(id: "to-cancel")?.state == .cancelRequested
        }

        try await sandbox.startWorker([], expectedConnections: 1)
        let after = try await sandbox.submit(["SendMessage", "recipients=Bob", "content=later", "--id", "after", "--wait"])
        #expect(after.exitCode == 0, "the worker serves: \(after)")
        let decided = try await sandbox.status(["to-cancel", "--wait", "--timeout", "20"])
        #expect(decided.exitCode == 1 && decided.stdout.contains("canceled"), "\(decided)")
        #expect(try sandbox.messageCount(intentID: "to-cancel") == 0, "its handler never ran")
        #expect(try sandbox.statusStore().conflictCount() == 0)

        let finished = try await sandbox.status(["cancel", "after"])
        #expect(finished.exitCode == 1, "\(finished)")
        #expect(finished.stderr.contains("had already been handled: it ended success"), "\(finished)")
    }

    @Test func aCancelDecidesAWaitingIntentAndLosesToOneAlreadyHandled() async throws {
        let sandbox = try await Sandbox("cancel-live")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()

        #expect(try await sandbox.submit(["SendMessage", "recipients=Jeff", "content=3pm?", "--id", "waiting", "--wait"]).exitCode == 3)
        let canceled = try await sandbox.status(["cancel", "waiting", "--json"])
        #expect(canceled.exitCode == 0, "\(canceled)")
        #expect(canceled.stdout.contains("\"state\":\"canceled\""), "\(canceled.stdout)")
        #expect(try sandbox.statusStore().status(id: "waiting")?.state == .canceled, "the store holds what cancel reported")
        let late = try await sandbox.submit(["--answer", "waiting", "recipients=Jeff Baker"])
        #expect(late.exitCode == 2 && late.stderr.contains("not waiting"), "\(late)")
        #expect(try sandbox.messageCount(intentID: "waiting") == 0)

        // An answer published anyway (by a client that read the store earlier) finds the cancel decided.
        let answer = IntentEnvelope(
            id: "waiting", type: "SendMessage", parameters: ["recipients": ["Jeff Baker"], "content": "3pm?"], submittedAt: 0, turn: 1,
            answers: ["recipients": ["Jeff Baker"]])
        try await publishRaw(url: sandbox.brokerURL, routingKey: "SendMessage", body: answer.encoded(), messageID: "waiting", userID: "guest")
        try await eventually(timeout: 20, "the worker to take the late answer") {
            (try? String(contentsOfFile: sandbox.directory.appendingPathComponent("worker-0.log").path, encoding: .utf8))?
                .contains("already decided (canceled)") ?? false
        }
        #expect(try sandbox.messageCount(intentID: "waiting") == 0, "the late answer sent nothing")
        #expect(try sandbox.statusStore().status(id: "waiting")?.state == .canceled)

        #expect(try await sandbox.submit(["SendMessage", "recipients=Alice", "content=done", "--id", "done", "--wait"]).exitCode == 0)
        let tooLate = try await sandbox.status(["cancel", "done", "--json"])
        #expect(tooLate.exitCode == 1, "\(tooLate)")
        #expect(tooLate.stdout.contains("\"state\":\"success\""), "the real outcome: \(tooLate.stdout)")
        #expect(try sandbox.messageCount(intentID: "done") == 1)
        #expect(try sandbox.statusStore().conflictCount() == 0)
    }

    @Test func restrictedIntentsNeedAnAllowedBrokerUser() async throws {
        let sandbox = try await Sandbox("restricted")
        defer { Task { await sandbox.tearDown() } }
        let vhost = String(sandbox.brokerURL.split(separator: "/").last ?? "")
        let suffix = UUID().uuidString.prefix(6).lowercased()
        let owner = "owner-\(suffix)"
        let stranger = "stranger-\(suffix)"
        for user in [owner, stranger] {
            for arguments in [["add_user", user, "pw-\(user)"], ["set_permissions", "-p", vhost, user, ".*", ".*", ".*"]] {
                try await TestBroker.shared.control(arguments)
            }
        }
        defer {
            Task {
                for user in [owner, stranger] { _ = try? await TestBroker.shared.control(["delete_user", user]) }
            }
        }
        try await sandbox.startWorker(["--with-recorder", "--allow-user", owner])
        func url(_ user: String) -> String { "amqp://\(user):pw-\(user)@127.0.0.1:5690/\(vhost)" }

        let paid = try await run(
            Paths.tool("intent-submit"), ["SendPayment", "hairdresser=Alice", "amount=20", "--id", "pay-ok", "--wait"],
            environment: sandbox.environment.merging(["INTENT_BROKER_URL": url(owner)]) { _, new in new })
        #expect(paid.exitCode == 0, "\(paid)")
        let refused = try await run(
            Paths.tool("intent-submit"), ["SendPayment", "hairdresser=Alice", "amount=20", "--id", "pay-no", "--wait"],
            environment: sandbox.environment.merging(["INTENT_BROKER_URL": url(stranger)]) { _, new in new })
        #expect(refused.exitCode == 1, "\(refused)")
        #expect(try sandbox.statusStore().status(id: "pay-no")?.response?.code == FailureCode.failureRequiringAppAuthentication)
        let payments = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
            .query("SELECT intent_id, payer FROM payment") { [$0.string(0), $0.string(1)] }
        #expect(payments == [["pay-ok", owner]])

        // Claiming to be the owner over the stranger's connection: the broker refuses it.
        let forged = IntentEnvelope(id: "pay-forged", type: "SendPayment", parameters: ["hairdresser": "Alice", "amount": 5], submittedAt: 0)
        await #expect(throws: (any Error).self) {
            try await publishRaw(url: url(stranger), routingKey: "SendPayment", body: forged.encoded(), messageID: "pay-forged", userID: owner)
        }
    }

    @Test func deletingByIDGroupAndAllRemovesExactlyThat() async throws {
        let sandbox = try await Sandbox("delete")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        for (id, group) in [("d1", "chat-a"), ("d2", "chat-a"), ("d3", "chat-b"), ("d4", nil), ("d5", nil)] {
            var arguments = ["OrderSoup", "soup=tomato", "quantity=1", "--id", id, "--wait"]
            if let group { arguments += ["--group", group] }
            #expect(try await sandbox.submit(arguments).exitCode == 0)
        }
        let one = try await sandbox.status(["delete", "d4", "--json"])
        #expect(one.stdout.contains("\"deleted\":1"), "\(one)")
        let group = try await sandbox.status(["delete", "--group", "chat-a"])
        #expect(group.stdout.contains("deleted 2 intents"), "\(group)")
        let remaining = try sandbox.statusStore().list(limit: 100).map(\.id).sorted()
        #expect(remaining == ["d3", "d5"])
        // An intent waiting for an answer is not finished: kept, unless asked for.
        #expect(try await sandbox.submit(["SendMessage", "recipients=Jeff", "content=hi", "--id", "d6", "--wait"]).exitCode == 3)
        let all = try await sandbox.status(["delete", "--all"])
        #expect(all.stdout.contains("deleted 2 intents; kept 1 not finished"), "\(all)")
        #expect(try sandbox.statusStore().list(limit: 100).map(\.id) == ["d6"])
        #expect(try await sandbox.status(["d3"]).exitCode == 4)
        let unfinished = try await sandbox.status(["delete", "d6", "--unfinished", "--json"])
        #expect(unfinished.stdout.contains(#"{"deleted":1}"#), "\(unfinished)")
        #expect(try sandbox.statusStore().list(limit: 100).isEmpty)
    }
}

/// The app's vocabulary and its views of intents, through the tools.
@Suite(.timeLimit(.minutes(10)))
struct VocabularyAndViewTests {
    @Test func termsAreReadAsTheAppsNamesAndCanBeListedAndCleared() async throws {
        let sandbox = try await Sandbox("vocabulary")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        let worker = Paths.tool("intent-worker")
        let set = try await run(worker, ["vocabulary", "set", "hairdresser", "Jeffy", "jeff baker"], environment: sandbox.environment)
        #expect(set.exitCode == 0 && set.stdout.contains("Jeff Baker"), "\(set)")
        let soup = try await run(worker, ["vocabulary", "set", "soup", "red soup", "Tomato Soup"], environment: sandbox.environment)
        #expect(soup.exitCode == 0)
        let wrong = try await run(worker, ["vocabulary", "set", "soup", "beet", "Borscht"], environment: sandbox.environment)
        #expect(wrong.exitCode == 1 && wrong.stderr.contains("not a soup"), "\(wrong)")

        let sent = try await sandbox.submit(["SendMessage", "recipients=Jeffy", "content=hi", "--id", "via-term", "--wait"])
        #expect(sent.exitCode == 0, "\(sent)")
        let rows = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
            .query("SELECT hairdresser FROM message WHERE intent_id = 'via-term'") { $0.string(0) }
        #expect(rows == ["Jeff Baker"])
        let ordered = try await sandbox.submit(["OrderSoup", "soup=red soup", "quantity=2", "--id", "red", "--wait"])
        #expect(ordered.exitCode == 0, "\(ordered)")

        let listed = try await run(worker, ["vocabulary", "list", "--json"], environment: sandbox.environment)
        #expect(listed.stdout.contains("\"term\":\"jeffy\"") && listed.stdout.contains("\"value\":\"Tomato Soup\""), "\(listed)")
        let cleared = try await run(worker, ["vocabulary", "clear", "jeffy"], environment: sandbox.environment)
        #expect(cleared.stdout.contains("cleared 1 term"))
        let unknown = try await sandbox.submit(["SendMessage", "recipients=Jeffy", "content=hi", "--wait"])
        #expect(unknown.exitCode == 1, "without the term, Jeffy is nobody: \(unknown)")
        let all = try await run(worker, ["vocabulary", "clear"], environment: sandbox.environment)
        #expect(all.stdout.contains("cleared 1 term"), "\(all)")
    }

    @Test func intentStatusShowsEachTypeTheWayItsAppWould() async throws {
        let sandbox = try await Sandbox("view")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()
        #expect(try await sandbox.submit(["SendMessage", "recipients=Alice,Bob", "content=Running late", "--id", "m", "--wait"]).exitCode == 0)
        #expect(try await sandbox.submit(["OrderSoup", "soup=tomato", "quantity=2", "--id", "o", "--wait"]).exitCode == 0)
        let message = try await sandbox.status(["m"])
        #expect(message.stdout.contains("│ To: Alice Smith, Bob Jones\n  │ Running late"), "\(message.stdout)")
        #expect(message.stdout.components(separatedBy: "Running late").count == 2, "the message once")
        let order = try await sandbox.status(["o"])
        #expect(order.stdout.contains("│ 2 × Tomato Soup — $9.00"), "\(order.stdout)")
    }
}
