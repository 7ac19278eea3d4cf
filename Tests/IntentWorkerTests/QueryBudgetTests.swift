import Testing

@testable import IntentWorker

/// Each user's share of the time the recorder spends answering remote status queries.
@Suite struct QueryBudgetTests {
    /// A user starts with a full balance, spends it on answers, is refused (with when to ask again) once it has run
    /// out, and is admitted again once it has filled back; another user's balance is their own.
    @Test func aUserPastTheirShareIsRefusedUntilTheirBalanceFillsAndOthersAreNot() throws {
        let budget = QueryBudget(share: 0.25, burst: 2)
        try budget.admit("alice", now: 100)
        budget.charge("alice", seconds: 1.5, now: 100)
        try budget.admit("alice", now: 100)
        budget.charge("alice", seconds: 1.0, now: 100)  // 0.5 s past the balance
        let refused = #expect(throws: QueryBudget.Exceeded.self) { try budget.admit("alice", now: 101) }
        // 0.5 s owed, less the 0.25 s filled in the second since: another second, and a tenth to be sure.
        #expect(refused?.retryAfter == 1.1, "\(String(describing: refused))")
        #expect(refused?.description.contains("alice's status queries") == true)
        try budget.admit("bob", now: 101)
        #expect(throws: QueryBudget.Exceeded.self) { try budget.admit("alice", now: 102) }
        try budget.admit("alice", now: 102.1)
        // Full again, never past the burst, however long it waited.
        budget.charge("alice", seconds: 2.01, now: 10_000)
        #expect(throws: QueryBudget.Exceeded.self) { try budget.admit("alice", now: 10_000) }
    }

    /// The users followed are bounded: past the capacity, the one charged the longest ago is forgotten (and starts full).
    @Test func theUsersFollowedAreBounded() throws {
        let budget = QueryBudget(share: 0.25, burst: 2, capacity: 2)
        budget.charge("alice", seconds: 3, now: 0)
        budget.charge("bob", seconds: 3, now: 1)
        budget.charge("carol", seconds: 3, now: 2)  // alice, followed since the earliest, is forgotten
        try budget.admit("alice", now: 2)
        #expect(throws: QueryBudget.Exceeded.self) { try budget.admit("bob", now: 2) }
        #expect(throws: QueryBudget.Exceeded.self) { try budget.admit("carol", now: 2) }
    }
}
