import Foundation
import IntentAMQP
import IntentCLI
import IntentKit
import IntentStore

/// Where `intent-status` reads: the store file on this machine, or the
/// recorder, asked over the broker. Both give the same `IntentStatus` values.
enum StatusSource {
    case local(String)
    case remote(BrokerURL)

    var brokerURL: BrokerURL? {
        if case .remote(let url) = self { return url }
        return nil
    }

    /// The start of the message when reading fails.
    var unreachable: String {
        switch self {
        case .local: "status store unreachable"
        case .remote: "remote status unavailable"
        }
    }

    func answer(_ query: StatusQuery) throws -> StatusQuery.Answer {
        switch self {
        case .local(let path):
            return try query.answer(from: StatusStore(readingFrom: path))
        case .remote(let url):
            let requester = try StatusRequester(url: url)
            defer { requester.close() }
            return try StatusQuery.decodeReply(requester.ask(query.encoded))
        }
    }

    func status(id: String) throws -> IntentStatus? {
        if case .status(let status) = try answer(.show(id: id)) { return status }
        throw StatusQuery.Invalid(description: "the recorder answered a list to a question about one intent")
    }

    func statuses(_ query: StatusQuery) throws -> [IntentStatus] {
        if case .statuses(let statuses) = try answer(query) { return statuses }
        throw StatusQuery.Invalid(description: "the recorder answered one intent to a list query")
    }

    /// Waits until `done` holds (by default: the intent ends or needs input; see `StatusWaiter`).
    /// The events followed are the intent's owner's, as a first read tells.
    func wait(
        id: String, timeout: Double, brokerURL: BrokerURL?, done: (IntentStatus) -> Bool = StatusWaiter.answeredOrEnded
    ) throws -> IntentStatus? {
        let owner = (try? status(id: id))??.owner
        let feed = brokerURL.flatMap { StatusWaiter.feed(url: $0, owner: owner, timeout: timeout) }
        defer { feed?.close() }
        switch self {
        case .local(let path):
            return try StatusReport.read(id: id, storePath: path, timeout: timeout, brokerURL: brokerURL, feed: feed, done: done)
        case .remote(let url):
            // One connection for every question of the wait.
            let deadline = Date().addingTimeInterval(timeout)
            let requester = try StatusRequester(url: url, timeout: min(5, timeout))
            defer { requester.close() }
            var answered = false
            return try StatusWaiter.wait(id: id, timeout: timeout, brokerURL: url, feed: feed, done: done) {
                let answer: [UInt8]
                do {
                    answer = try requester.ask(StatusQuery.show(id: id).encoded, timeout: deadline.timeIntervalSinceNow)
                } catch let error as AMQPError where error.kind == .timeout && answered {
                    return nil  // a slow answer near the end of the wait: no news, the wait ends on its own
                }
                answered = true
                guard case .status(let status) = try StatusQuery.decodeReply(answer) else { return nil }
                return status
            }
        }
    }
}
