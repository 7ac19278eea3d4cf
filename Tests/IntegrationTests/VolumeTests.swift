import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Testing

/// Many intents through one worker: every one reaches a terminal state, once.
@Suite(.timeLimit(.minutes(10)))
struct VolumeTests {
    @Test func aThousandIntentsAllEndAndAreStoredOnce() async throws {
        let sandbox = try await Sandbox("volume")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--with-recorder", "--concurrency", "16"])

        let count = 1_000
        let ids = (0..<count).map { String(format: "volume-%04d", $0) }
        let url = try BrokerURL(sandbox.brokerURL)
        // The publisher blocks on confirms: keep it off the cooperative pool.
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread {
                continuation.resume(
                    with: Result {
                        let publisher = try IntentPublisher(url: url)
                        defer { publisher.close() }
                        for (index, id) in ids.enumerated() {
                            let parameters: [String: JSONValue] =
                                index % 4 == 3
                                ? ["soup": "Tomato Soup", "quantity": .number(Double(index % 10 + 1))]
                                : ["recipients": ["Alice Smith"], "content": .string("message \(index)")]
                            try publisher.submit(
                                IntentEnvelope(
                                    id: id, type: index % 4 == 3 ? "OrderSoup" : "SendMessage", parameters: parameters,
                                    submittedAt: Date().timeIntervalSince1970))
                        }
                    })
            }.start()
        }

        try await eventually(timeout: 120, "\(count) intents to end") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            let counts = try sandbox.statusStore().counts()
            return (counts[.success] ?? 0) + (counts[.failure] ?? 0) >= count
        }
        let store = try sandbox.statusStore()
        let statuses = try store.list(limit: 10 * count)
        #expect(statuses.count == count)
        #expect(Set(statuses.map(\.id)) == Set(ids))
        #expect(statuses.allSatisfy { $0.state == .success })

        let database = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        let rows = try database.queryFirst("SELECT count(*), count(DISTINCT intent_id) FROM message") { ($0.int(0), $0.int(1)) }
        #expect(rows?.0 == 750)
        #expect(rows?.1 == 750)
        let orders = try database.queryFirst("SELECT count(*) FROM soup_order") { $0.int(0) }
        #expect(orders == 250)
    }
}
