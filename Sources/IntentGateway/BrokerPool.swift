import Foundation
import IntentAMQP
import IntentClient
import IntentKit
import IntentStore
import Synchronization

/// The gateway's threads that talk to the broker: each keeps its own
/// connections (a publisher in confirm mode, a requester of the recorder) and
/// runs one job at a time, so a slow broker call never stalls the HTTP
/// thread. A connection that failed is dropped and made again by the next job.
final class BrokerPool: Sendable {
    typealias Job = @Sendable (BrokerSession) -> Void

    private let jobs = Mutex<[Job]>([])
    private let ready = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let threads: Int

    init(url: BrokerURL, topology: Topology, threads: Int) {
        self.threads = threads
        for index in 0..<threads {
            let thread = Thread.named("gw-broker-\(index)") { [self] in
                let session = BrokerSession(url: url, topology: topology)
                while true {
                    ready.wait()
                    if stopping.load(ordering: .relaxed) { break }
                    guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                    job(session)
                }
                session.close()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Runs `job` on the next free thread.
    func run(_ job: @escaping Job) {
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    /// Jobs waiting for a thread.
    var backlog: Int { jobs.withLock { $0.count } }

    /// Lets every thread finish its job and end.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        for _ in 0..<threads { ready.signal() }
    }
}

/// One pool thread's connections. Used on that thread only.
final class BrokerSession {
    let url: BrokerURL
    let topology: Topology
    private var publisher: IntentPublisher?
    private var requester: StatusRequester?

    init(url: BrokerURL, topology: Topology) {
        self.url = url
        self.topology = topology
    }

    /// Runs `body` with the publisher, connecting first when needed; a
    /// connection that fails is made again once.
    func publish(_ body: (IntentPublisher) throws(AMQPError) -> Void) throws(IntentClientError) {
        for attempt in 0..<2 {
            do throws(AMQPError) {
                let publisher: IntentPublisher
                if let existing = self.publisher {
                    publisher = existing
                } else {
                    publisher = try IntentPublisher(url: url, topology: topology)
                }
                self.publisher = publisher
                try body(publisher)
                return
            } catch {
                if error.kind == .unroutable || error.kind == .configuration { throw IntentClientError(error) }
                publisher?.close()
                publisher = nil
                if attempt == 1 || error.kind == .timeout { throw IntentClientError(error) }
            }
        }
    }

    /// Asks the recorder `query` for `user` (who must be the one the token named).
    func ask(_ query: StatusQuery, as user: String, timeout: Double = 5) throws(IntentClientError) -> StatusQuery.Answer {
        for attempt in 0..<2 {
            do {
                let requester = try self.requester ?? StatusRequester(url: url, topology: topology, timeout: 5)
                self.requester = requester
                return try StatusQuery.decodeReply(try requester.ask(query.encoded, timeout: timeout, userID: user))
            } catch let error as AMQPError {
                if error.kind == .unroutable {
                    throw IntentClientError(.unavailable, "the status recorder does not answer: \(error.detail)")
                }
                requester?.close()
                requester = nil
                if attempt == 1 || error.kind == .timeout { throw IntentClientError(error.kind == .timeout ? .timeout : .unavailable, "\(error)") }
            } catch let error as StatusQuery.Forbidden {
                throw IntentClientError(.forbidden, error.description)
            } catch let error as StatusQuery.Refused {
                // The recorder answered: the question is too large (say), not the broker away; asking again won't help.
                throw IntentClientError(.invalid, "the recorder refused the request: \(error.description)")
            } catch {
                throw IntentClientError(.unavailable, "the status recorder's answer: \(error)")
            }
        }
        throw IntentClientError(.unavailable, "the status recorder does not answer")
    }

    /// One intent's status as `user` may read it (nil: unknown to them); with `refusedSince`, as the answer to a
    /// submission made then: `user`'s refusal of it, when one came since (`StatusQuery.submission`).
    func status(id: String, as user: String, refusedSince: Double? = nil, timeout: Double = 5) throws(IntentClientError) -> IntentStatus? {
        let query = refusedSince.map { StatusQuery.submission(id: id, since: $0) } ?? .show(id: id)
        guard case .status(let status) = try ask(query, as: user, timeout: timeout) else {
            throw IntentClientError(.unavailable, "the recorder did not answer with one intent")
        }
        return status
    }

    func close() {
        publisher?.close()
        requester?.close()
        publisher = nil
        requester = nil
    }
}
