import Foundation
import IntentAMQP
import Synchronization

/// Something a phase waits for: a thread that finishes or fails.
protocol Joinable: AnyObject, Sendable {
    var name: String { get }
    var isFinished: Bool { get }
    var failure: (any Error)? { get }
}

/// A closure running on a thread of its own: each rabbitmq-c connection belongs
/// to the one thread that opened it, as in the library's I/O threads.
final class BenchThread<Value: Sendable>: Joinable {
    let name: String
    private let outcome = Mutex<Result<Value, any Error>?>(nil)

    init(name: String, _ body: @escaping @Sendable () throws -> Value) {
        self.name = name
        Thread.named(name) { [self] in
            let result = Result { try body() }
            outcome.withLock { $0 = result }
        }.start()
    }

    var isFinished: Bool { outcome.withLock { $0 != nil } }

    var failure: (any Error)? {
        outcome.withLock { result in
            if case .failure(let error)? = result { return error }
            return nil
        }
    }

    /// The value, once the thread has returned it.
    var value: Value? {
        outcome.withLock { result in
            if case .success(let value)? = result { return value }
            return nil
        }
    }
}
