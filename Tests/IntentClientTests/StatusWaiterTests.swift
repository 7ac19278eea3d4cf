import Foundation
import IntentKit
import IntentStore
import Testing

@testable import IntentClient

/// `--wait` reports only what the store holds (read-your-writes): never a
/// status made up ahead of the store.
@Suite struct StatusWaiterTests {
    static func status(_ state: IntentState, turn: Int = 0) -> IntentStatus {
        IntentStatus(id: "a", type: "SendMessage", state: state, updatedAt: 1, turn: turn)
    }

    @Test func aWaitReturnsTheFirstStoredStatusThatEndsIt() throws {
        var reads = [Self.status(.queued), Self.status(.inProgress), Self.status(.needsInput), Self.status(.success)]
        var served: [IntentStatus] = []
        let ended = try StatusWaiter.wait(
            id: "a", timeout: 10, brokerURL: nil, done: { $0.state.isTerminal },
            read: {
                let next = reads.isEmpty ? served.last : reads.removeFirst()
                if let next { served.append(next) }
                return next
            })
        #expect(ended == Self.status(.success))
        #expect(served.count == 4, "it read until the store showed the end, and no further")
    }

    @Test func aWaitThatTimesOutReportsTheLastStoredStatus() throws {
        let started = Date()
        let last = try StatusWaiter.wait(
            id: "a", timeout: 0.2, brokerURL: nil, done: { $0.state.isTerminal },
            read: {
                Self.status(.inProgress)
            })
        #expect(last == Self.status(.inProgress))
        #expect(Date().timeIntervalSince(started) >= 0.2, "it waited the whole time before giving up")
    }

    @Test func anIdTheStoreHasNotSeenIsNotYetAnAnswer() throws {
        var reads: [IntentStatus?] = [nil, nil, Self.status(.needsInput, turn: 1)]
        let answered = try StatusWaiter.wait(id: "a", timeout: 10, brokerURL: nil, done: StatusWaiter.answeredOrEnded) {
            reads.isEmpty ? nil : reads.removeFirst()
        }
        #expect(answered?.state == .needsInput && answered?.turn == 1)
    }
}
