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

    /// Polls the store until `total` intents are `success`: every 50 ms once the recorder has written as many
    /// terminal states as the phase has intents (`phaseCount`), every second before that. Any other terminal state
    /// or `needsInput` fails the phase, with the stored reason; so does a failed thread or service.
    ///
    /// The probe shares the machine with what it measures: looking every 50 ms all along took about 2 % of the
    /// process's samples at full speed, from the workers and the recorder; the recorder's count is a read of a lock.
    ///
    /// A look costs the same however many intents are done: the rows not (yet) `success` are few and found through
    /// the state index, and the number of rows is the largest rowid (the run's store is new and nothing is deleted
    /// from it). Counting every `success` row instead reads the whole index again each time, from the file, since
    /// the recorder changes it between two looks: 13 % of a core at full speed by 60,000 intents, taken from what
    /// is measured.
    func waitForSuccess(
        total: Int, phaseCount: Int, control: PhaseControl, threads: [any Joinable], services: InProcessServices
    ) throws {
        var seen = 0
        var lastLook: ContinuousClock.Instant?
        while true {
            let due = services.stored.count >= phaseCount || lastLook.map { $0.duration(to: .now) >= .seconds(1) } ?? true
            if due { lastLook = .now }
            if due, let store = try openStore(), let (rows, unfinished) = try Self.progress(of: store) {
                seen = rows - unfinished.values.reduce(0, +)
                if seen >= total { return }
                for state in [IntentState.failure, .needsInput, .canceled] where (unfinished[state] ?? 0) > 0 {
                    let example = try store.list(state: state, limit: 1).first
                    let reason = example?.response.map { "\($0.code): \($0.message ?? "")" } ?? "no reason recorded"
                    throw BenchError.failed(
                        "\(control.phase): \(unfinished[state] ?? 0) intent(s) ended \(state.rawValue) (e.g. \(example?.id ?? "?"): \(reason))")
                }
            }
            try control.rethrowFailure(of: threads)
            try services.check(phase: control.phase)
            try control.check("waiting for intents to succeed (\(seen) of \(total) so far)")
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// The state index's own term, so that SQLite reads that index, which holds only the intents not `success`.
    private static let unfinishedSQL = "SELECT state, count(*) FROM intent_status WHERE \(StatusStore.unsettled) GROUP BY state"

    /// How many intents the store holds, and how many of them are in each state but `success`; nil until the
    /// recorder has made its tables.
    private static func progress(of store: StatusReader) throws -> (rows: Int, unfinished: [IntentState: Int])? {
        guard try store.hasSchema() else { return nil }
        let rows = try store.database.queryFirst("SELECT max(rowid) FROM intent_status") { $0.optionalInt(0) ?? 0 } ?? 0
        var unfinished: [IntentState: Int] = [:]
        for (state, count) in try store.database.query(unfinishedSQL, [], { ($0.string(0), $0.int(1)) }) {
            unfinished[IntentState(rawValue: state) ?? .queued, default: 0] += count
        }
        return (rows, unfinished)
    }

    /// submitted_at, started_at and finished_at of every intent in the store, by id.
    func timings() throws -> [String: (submitted: Double?, started: Double?, finished: Double?)] {
        guard let store = try openStore() else { return [:] }
        let rows = try store.database.query("SELECT id, submitted_at, started_at, finished_at FROM intent_status") { row in
            (row.string(0), row.optionalDouble(1), row.optionalDouble(2), row.optionalDouble(3))
        }
        var timings: [String: (submitted: Double?, started: Double?, finished: Double?)] = [:]
        timings.reserveCapacity(rows.count)
        for (id, submitted, started, finished) in rows { timings[id] = (submitted, started, finished) }
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
