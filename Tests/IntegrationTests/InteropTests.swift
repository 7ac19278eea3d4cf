import Foundation
import IntentStore
import Testing

/// A client in another language submits in the documented wire format.
@Suite(.timeLimit(.minutes(10)))
struct InteropTests {
    @Test func anIntentPublishedByAmqpPublishIsHandled() async throws {
        let publisher = "/usr/bin/amqp-publish"
        try #require(FileManager.default.isExecutableFile(atPath: publisher), "amqp-tools is not installed (deploy/install.sh installs it)")
        let sandbox = try await Sandbox("interop")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker()

        let id = "interop-\(UUID().uuidString.prefix(8))"
        let body = """
            {"version":1,"id":"\(id)","type":"SendMessage","submittedAt":\(Date().timeIntervalSince1970),
             "parameters":{"recipients":["Carol"],"content":"Hello from C"}}
            """
        let result = try await run(
            publisher,
            [
                "--url", sandbox.brokerURL, "--exchange", "intents", "--routing-key", "SendMessage",
                "--persistent", "--content-type", "application/json", "--body", body,
            ], timeout: 20)
        #expect(result.exitCode == 0, "\(result)")

        let waited = try await sandbox.status([id, "--wait", "--timeout", "20", "--json"])
        #expect(waited.exitCode == 0, "\(waited)")
        #expect(waited.stdout.contains("Message sent to Carol White"))
        #expect(try sandbox.messageCount(intentID: id) == 1)
    }

    @Test func aMalformedBodyWithAnIDEndsAsAFailureAndTheWorkerGoesOn() async throws {
        let publisher = "/usr/bin/amqp-publish"
        try #require(FileManager.default.isExecutableFile(atPath: publisher))
        let sandbox = try await Sandbox("malformed")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker()

        let id = "bad-\(UUID().uuidString.prefix(8))"
        let body = #"{"version":1,"id":"\#(id)","type":"OrderSoup","parameters":{"soup":"Tomato Soup","quantity":"lots"}}"#
        let published = try await run(
            publisher,
            [
                "--url", sandbox.brokerURL, "-e", "intents", "-r", "OrderSoup", "-p", "-b", body,
            ], timeout: 20)
        #expect(published.exitCode == 0, "\(published)")
        let waited = try await sandbox.status([id, "--wait", "--timeout", "20", "--json"])
        #expect(waited.exitCode == 1, "\(waited)")
        #expect(waited.stdout.contains("invalidIntent"))
        #expect(waited.stdout.contains("quantity"))

        // The same worker process still serves.
        let next = try await sandbox.submit(["OrderSoup", "soup=tomato", "quantity=1", "--wait"])
        #expect(next.exitCode == 0, "\(next)")
        #expect(worker.isRunning)
    }
}
