import Foundation
import IntentKit
import IntentStore
import Testing

/// What a tool has reported is never followed by an older state from any
/// tool: `intent-submit --wait` (and `intent-status --wait --remote`), then at
/// once `intent-status <id>` locally and remotely. `INTENTQUEUE_RYW_ROUNDS`
/// (default 120) sets the rounds; `deploy/race.sh` runs 1,000 beside a
/// benchmark that keeps both cores busy.
@Suite(.timeLimit(.minutes(30)))
struct ReadYourWritesTests {
    static var rounds: Int { ProcessInfo.processInfo.environment["INTENTQUEUE_RYW_ROUNDS"].flatMap(Int.init) ?? 120 }

    /// The state, turn and code a `--json` answer reports.
    struct Seen: Equatable, CustomStringConvertible {
        var state: String
        var turn: Int
        var code: String?

        init(json: String) throws {
            let object = try #require(try JSONValue.parse(Array(json.utf8)).objectValue, "not a JSON object: \(json)")
            state = object["state"]?.stringValue ?? "?"
            turn = object["turn"]?.numberValue.map { Int($0) } ?? 0
            code = object["response"]?["code"]?.stringValue
        }

        var rank: Int { IntentState(rawValue: state)?.rank ?? -1 }
        var terminal: Bool { IntentState(rawValue: state)?.isTerminal ?? false }
        var description: String { "\(state)\(code.map { "/\($0)" } ?? "") turn \(turn)" }

        /// Whether `later`, read after this, is this state or a later one.
        func isNotBehind(_ later: Seen) -> Bool {
            if terminal { return later == self }
            if later.turn != turn { return later.turn > turn }
            return later.rank >= rank
        }
    }

    @Test func aReportedStateIsNeverFollowedByAnOlderOne() async throws {
        let sandbox = try await Sandbox("read-your-writes")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--with-recorder", "--concurrency", "8"])
        var behind: [String] = []
        var reported: [String: Int] = [:]
        for round in 0..<Self.rounds {
            let id = "ryw-\(round)"
            let submission: [String] =
                switch round % 4 {
                case 1: ["SendMessage", "recipients=Jeff", "content=3pm?"]
                case 2: ["OrderSoup", "soup=Minestrone", "quantity=1"]
                default: ["SendMessage", "recipients=Alice", "content=n\(round)"]
                }
            let waited: ToolResult
            if round % 8 == 5 {
                // The remote wait: submitted without --wait, then followed through the recorder.
                #expect(try await sandbox.submit(submission + ["--id", id]).exitCode == 0)
                waited = try await sandbox.status([id, "--wait", "--remote", "--json"])
            } else {
                waited = try await sandbox.submit(submission + ["--id", id, "--wait", "--json"])
            }
            let first = try Seen(json: String(waited.stdout.split(separator: "\n").last ?? ""))
            reported[first.state, default: 0] += 1
            let local = try Seen(json: try await sandbox.status([id, "--json"]).stdout)
            let remote = try Seen(json: try await sandbox.status([id, "--remote", "--json"]).stdout)
            for (reader, later) in [("local", local), ("remote", remote)] where !first.isNotBehind(later) {
                behind.append("\(id): --wait reported \(first), then the \(reader) read \(later)")
            }
        }
        print("read-your-writes: \(Self.rounds) rounds, reported \(reported.sorted { $0.key < $1.key }); went back \(behind.count)")
        #expect(behind.isEmpty, "\(behind.prefix(20))")
        #expect(reported["success", default: 0] > 0 && reported["needsInput", default: 0] > 0 && reported["failure", default: 0] > 0)
    }
}
