import IntentKit
import IntentStore
import Testing
@testable import IntentCLI

/// When the store lags behind an intent's event, `--wait` answers from the event.
@Suite struct StatusWaiterTests {
    static let event = StatusEvent(
        id: "a", type: "SendMessage", state: .success, attempt: 2,
        response: IntentResponse(code: "success", message: "Message sent"), worker: "w1", turn: 0)

    @Test func anEventBringsARunningStatusUpToDate() {
        let stored = IntentStatus(id: "a", type: "SendMessage", state: .inProgress, attempts: 1, submittedAt: 5, updatedAt: 6)
        let updated = StatusWaiter.applying(Self.event, to: stored)
        #expect(updated.state == .success && updated.terminal)
        #expect(updated.response?.message == "Message sent")
        #expect(updated.attempts == 2 && updated.worker == "w1")
        #expect(updated.submittedAt == 5, "what the event does not carry is kept")
        #expect(updated.finishedAt == Self.event.at)
    }

    @Test func aFinishedOrLaterTurnIsNotChangedByAnEvent() {
        let finished = IntentStatus(id: "a", type: "SendMessage", state: .failure, response: IntentResponse(code: "x", message: nil), updatedAt: 1)
        #expect(StatusWaiter.applying(Self.event, to: finished) == finished)
        let laterTurn = IntentStatus(id: "a", type: "SendMessage", state: .queued, updatedAt: 1, turn: 1)
        #expect(StatusWaiter.applying(Self.event, to: laterTurn) == laterTurn)
    }

    @Test func withNothingStoredTheEventIsTheStatus() {
        let status = StatusWaiter.applying(Self.event, to: nil)
        #expect(status.id == "a" && status.type == "SendMessage" && status.state == .success && status.response?.code == "success")
    }
}
