import Dispatch
import Foundation
import IntentKit
import Synchronization

/// Runs services together until they end or the process gets SIGTERM/SIGINT;
/// then stops them in reverse order and gives them `gracePeriod` seconds to
/// return before giving up on them.
public struct ServiceGroup: Sendable {
    /// How `run` ended: on its own, or on a signal, with every service returned in time or not.
    public enum Ending: Sendable, Equatable {
        /// Every service returned.
        case finished
        /// A signal asked for shutdown and every service returned in time.
        case stopped(signal: Int32)
        /// A signal asked for shutdown and some service was still running at the deadline.
        case deadlineExceeded(signal: Int32)
    }

    private let services: [any Service]
    private let gracePeriod: Double
    private let logger: Logger

    /// A group of `services`, stopped in reverse order on a signal; those still running `gracePeriod` seconds later are abandoned.
    public init(services: [any Service], gracePeriod: Double, logger: Logger) {
        self.services = services
        self.gracePeriod = gracePeriod
        self.logger = logger
    }

    /// Runs until done. `ready` is called once the signal handlers are in place.
    public func run(ready: @Sendable () -> Void = {}) async throws -> Ending {
        let outcome = SignalOutcome()
        let (endings, ended) = AsyncStream<Ending>.makeStream()
        let signalQueue = DispatchQueue(label: "intentqueue.signals")
        let sources = [SIGTERM, SIGINT].map { number -> any DispatchSourceSignal in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
            source.setEventHandler { [services, gracePeriod, logger] in
                let first = outcome.record(.stopped(signal: number))
                guard first else { return }
                logger.notice("signal \(number) received: stopping, grace period \(gracePeriod) s")
                for service in services.reversed() { service.stop() }
                signalQueue.asyncAfter(deadline: .now() + gracePeriod) {
                    logger.warning("services still running after the grace period; abandoning them")
                    ended.yield(.deadlineExceeded(signal: number))
                }
            }
            source.resume()
            return source
        }
        defer { for source in sources { source.cancel() } }
        ready()

        let runner = Task { [services] in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for service in services {
                    group.addTask { try await service.run() }
                }
                // The first service to fail stops the others.
                do {
                    try await group.next()
                    for service in services.reversed() { service.stop() }
                    try await group.waitForAll()
                } catch {
                    for service in services.reversed() { service.stop() }
                    try? await group.waitForAll()
                    throw error
                }
            }
        }
        let watcher = Task {
            let result = await runner.result
            ended.yield(outcome.current ?? .finished)
            return result
        }
        var iterator = endings.makeAsyncIterator()
        let ending = await iterator.next() ?? .finished
        if case .deadlineExceeded = ending { return ending }
        try await watcher.value.get()
        return ending
    }
}

/// The first signal's ending, set once from the signal queue.
private final class SignalOutcome: Sendable {
    private let state = Mutex<ServiceGroup.Ending?>(nil)

    /// Records `ending` if nothing was recorded yet; true when it was.
    func record(_ ending: ServiceGroup.Ending) -> Bool {
        state.withLock { state in
            guard state == nil else { return false }
            state = ending
            return true
        }
    }

    var current: ServiceGroup.Ending? { state.withLock { $0 } }
}
