import Foundation
import IntentKit
import Synchronization
import Testing

@testable import IntentWorker

/// `ServiceGroup` without signals: it runs every service, and the first to
/// fail stops the others in reverse order and is rethrown.
@Suite(.timeLimit(.minutes(10)))
struct ServiceGroupTests {
    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        func append(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// Runs until stopped (or fails at once), noting when it was stopped.
    final class Probe: Service {
        let name: String
        let failing: Bool
        let log: Log
        private let stopped = Atomic<Bool>(false)

        init(_ name: String, failing: Bool = false, log: Log) {
            self.name = name
            self.failing = failing
            self.log = log
        }

        struct Failed: Error {}

        func run() async throws {
            if failing { throw Failed() }
            while !stopped.load(ordering: .relaxed) { try? await Task.sleep(for: .milliseconds(5)) }
        }

        func stop() {
            guard !stopped.exchange(true, ordering: .relaxed) else { return }
            log.append(name)
        }
    }

    final class Quick: Service {
        func run() async throws {}
        func stop() {}
    }

    @Test func servicesThatReturnEndTheGroupAsFinished() async throws {
        let ready = Log()
        let ending = try await ServiceGroup(services: [Quick(), Quick()], gracePeriod: 1, logger: .disabled())
            .run(ready: { ready.append("ready") })
        #expect(ending == .finished)
        #expect(ready.all == ["ready"], "ready was called once the signal handlers were in place")
    }

    @Test func theFirstFailureStopsTheOthersInReverseOrderAndIsRethrown() async throws {
        let log = Log()
        let first = Probe("recorder", log: log)
        let second = Probe("worker", log: log)
        let failing = Probe("failing", failing: true, log: log)
        await #expect(throws: Probe.Failed.self) {
            _ = try await ServiceGroup(services: [first, second, failing], gracePeriod: 1, logger: .disabled()).run()
        }
        #expect(log.all == ["failing", "worker", "recorder"], "stopped last to first, each once")
    }
}
