import Foundation
import IntentAMQP
import IntentKit
import Testing

@testable import IntentClient

/// What the workers would refuse is refused by the library before anything is published: an unusable id used to
/// be published, confirmed by the broker, then dead-lettered by the worker with no status (a wait then ran out).
/// The broker here is one that cannot be reached, so an answer of `.invalid` shows the check came first.
@Suite struct SubmitValidationTests {
    let client = IntentClient(brokerURL: try! BrokerURL("amqp://u:p@127.0.0.1:1/%2f"), source: .remote)

    @Test func anIDTheWorkersCannotUseIsRefusedBeforeAnythingIsPublished() throws {
        for id in [".", "..", "", "with\u{7}bell", "tick@2026-12-07T09:00:00.000Z"] {
            let envelope = IntentEnvelope(id: id, type: "SendMessage", parameters: [:], submittedAt: 0)
            #expect(performing: { try client.submit(envelope) }, throws: { ($0 as? IntentClientError)?.kind == .invalid })
        }
        // A turn of a schedule's run (an answer by its owner) is not a submission under its id: it goes to the broker.
        let answer = IntentEnvelope(id: "tick@2026-12-07T09:00:00.000Z", type: "SendMessage", parameters: [:], submittedAt: 0, turn: 1)
        #expect(performing: { try client.submit(answer) }, throws: { ($0 as? IntentClientError)?.kind == .unavailable })
    }
}
