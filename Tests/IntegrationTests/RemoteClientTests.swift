import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Synchronization
import Testing

/// A producer on a machine without the status store (INTENT_STATUS_DB points
/// nowhere) submits, reads, answers, confirms, denies, cancels and deletes:
/// the questions are read from the recorder over the broker, and the delete
/// is the recorder's to carry out — within what the producer owns.
@Suite(.timeLimit(.minutes(10)))
struct RemoteClientTests {
    @Test func everyConversationStepAndADeleteWorkWithoutTheStoreFile() async throws {
        let secure = try await SecureSandbox("remote-client")
        defer { Task { await secure.tearDown() } }
        try await secure.startServices()
        let nowhere = secure.sandbox.directory.appendingPathComponent("no-such-dir/status.sqlite").path
        func tool(_ name: String, as user: String, _ arguments: [String]) async throws -> ToolResult {
            var environment = secure.environment(as: user)
            environment["INTENT_STATUS_DB"] = nowhere
            return try await run(Paths.tool(name), arguments, environment: environment, timeout: 40)
        }

        // The Jeff question, in its words, with both Jeffs by title.
        let asked = try await tool("intent-submit", as: secure.alice, ["SendMessage", "recipients=Jeff", "content=hi", "--id", "r-jeff", "--wait"])
        #expect(asked.exitCode == 3, "\(asked)")
        #expect(asked.stdout.contains("Which Jeff do you mean: Jeff Baker or Jeff Chen?"), "\(asked.stdout)")
        #expect(asked.stdout.contains("options: Jeff Baker | Jeff Chen"), "\(asked.stdout)")
        let shown = try await tool("intent-status", as: secure.alice, ["r-jeff", "--json"])
        #expect(shown.exitCode == 3, "\(shown)")
        #expect(shown.stdout.contains(#""optionTitles":["Jeff Baker","Jeff Chen"]"#), "\(shown.stdout)")
        #expect(shown.stdout.contains(#""prompt":{"full":"Which Jeff do you mean: Jeff Baker or Jeff Chen?""#), "\(shown.stdout)")
        let answered = try await tool("intent-submit", as: secure.alice, ["--answer", "r-jeff", "recipients=Jeff Baker", "--wait"])
        #expect(answered.exitCode == 0, "\(answered)")

        // A confirmation, and a denial.
        #expect(
            try await tool("intent-submit", as: secure.alice, ["OrderSoup", "soup=tomato", "quantity=12", "--id", "r-soup", "--wait"]).exitCode == 3)
        let confirmed = try await tool("intent-submit", as: secure.alice, ["--confirm", "r-soup", "--wait"])
        #expect(confirmed.exitCode == 0, "\(confirmed)")
        #expect(
            try await tool("intent-submit", as: secure.alice, ["OrderSoup", "soup=tomato", "quantity=12", "--id", "r-deny", "--wait"]).exitCode == 3)
        let denied = try await tool("intent-submit", as: secure.alice, ["--deny", "r-deny", "--wait", "--json"])
        #expect(denied.exitCode == 1 && denied.stdout.contains(FailureCode.denied), "\(denied)")

        // A cancel of a waiting intent.
        #expect(
            try await tool("intent-submit", as: secure.alice, ["SendMessage", "recipients=Jeff", "content=hi", "--id", "r-cancel", "--wait"]).exitCode
                == 3)
        let canceled = try await tool("intent-status", as: secure.alice, ["cancel", "r-cancel"])
        #expect(canceled.exitCode == 0, "\(canceled)")

        // Deletes go through the recorder: bob's reaches nothing of alice's, and only an operator deletes everything.
        let bobs = try await tool("intent-status", as: secure.bob, ["delete", "r-soup"])
        #expect(bobs.exitCode == 0 && bobs.stdout.contains("deleted 0 intents"), "\(bobs)")
        #expect(try await tool("intent-status", as: secure.bob, ["delete", "--all"]).exitCode == 77)
        #expect(try await tool("intent-status", as: secure.alice, ["delete", "--all"]).exitCode == 77)
        let mine = try await tool("intent-status", as: secure.alice, ["delete", "r-jeff", "r-cancel"])
        #expect(mine.exitCode == 0 && mine.stdout.contains("deleted 2 intents"), "\(mine)")
        #expect(try await tool("intent-status", as: secure.alice, ["r-jeff"]).exitCode == 4, "gone for its owner")
        let store = try secure.sandbox.statusStore()
        #expect(try store.status(id: "r-jeff") == nil && store.status(id: "r-cancel") == nil)
        #expect(try store.status(id: "r-soup")?.state == .success, "bob's delete left alice's intent alone")
        let everything = try await tool("intent-status", as: secure.operatorUser, ["delete", "--all", "--json"])
        #expect(everything.exitCode == 0 && everything.stdout.contains(#"{"deleted":2}"#), "\(everything)")
        #expect(try store.list().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: nowhere), "no tool made a store where INTENT_STATUS_DB pointed")
    }

    /// A recorder of the version before deletes kept unfinished intents knew only the query `delete`, and removed them
    /// with it whatever else the request said. A client's delete that keeps them is refused by such a recorder, and
    /// says so: nothing is deleted. With `--unfinished` it asks for what that recorder does, and gets it.
    @Test func aDeleteThatKeepsUnfinishedIntentsIsRefusedByAnOlderRecorderAndDeletesNothing() async throws {
        let sandbox = try await Sandbox("older-recorder")
        defer { Task { await sandbox.tearDown() } }
        let topology = Topology()
        let url = try BrokerURL(sandbox.brokerURL)
        let declaring = try AMQPConnection(url: url)
        try topology.declareStatusRequests(on: declaring)
        declaring.close()
        // The older recorder: every request it reads is answered as it answered it, `deleteFinished` as unknown.
        let asked = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let answering = Thread {
            guard let connection = try? AMQPConnection(url: url), (try? connection.consume(topology.statusRequestQueue, noAck: true)) != nil
            else { return }
            defer { connection.close() }
            while !stop.load(ordering: .relaxed) {
                // Each request as it is delivered; the wait ends early only to look at `stop`.
                guard case .delivery(let request)? = try? connection.nextEvent(timeout: 0.2) else { continue }
                let query = (try? JSONValue.parse(request.body))?["query"]?.stringValue ?? ""
                let count = asked.withLock {
                    $0.append(query)
                    return $0.count
                }
                var reply: JSONValue =
                    query == "delete"
                    ? ["deleted": 1]
                    : [
                        "error": .string(
                            "unknown query '\(query)'; queries are show, list, dead, tally, delete, dedupe, schedules, schedule, pause, resume, unschedule"
                        ),
                        "invalid": true,
                    ]
                // Recorders older still did not say a refusal was the request's fault: the second request is answered so.
                if count == 2, case .object(var fields) = reply {
                    fields["invalid"] = nil
                    reply = .object(fields)
                }
                _ = try? connection.publish(
                    OutgoingMessage(
                        exchange: "", routingKey: request.replyTo ?? "", body: Array(reply.serialized()), persistent: false,
                        correlationID: request.correlationID))
            }
        }
        answering.start()
        defer {
            stop.store(true, ordering: .relaxed)
        }
        var environment = sandbox.environment
        environment["INTENT_STATUS_DB"] = sandbox.directory.appendingPathComponent("no-such-dir/status.sqlite").path

        for _ in 0..<2 {
            let kept = try await run(Paths.tool("intent-status"), ["delete", "d1", "d2"], environment: environment, timeout: 40)
            #expect(kept.exitCode == 64, "\(kept)")
            #expect(kept.stderr.contains("older than this client") && kept.stderr.contains("nothing was deleted"), "\(kept)")
            #expect(!kept.stdout.contains("deleted"), "\(kept)")
        }
        let all = try await run(Paths.tool("intent-status"), ["delete", "d1", "--unfinished"], environment: environment, timeout: 40)
        #expect(all.exitCode == 0 && all.stdout.contains("deleted 1 intent"), "\(all)")
        #expect(asked.withLock { $0 } == ["deleteFinished", "deleteFinished", "delete"], "the query each delete sent")
    }

    /// An id reused under another type, waited for without the store file: the recorder used to answer with the
    /// first intent's status, which the wait rightly did not take, until its time ran out; then the tool printed
    /// that intent's `success` as this submission's and exited 0. The refusal is this submission's answer.
    @Test func aRemoteWaitForARefusedSubmissionEndsWithTheRefusal() async throws {
        let secure = try await SecureSandbox("remote-refusal")
        defer { Task { await secure.tearDown() } }
        try await secure.startServices()
        var environment = secure.environment(as: secure.alice)
        environment["INTENT_STATUS_DB"] = secure.sandbox.directory.appendingPathComponent("no-such-dir/status.sqlite").path
        let first = try await run(
            Paths.tool("intent-submit"), ["SendMessage", "recipients=Alice", "content=mine", "--id", "order-17", "--wait"],
            environment: environment, timeout: 40)
        #expect(first.exitCode == 0, "\(first)")
        let otherType = try await run(
            Paths.tool("intent-submit"), ["OrderSoup", "soup=tomato", "quantity=1", "--id", "order-17", "--wait", "--timeout", "20"],
            environment: environment, timeout: 40)
        #expect(otherType.exitCode == 77 && otherType.stderr.contains("taken by a SendMessage intent"), "\(otherType)")
        #expect(!otherType.stdout.contains("success"), "\(otherType)")
    }
}
