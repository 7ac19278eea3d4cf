import Dispatch

/// Serializes every use of one `Database` on a private dispatch queue, so async
/// code (handlers running as tasks) can use SQLite without blocking the
/// cooperative thread pool and without two threads touching the connection.
public final class DatabaseQueue: @unchecked Sendable {
    // @unchecked: `database` is only touched inside `queue.sync`/`queue.async`
    // blocks, which run one at a time.
    private let database: Database
    private let queue: DispatchQueue

    public init(path: String, label: String = "intentqueue.database") throws(DatabaseError) {
        database = try Database(path: path)
        queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the queue and returns its value.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try body(self.database) })
            }
        }
    }

    /// Runs `body` inside one `BEGIN IMMEDIATE` transaction on the queue.
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await read { database in try database.transaction(body) }
    }

    /// Runs `body` on the queue, blocking the caller: for set-up code and
    /// tests, never from inside a task.
    public func sync<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.sync { try body(database) }
    }
}
