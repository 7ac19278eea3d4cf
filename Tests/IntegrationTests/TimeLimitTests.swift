import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Testing

/// Once `timedOut` is published, the intent's effects can no longer commit,
/// and a handler that ignores its cancellation keeps its concurrency slot
/// until it really returns.
@Suite(.timeLimit(.minutes(10)))
struct TimeLimitTests {
    /// 40 calls of 5 s against a 0.1 s limit: each is reported `timedOut`
    /// at its deadline, goes on (a telephone call does not hang up), then
    /// tries to book — and finds the outcome decided. The call outlasts the
    /// limit by far, so that a busy machine cannot delay the deadline's
    /// decision past the booking (the booking would then rightly win).
    @Test func callsPastTheirLimitNeverBook() async throws {
        let sandbox = try await Sandbox("time-limit")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker(["--with-recorder", "--time-limit", "BookAppointment=0.1", "--concurrency", "8"])
        let count = 40
        let envelopes = (0..<count).map { index in
            IntentEnvelope(
                id: String(format: "late-%03d", index), type: "BookAppointment",
                parameters: ["hairdresser": "Alice", "time": "15:00", "callSeconds": 5], submittedAt: Date().timeIntervalSince1970)
        }
        try await OperationsTests.submit(envelopes, url: sandbox.brokerURL)
        let ids = envelopes.map(\.id)
        try await eventually(timeout: 120, "all \(count) to end") {
            let store = try sandbox.statusStore()
            return try ids.allSatisfy { try store.status(id: $0)?.state.isTerminal ?? false }
        }
        // Every call has returned, and so tried to write, once the worker said so for each.
        try await eventually(timeout: 60, "every late call to return (log: \(worker.logPath))") {
            worker.log.components(separatedBy: "returned after its time limit").count - 1 == count
        }
        let store = try sandbox.statusStore()
        for id in ids {
            let status = try #require(try store.status(id: id))
            #expect(
                status.state == .failure && status.response?.code == FailureCode.timedOut, "\(id): \(status.state) \(status.response?.code ?? "")")
        }
        let app = try Database(path: sandbox.appDatabasePath, mode: .readOnly)
        #expect(try app.queryFirst("SELECT count(*) FROM appointment") { $0.int(0) } == 0, "a call past its limit books nothing")
        let ledger = try app.query("SELECT state, code, count(*) FROM intent_effect GROUP BY state, code") {
            "\($0.string(0))/\($0.string(1)) \($0.int(2))"
        }
        #expect(ledger == ["failure/timedOut \(count)"])
        #expect(
            worker.log.components(separatedBy: "already decided: returning the recorded outcome").count - 1 == count,
            "each late booking found timedOut decided")
    }

    /// With one slot, a handler that runs 5 s past a 0.2 s limit holds it: the
    /// next intent starts only after that handler returned, not at the deadline.
    @Test func aLateHandlerKeepsItsSlotUntilItReturns() async throws {
        let sandbox = try await Sandbox("slot")
        defer { Task { await sandbox.tearDown() } }
        let worker = try await sandbox.startWorker(
            ["--with-recorder", "--time-limit", "BookAppointment=0.2", "--concurrency", "1", "--prefetch", "2"])
        let slow = IntentEnvelope(
            id: "holds-the-slot", type: "BookAppointment", parameters: ["hairdresser": "Bob", "time": "9:00", "callSeconds": 5],
            submittedAt: Date().timeIntervalSince1970)
        let next = IntentEnvelope(
            id: "waits-for-it", type: "SendMessage", parameters: ["recipients": ["Alice Smith"], "content": "hi"],
            submittedAt: Date().timeIntervalSince1970)
        try await OperationsTests.submit([slow, next], url: sandbox.brokerURL)
        try await eventually(timeout: 60, "both to end") {
            guard FileManager.default.fileExists(atPath: sandbox.statusStorePath) else { return false }
            return try sandbox.statusStore().status(id: "waits-for-it")?.state == .success
        }
        let timedOut = try #require(try sandbox.statusStore().status(id: "holds-the-slot"))
        #expect(timedOut.response?.code == FailureCode.timedOut)
        #expect(worker.log.contains("returned after its time limit"))
        // The call sleeps its full 5 s whatever happens: the slot was held if, and only if,
        // the next intent started no sooner than 5 s after the call did.
        let callStarted = try #require(timedOut.startedAt)
        let started = try #require(try sandbox.statusStore().status(id: "waits-for-it")?.startedAt)
        #expect(
            started >= callStarted + 5 - 0.01,
            "the next intent started \(started - callStarted) s after the 5 s call began: its slot was given away at the deadline")
    }
}
