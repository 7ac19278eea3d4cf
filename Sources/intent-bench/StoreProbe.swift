import Foundation
import IntentKit
import IntentStore

/// Reads the status store and the app database read-only, as `intent-status`
/// does, while the recorder and the workers write them.
final class StoreProbe {
    private let statusPath: String
    private let appPath: String
    private var store: StatusReader?

    init(statusPath: String, appPath: String) {
        self.statusPath = statusPath
        self.appPath = appPath
    }

    private func openStore() throws -> StatusReader? {
        if let store { return store }
        guard FileManager.default.fileExists(atPath: statusPath) else { return nil }
        store = try StatusReader(path: statusPath)
        return store
    }

    /// Polls `counts()` every 50 ms until `total` intents are `success`. Any
    /// other terminal state or `needsInput` fails the phase at once, with the
    /// stored reason; so does a failed thread or service.
    func waitForSuccess(total: Int, control: PhaseControl, threads: [any Joinable], services: InProcessServices) throws {
        var seen = 0
        while true {
            if let store = try openStore() {
                let counts = try store.counts()
                seen = counts[.success] ?? 0
                if seen >= total { return }
                for state in [IntentState.failure, .needsInput, .canceled] where (counts[state] ?? 0) > 0 {
                    let example = try store.list(state: state, limit: 1).first
                    let reason = example?.response.map { "\($0.code): \($0.message ?? "")" } ?? "no reason recorded"
                    throw BenchError.failed(
                        "\(control.phase): \(counts[state] ?? 0) intent(s) ended \(state.rawValue) (e.g. \(example?.id ?? "?"): \(reason))")
                }
            }
            try control.rethrowFailure(of: threads)
            try services.check(phase: control.phase)
            try control.check("waiting for intents to succeed (\(seen) of \(total) so far)")
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// submitted_at and finished_at of every intent in the store, by id.
    func timings() throws -> [String: (submitted: Double?, finished: Double?)] {
        guard let store = try openStore() else { return [:] }
        let rows = try store.database.query("SELECT id, submitted_at, finished_at FROM intent_status") { row in
            (row.string(0), row.optionalDouble(1), row.optionalDouble(2))
        }
        var timings: [String: (submitted: Double?, finished: Double?)] = [:]
        timings.reserveCapacity(rows.count)
        for (id, submitted, finished) in rows { timings[id] = (submitted, finished) }
        return timings
    }

    /// Checks the app's effects: one `message` row and one `intent_effect` row
    /// per intent id, for exactly the ids submitted.
    func verifyEffects(ids: [String], phase: String) throws {
        let database = try Database(path: appPath, mode: .readOnly)
        defer { database.close() }
        let messages = try database.query("SELECT intent_id, count(*) FROM message GROUP BY intent_id") { row in
            (row.string(0), row.int(1))
        }
        let effects = try database.query("SELECT count(*) FROM intent_effect") { $0.int(0) }.first ?? 0
        let expected = Set(ids)
        let repeated = messages.filter { $0.1 != 1 }
        let unknown = messages.filter { !expected.contains($0.0) }
        guard repeated.isEmpty, unknown.isEmpty, messages.count == expected.count, effects == expected.count else {
            throw BenchError.failed(
                "\(phase): effects do not match: \(messages.count) intents with Message rows and \(effects) intent_effect rows "
                    + "for \(expected.count) submitted; \(repeated.count) id(s) with more than one row, \(unknown.count) unknown id(s)")
        }
    }
}
