import Foundation

// The harness of deploy/store-cost.sh: what the recorder writes for each intent, in its batches (without metrics,
// so without the transitions they count; STORE_COST_METRICS=1 counts them, as a recorder with `--metrics-file`
// does). Each batch records the submissions of `batch` new intents and the
// outcomes of the previous `batch` (as the recorder's batches mix them at a steady load), into a real SQLite
// file, committed as the recorder commits them. STORE_COST_WRITES picks another pattern:
//   alone   every update committed by itself: a light load, where each delivery comes alone, without the hold
//   held    each batch holds `batch` intents' submissions and their outcomes: a light load with the recorder's hold
//           on submissions (`StatusRecorder.Configuration.submissionHold`), which writes an intent once
let rounds = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1])! : 2
let batch = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2])! : 5
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-cost-\(getpid())")
try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
let store = try! StatusStore(path: directory.appendingPathComponent("status.sqlite").path)
let owner = StatusStore.Submitter(user: "guest")
let resolutions = [
    ParameterResolution("recipients", index: 0, .success(.string("Alice Smith"))),
    ParameterResolution("content", .success(.string("Running late"))),
    ParameterResolution("groupName", .notRequired),
]
let response = IntentResponse(
    code: "success", message: "Message sent to Alice Smith",
    payload: ["recipients": ["Alice Smith"], "content": "Running late"])
// Ids as IntentQueue's clients make them (`IntentID`: version 7, the time in milliseconds first), one a millisecond;
// COST_IDS=random records version 4 ones, as clients made them before.
let orderedIDs = ProcessInfo.processInfo.environment["COST_IDS"] != "random"
var made: UInt64 = 0
func id() -> String {
    made += 1
    let uuid = UUID().uuidString.lowercased()
    if !orderedIDs { return uuid }
    // 1_796_000_000_000 and the next 2^40 milliseconds are 11 hexadecimal digits: one 0 before them makes 12.
    let milliseconds = "0" + String(1_796_000_000_000 + made, radix: 16)
    return milliseconds.prefix(8) + "-" + milliseconds.suffix(4) + "-7" + uuid.dropFirst(15)
}
let transitions = ProcessInfo.processInfo.environment["STORE_COST_METRICS"] == "1"
var previous: [String] = []
let writes = ProcessInfo.processInfo.environment["STORE_COST_WRITES"] ?? "mixed"
guard ["mixed", "alone", "held"].contains(writes) else { fatalError("STORE_COST_WRITES: mixed, alone or held, not \(writes)") }
var now = 1_796_000_000.0
for _ in 0..<(rounds * 1000 / batch) {
    let fresh = (0..<batch).map { _ in id() }
    var updates: [StatusStore.Update] = fresh.map { id in
        .queued(
            IntentEnvelope(id: id, type: "SendMessage", parameters: ["recipients": ["Alice Smith"], "content": "Running late"], submittedAt: now),
            by: owner)
    }
    func outcome(_ id: String) -> StatusStore.Update {
        .event(
            StatusEvent(
                id: id, type: "SendMessage", state: .success, at: now, attempt: 1, response: response, resolutions: resolutions,
                worker: "worker-1", owner: "guest", startedAt: now - 0.002))
    }
    switch writes {
    case "alone":
        for update in updates + previous.map(outcome) {
            _ = try! store.record([update], now: now, reportingTransitions: transitions, durable: false)
        }
        previous = fresh
    case "held":
        updates = zip(updates, fresh.map(outcome)).flatMap { [$0, $1] }
        _ = try! store.record(updates, now: now, reportingTransitions: transitions, durable: false)
    default:
        updates += previous.map(outcome)
        _ = try! store.record(updates, now: now, reportingTransitions: transitions, durable: false)
        previous = fresh
    }
    now += 0.005
}
_ = try! store.record(
    previous.map { .event(StatusEvent(id: $0, type: "SendMessage", state: .success, at: now, attempt: 1, response: response)) }, now: now)
print(try! store.reader.counts()[.success] ?? 0)
