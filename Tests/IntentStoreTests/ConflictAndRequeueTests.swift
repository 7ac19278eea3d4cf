import Foundation
import IntentKit
import Testing

@testable import IntentStore

/// Outcomes that disagree are kept aside; a requeued dead letter reopens.
@Suite struct ConflictAndRequeueTests {
    let directory: TemporaryDirectory
    let path: String

    init() throws {
        directory = try TemporaryDirectory()
        path = directory.file("status.sqlite")
    }

    static func terminal(_ id: String, _ state: IntentState, code: String) -> StatusStore.Update {
        .event(StatusEvent(id: id, type: "SendMessage", state: state, attempt: 1, response: IntentResponse(code: code, message: code)))
    }

    @Test func aDisagreeingTerminalEventIsKeptAsAConflictAndNotApplied() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.terminal("a", .success, code: "success")])
        try store.record([Self.terminal("a", .success, code: "success")])
        #expect(try store.reader.conflictCount() == 0, "the same outcome twice is no conflict")
        try store.record([Self.terminal("a", .failure, code: "handlerError")])
        #expect(try store.reader.conflictCount() == 1)
        #expect(try store.reader.status(id: "a")?.state == .success)
    }

    @Test func aDeadLetterAfterAnOutcomeIsNotAConflict() throws {
        let store = try StatusStore(path: path)
        try store.record([Self.terminal("b", .success, code: "success")])
        try store.record([Self.terminal("b", .failure, code: FailureCode.deadLettered)])
        #expect(try store.reader.conflictCount() == 0)
        #expect(try store.reader.status(id: "b")?.state == .success)
    }

    @Test func requeueReopensOnlyADeadLetteredFailure() throws {
        let store = try StatusStore(path: path)
        let envelope = IntentEnvelope(id: "c", type: "SendMessage", parameters: [:], submittedAt: 1)
        try store.record([Self.terminal("c", .failure, code: FailureCode.deadLettered)])
        #expect(try store.reader.deadLettered().map(\.id) == ["c"])
        try store.record([.requeued(envelope)])
        #expect(try store.reader.status(id: "c")?.state == .queued)
        #expect(try store.reader.status(id: "c")?.response == nil)
        #expect(try store.reader.deadLettered().isEmpty)

        let other = IntentEnvelope(id: "d", type: "SendMessage", parameters: [:], submittedAt: 1)
        try store.record([Self.terminal("d", .failure, code: "soupSoldOut"), .requeued(other)])
        #expect(try store.reader.status(id: "d")?.state == .failure, "only a dead letter reopens")
    }
}
