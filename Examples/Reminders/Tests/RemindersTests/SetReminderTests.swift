import Foundation
import IntentQueue
import IntentTesting
import Reminders
import Testing

/// The handler through the real pipeline, ledger and acks, without a broker.
@Suite struct SetReminderTests {
    let database: AppDatabase
    let worker: TestWorker

    init() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("reminders-\(UUID().uuidString).sqlite").path
        database = try AppDatabase(path: path, migrations: SetReminderHandler.migrations)
        worker = try TestWorker(SetReminderHandler(database: database))
    }

    func reminders() async throws -> Int {
        try await database.read { db in try db.queryFirst("SELECT count(*) FROM reminder") { $0.int(0) } ?? 0 }
    }

    @Test func aMissingTimeIsAskedInWordsAndTheAnswerSetsTheReminder() async throws {
        let asked = try await worker.submit("SetReminder", ["text": "call the salon"])
        #expect(asked.state == .needsInput)
        #expect(asked.resolutions?.first { $0.parameter == "inMinutes" }?.prompt == "In how many minutes?")

        let done = try await worker.answer(asked.id, ["inMinutes": 30])
        #expect(done.state == .success)
        #expect(done.response?.message == "I'll remind you to call the salon")
        #expect(try await reminders() == 1)
        await worker.stop()
    }

    @Test func aReminderDaysAwayIsConfirmedFirstAndADenialSetsNothing() async throws {
        let asked = try await worker.submit("SetReminder", ["text": "renew the lease", "inMinutes": 4_320])
        #expect(asked.resolutions?.first { $0.parameter == "intent" }?.prompt == "Remind you in 3 days?")
        #expect(try await worker.deny(asked.id).response?.code == FailureCode.denied)
        #expect(try await reminders() == 0)

        let again = try await worker.submit("SetReminder", ["text": "renew the lease", "inMinutes": 4_320])
        #expect(try await worker.confirm(again.id).state == .success)
        #expect(try await reminders() == 1)
        await worker.stop()
    }

    @Test func aRedeliveredReminderIsSetOnceAndATimeOutOfRangeIsUnsupported() async throws {
        let first = try await worker.submit("SetReminder", ["text": "stretch", "inMinutes": 5], id: "r-1")
        let second = try await worker.submit("SetReminder", ["text": "stretch", "inMinutes": 5], id: "r-1")
        #expect(first.state == .success && second.response == first.response)
        #expect(try await reminders() == 1)

        let never = try await worker.submit("SetReminder", ["text": "later", "inMinutes": 0])
        #expect(never.response?.code == FailureCode.unsupportedParameter)
        await worker.stop()
    }
}
