import Foundation
import IntentKit
import Testing

@testable import IntentStore

/// A first submission and its outcome recorded in one write become one inserted row: every column of it, and every
/// transition reported, must be what the two updates leave when each is recorded by itself.
@Suite struct SubmissionWithOutcomeTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    static let alice = StatusStore.Submitter(user: "alice")
    static let resolutions = [
        ParameterResolution("recipients", index: 0, .success(.string("Alice Smith"))),
        ParameterResolution("content", .success(.string("Running late"))),
        ParameterResolution("groupName", .notRequired),
    ]

    static func submission(
        _ id: String, type: String = "SendMessage", group: String? = nil, confirmed: [String]? = nil, by submitter: StatusStore.Submitter? = alice
    ) -> StatusStore.Update {
        var envelope = IntentEnvelope(id: id, type: type, parameters: ["recipients": ["Alice Smith"], "content": "Running late"], submittedAt: 990)
        envelope.group = group
        envelope.confirmed = confirmed
        return .queued(envelope, by: submitter)
    }

    static func outcome(
        _ id: String, _ state: IntentState = .success, type: String = "SendMessage", code: String? = "success", owner: String? = "alice",
        turn: Int = 0, view: String? = "To: Alice Smith\nRunning late"
    ) -> StatusStore.Update {
        .event(
            StatusEvent(
                id: id, type: type, state: state, at: 999, attempt: 2,
                response: code.map { IntentResponse(code: $0, message: "said \($0)", payload: ["recipients": ["Alice Smith"], "n": 1.5]) },
                resolutions: resolutions, worker: "worker-1", turn: turn, owner: owner, view: view, startedAt: 998.5))
    }

    /// Every column of every row of the tables a status update writes: the intents, the conflicts, the turns, the refusals.
    static func rows(of store: StatusStore) throws -> [String] {
        try ["intent_status", "status_conflict", "intent_turn", "intent_refusal"].flatMap { table in
            let columns = try store.database.query("SELECT name FROM pragma_table_info('\(table)') ORDER BY cid") { $0.string(0) }
            let quoted = columns.map { "'\($0)=' || quote(\($0))" }.joined(separator: " || ' ' || ")
            return try store.database.query("SELECT '\(table): ' || \(quoted) AS row FROM \(table) ORDER BY row") { $0.string(0) }
        }
    }

    /// The rows after `updates` in one `record`, checked (with the transitions reported) against each recorded by itself
    /// (the same `before` first in both).
    @discardableResult
    func compare(_ updates: [StatusStore.Update], before: [StatusStore.Update] = [], _ name: String) throws -> [String] {
        let together = try StatusStore(path: directory.file("\(name)-together.sqlite"))
        let alone = try StatusStore(path: directory.file("\(name)-alone.sqlite"))
        for update in before {
            try together.record([update], now: 1_000)
            try alone.record([update], now: 1_000)
        }
        let mergedTransitions = try together.record(updates, now: 1_000)
        var apartTransitions: [StatusStore.Transition] = []
        for (position, update) in updates.enumerated() {
            for var transition in try alone.record([update], now: 1_000) {
                transition.update = position
                apartTransitions.append(transition)
            }
        }
        #expect(mergedTransitions == apartTransitions, "\(name): transitions")
        let merged = try Self.rows(of: together)
        let apart = try Self.rows(of: alone)
        #expect(merged == apart, "\(name): rows")
        return merged
    }

    @Test func aSubmissionAndItsOutcomeAreTheRowsTheyMakeApart() throws {
        let rows = try compare([Self.submission("a"), Self.outcome("a")], "success")
        #expect(rows.count == 1 && rows[0].hasPrefix("intent_status: "))
        #expect(rows[0].contains("state='success'") && rows[0].contains("parameters='{") && rows[0].contains("queued_at=1000.0"))
        try compare([Self.submission("b", group: "salon", confirmed: ["content"]), Self.outcome("b", .failure, code: "noRecipients")], "failure")
        try compare([Self.submission("c", by: nil), Self.outcome("c", .canceled, code: nil, owner: nil, view: nil)], "canceled")
        try compare([Self.submission("d", by: StatusStore.Submitter(user: "ops", isOperator: true)), Self.outcome("d", owner: "bob")], "owners")
        try compare([Self.submission("e"), Self.outcome("e", turn: 2)], "turn")
    }

    @Test func otherUpdatesBetweenThemKeepTheirPlace() throws {
        let updates = [
            Self.submission("a"), Self.submission("b"), Self.outcome("b"), Self.outcome("a"),
            Self.submission("c"), .cancelRequested(id: "c", by: Self.alice), Self.outcome("c", .canceled, code: "canceled"),
            Self.submission("d"), Self.submission("d"), Self.outcome("d"),
        ]
        #expect(StatusStore.outcomePartners(in: updates) == [3, 2, -1, -1, -1, -1, -1, -1, 9, -1])
        let rows = try compare(updates, "mixed")
        #expect(rows.count == 4)
    }

    @Test func anOutcomeThatIsNotPlainIsWrittenByItsOwnRules() throws {
        // Another type, a dead letter, a state that is not an outcome: each written as it is alone.
        let cases: [(String, [StatusStore.Update])] = [
            ("type", [Self.submission("a"), Self.outcome("a", type: "OrderSoup")]),
            ("dead", [Self.submission("a"), Self.outcome("a", .failure, code: FailureCode.deadLettered, owner: "mallory")]),
            ("running", [Self.submission("a"), Self.outcome("a", .inProgress, code: nil)]),
            ("question", [Self.submission("a"), Self.outcome("a", .needsInput, code: nil)]),
        ]
        for (name, updates) in cases {
            #expect(StatusStore.outcomePartners(in: updates) == [-1, -1], "\(name)")
            try compare(updates, name)
        }
    }

    @Test func aCommitThatFailsLeavesNothingAndTheWriteTriedAgainIsTheSameRow() throws {
        // The recorder keeps a batch whose commit failed, unacked, and writes it again: the pairs are found anew.
        let store = try StatusStore(path: directory.file("failed.sqlite"))
        store.database.failNextCommits(1)
        #expect(throws: DatabaseError.self) { try store.record([Self.submission("a"), Self.outcome("a")], now: 1_000) }
        #expect(try Self.rows(of: store).isEmpty)
        try store.record([Self.submission("a"), Self.outcome("a")], now: 1_000)
        let alone = try StatusStore(path: directory.file("failed-alone.sqlite"))
        try alone.record([Self.submission("a")], now: 1_000)
        try alone.record([Self.outcome("a")], now: 1_000)
        #expect(try Self.rows(of: store) == Self.rows(of: alone))
    }

    @Test func aRowAlreadyThereIsUpdatedAsBefore() throws {
        // The outcome came first (the ledger delivered it before the submission), or another submitter took the id.
        try compare([Self.submission("a"), Self.outcome("a")], before: [Self.outcome("a", .failure, code: "late")], "outcome first")
        try compare([Self.submission("a"), Self.outcome("a")], before: [Self.submission("a", by: StatusStore.Submitter(user: "bob"))], "taken")
        try compare([Self.submission("a"), Self.outcome("a")], before: [Self.outcome("a", .inProgress, code: nil)], "started")
        // The pair delivered again (the recorder died after its commit, before its ack): nothing changes, no conflict.
        let again = try compare([Self.submission("a"), Self.outcome("a")], before: [Self.submission("a"), Self.outcome("a")], "again")
        #expect(again.count == 1)
        // Delivered again with another outcome: the first stands, and the other is kept as a conflict.
        let conflict = try compare(
            [Self.submission("a"), Self.outcome("a", .failure, code: "late")], before: [Self.submission("a"), Self.outcome("a")], "conflict")
        #expect(conflict.count == 2 && conflict[0].hasPrefix("intent_status: ") && conflict[1].hasPrefix("status_conflict: "))
    }
}
