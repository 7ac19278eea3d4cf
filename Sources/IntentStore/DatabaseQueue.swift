import Dispatch
import Synchronization

/// Serializes every use of one `Database` on a private dispatch queue, so async
/// code (handlers running as tasks) can use SQLite without blocking the
/// cooperative thread pool and without two threads touching the connection.
///
/// Writes are group-committed: the writes queued while one commit runs are
/// applied together in the next `BEGIN IMMEDIATE` transaction, and every caller
/// resumes after that one durable commit. A write that throws fails alone: its
/// batch is rolled back and applied again with each write in a savepoint of its
/// own, the one that throws rolled back to its savepoint, and the others still
/// commit (so a write's body may run more than once: only what it writes to the
/// database counts). With each commit synced, this turns one fsync per intent
/// into one per batch, while no caller hears "done" before its data is on disk.
///
/// A write may say it need not be durable by itself (`durable: false`): a
/// batch of only such writes commits without a sync (as `synchronous=NORMAL`), which in WAL
/// mode is atomic and survives the process dying but not the machine losing
/// power, until the next durable commit syncs the log with everything before it.
///
/// A short read may instead run on its caller's thread (`readInPlace`), through a
/// read-only connection of the queue's own that one caller uses at a time.
public final class DatabaseQueue: @unchecked Sendable {
    // @unchecked: `database` is only touched inside blocks running on `queue`, one at a time (and the in-place
    // reader's connection only under its own lock).
    /// The read-only connection `readInPlace` uses; nil when the database cannot have one (not a file in WAL mode).
    /// Declared before the writer, so that it closes first: the last connection to close checkpoints the log.
    @usableFromInline let inPlaceReader: InPlaceReader?
    @usableFromInline let database: Database
    @usableFromInline let queue: DispatchQueue
    private let pending = Mutex<[PendingWrite]>([])
    /// How many more batches to apply with a savepoint per write (touched on `queue` only): a write that threw
    /// makes the next few pay for savepoints at once rather than be applied twice whenever writes keep throwing.
    private var savepointBatches = 0

    @usableFromInline struct PendingWrite: @unchecked Sendable {
        // @unchecked: both closures run on `queue` only.
        let run: (Database) throws -> Void
        let finish: ((any Error)?) -> Void
        let durable: Bool

        @usableFromInline init(run: @escaping (Database) throws -> Void, finish: @escaping ((any Error)?) -> Void, durable: Bool) {
            self.run = run
            self.finish = finish
            self.durable = durable
        }
    }

    /// Holds a write's value between its savepoint and the commit; touched on `queue` only.
    @usableFromInline final class ValueBox<T>: @unchecked Sendable {
        @usableFromInline var value: T?

        @usableFromInline init() {}
    }

    /// Opens the database at `path` for reading and writing (creating it when missing) on a serial queue named `label`.
    public init(path: String, label: String = "intentqueue.database", busyTimeoutMilliseconds: Int32 = 5_000) throws(DatabaseError) {
        database = try Database(path: path, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        queue = DispatchQueue(label: label)
        // Another connection sees what this one committed only when both open one file, in WAL mode (a reader then
        // never waits for the writer): not for an in-memory or a temporary database.
        let journal: String?
        do {
            journal = try database.queryFirst("PRAGMA journal_mode") { $0.string(0) }
        } catch {
            throw error as? DatabaseError ?? DatabaseError(code: 1, message: "\(error)", context: "reading the journal mode")
        }
        // The file SQLite opened, as an absolute path (empty for an in-memory or a temporary database): the reader
        // opens that one, whatever the working directory is later.
        if journal?.lowercased() == "wal", let file = database.fileName, !file.isEmpty {
            inPlaceReader = InPlaceReader(path: file)
        } else {
            inPlaceReader = nil
        }
    }

    // The continuations below are resumed exactly once by construction (by the queue's block, or by the
    // batch that ran the write), so they are the unchecked kind: no canary object or its metadata per call.
    // `read` and `write` are inlinable, so that the module calling them specializes them for the value's type:
    // unspecialized, each call looked up the metadata of a `Result` or an `Optional` of that type (about 400
    // instructions each, `deploy/worker-cost.sh`).

    /// Runs `body` on the queue and returns its value.
    @inlinable public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withUnsafeThrowingContinuation { continuation in
            queue.async {
                do {
                    continuation.resume(returning: try body(self.database))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Runs a short read on the calling thread, through a read-only connection of the queue's own, when that
    /// connection is free; otherwise (another caller has it, the database is busy, or it has none) on the queue, as
    /// `read` does. For lookups that take microseconds, made on every intent's path (a cache's revision, say): the
    /// hop to the queue and back wakes two threads, which costs more than such a read. It sees every commit made
    /// before each of its statements, of this process or another (a write this caller awaited included), but not a
    /// write still waiting in the queue, which `read` would have waited for; a body whose statements must see one
    /// state begins a transaction (`BEGIN`), which is ended after it. `body` must only read (the connection refuses
    /// writes; on the queue, as with `read`, nothing stops one), may run twice (found busy here, then on the
    /// queue), and holds the calling thread while it runs, so keep long reads to `read`.
    @inlinable public func readInPlace<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        if let inPlaceReader {
            var value: T?
            if try inPlaceReader.run({ value = try body($0) }), let value { return value }
        }
        // On the queue, the writer's connection: a transaction the body began, or a statement it stopped halfway, is
        // ended there too, or every write after it would fail.
        return try await read { database in
            defer { database.endReadTransaction() }
            return try body(database)
        }
    }

    /// A read-only connection that one caller at a time uses on its own thread (`readInPlace`), opened on first use.
    @usableFromInline final class InPlaceReader: @unchecked Sendable {
        // @unchecked: `database` and `failed` are only touched while `lock` is held.
        private let lock = Mutex(())
        private let path: String
        private var database: Database?
        /// When opening the connection last failed: `readInPlace` goes to the queue for a while, then tries again.
        private var failedAt: ContinuousClock.Instant?

        init(path: String) {
            self.path = path
        }

        /// SQLITE_PROTOCOL (sqlite3.h).
        static let sqliteProtocol: Int32 = 15

        /// Runs `body` with the connection, when it is free: false when `body` did not run to its end here (the
        /// connection is in use or cannot open, or `body` found the database busy), and the read is to go to the
        /// queue. `body`'s other errors are thrown.
        @usableFromInline func run(_ body: (Database) throws -> Void) throws -> Bool {
            try lock.withLockIfAvailable { _ throws -> Bool in
                if let failedAt, failedAt.duration(to: .now) < .seconds(5) { return false }
                if database == nil {
                    do {
                        // No busy wait on the caller's thread: a busy database sends the read to the queue instead.
                        database = try Database(path: path, mode: .readOnly, busyTimeoutMilliseconds: 0)
                        failedAt = nil
                    } catch {
                        failedAt = .now
                        return false
                    }
                }
                guard let database else { return false }
                do {
                    // No snapshot is left open after it, whatever the body did.
                    defer { database.endReadTransaction() }
                    try body(database)
                } catch let error as DatabaseError where error.isBusy || error.code & 0xFF == Self.sqliteProtocol {
                    // SQLITE_PROTOCOL: the log's index kept changing under the reader (SQLite gave up after its own
                    // retries); the queue's connection reads it.
                    return false
                }
                return true
            } ?? false
        }
    }

    /// Runs `body` inside a `BEGIN IMMEDIATE` transaction (shared with the other
    /// writes queued at the same time) and returns once it is committed: on
    /// disk, or with `durable: false` written to the log and made durable by
    /// the next durable commit. `body` may run more than once (its batch rolled
    /// back because another write threw, or tried again): only what it writes
    /// to the database counts.
    @inlinable public func write<T: Sendable>(durable: Bool = true, _ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withUnsafeThrowingContinuation { continuation in
            let box = ValueBox<T>()
            let write = PendingWrite(
                run: { database in box.value = try body(database) },
                finish: { error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let value = box.value {
                        continuation.resume(returning: value)
                    } else {
                        continuation.resume(throwing: DatabaseError(code: 1, message: "the write produced no value", context: "group commit"))
                    }
                }, durable: durable)
            enqueue(write)
        }
    }

    /// Queues a write for the next commit, and starts one when none is queued yet.
    @usableFromInline func enqueue(_ write: PendingWrite) {
        let first = pending.withLock { writes -> Bool in
            writes.append(write)
            return writes.count == 1
        }
        if first { queue.async { self.commitPending() } }
    }

    /// Runs `body` on the queue, blocking the caller: for set-up code and
    /// tests, never from inside a task.
    public func sync<T>(_ body: (Database) throws -> T) throws -> T {
        try queue.sync { try body(database) }
    }

    /// On `queue`: applies every write queued so far in one transaction.
    private func commitPending() {
        let batch = pending.withLock { writes -> [PendingWrite] in
            defer { writes.removeAll(keepingCapacity: true) }
            return writes
        }
        guard !batch.isEmpty else { return }
        var durable = batch.contains { $0.durable }
        // Set between transactions. Failing to weaken it only costs an fsync;
        // failing to restore it fails the batch rather than commit it unsynced.
        do {
            try database.setDurable(durable)
        } catch {
            if durable {
                for write in batch { write.finish(error) }
                return
            }
            durable = true
        }
        if batch.count == 1 {
            commitAlone(batch[0], durable: durable)
            return
        }
        if savepointBatches > 0 {
            savepointBatches -= 1
        } else {
            switch commitTogether(batch, durable: durable) {
            case .committed:
                return
            case .writeThrew:
                savepointBatches = 16
            case .failedAsAWhole:
                // As when the savepoints' transaction fails as a whole, below.
                for write in batch { write.finish(again(write, durable: durable)) }
                return
            }
        }
        var errors: [(any Error)?] = Array(repeating: nil, count: batch.count)
        do {
            try database.transaction(durable: durable) { db in
                errors = Array(repeating: nil, count: batch.count)
                for (index, write) in batch.enumerated() {
                    try db.run("SAVEPOINT intentqueue_write")
                    do {
                        try write.run(db)
                        try db.run("RELEASE intentqueue_write")
                    } catch {
                        errors[index] = error
                        try db.run("ROLLBACK TO intentqueue_write")
                        try db.run("RELEASE intentqueue_write")
                    }
                }
            }
        } catch {
            // The transaction failed as a whole (BEGIN, a savepoint or COMMIT: a
            // full disk, an I/O error), so none of its writes stands. Each write
            // that had not failed by itself is tried again in a transaction of
            // its own: one bad write, or a commit that failed for a moment, must
            // not fail every intent of the batch. Unless it committed and only its
            // sync failed: then its writes stand, and each is told the error.
            let committed = (error as? DatabaseError)?.committed == true
            for index in batch.indices where errors[index] == nil {
                errors[index] = committed ? error : again(batch[index], durable: durable)
            }
        }
        for (index, write) in batch.enumerated() {
            write.finish(errors[index])
        }
    }

    /// How `commitTogether` ended.
    private enum Together {
        /// Every write of the batch committed, and each was told.
        case committed
        /// A write threw: the transaction was rolled back, and no write was told.
        case writeThrew
        /// The transaction failed as a whole (BEGIN or COMMIT): rolled back, and no write was told.
        case failedAsAWhole
    }

    /// Applies the batch in one transaction without a savepoint per write: a savepoint costs two statements, and
    /// SQLite keeps a copy of every page a write changes inside one (about 11,000 instructions an intent at full
    /// speed, `deploy/worker-cost.sh`). A write that throws rolls the whole transaction back.
    private func commitTogether(_ batch: [PendingWrite], durable: Bool) -> Together {
        var failure: (any Error)?
        do {
            try database.transaction(durable: durable) { db in
                for write in batch { try Self.run(write, in: db, failure: &failure) }
            }
        } catch let error as DatabaseError where error.committed {
            // Committed, and only the sync failed: each write stands, and is told.
            for write in batch { write.finish(error) }
            return .committed
        } catch {
            return failure == nil ? .failedAsAWhole : .writeThrew
        }
        for write in batch { write.finish(nil) }
        return .committed
    }

    /// What a batch does for a write that came alone (a light load's every write), without its savepoint: a
    /// write that throws rolls the transaction back and fails, and a transaction that fails as a whole (BEGIN or
    /// COMMIT) is tried once more.
    private func commitAlone(_ write: PendingWrite, durable: Bool) {
        let (error, own) = alone(write, durable: durable)
        write.finish(error == nil || own ? error : again(write, durable: durable))
    }

    /// Runs a write again in a transaction of its own, after the one it was in failed as a whole; its error, if
    /// it fails again.
    private func again(_ write: PendingWrite, durable: Bool) -> (any Error)? {
        alone(write, durable: durable).error
    }

    /// Runs a write in a transaction of its own: nil once committed, else the error, and whether it is the write's
    /// own.
    private func alone(_ write: PendingWrite, durable: Bool) -> (error: (any Error)?, own: Bool) {
        var failure: (any Error)?
        do {
            try database.transaction(durable: durable) { db in try Self.run(write, in: db, failure: &failure) }
            return (nil, false)
        } catch {
            if let failure { return (failure, true) }
            // Committed, and only the sync failed: not to be applied again.
            return (error, (error as? DatabaseError)?.committed == true)
        }
    }

    /// Runs a write in the transaction under way. Its own error is kept in `failure`, and the transaction is rolled
    /// back with `WriteFailed` instead: the write's error is not the transaction's, and one that says busy must not
    /// have the transaction tried again for it.
    private static func run(_ write: PendingWrite, in db: Database, failure: inout (any Error)?) throws {
        do {
            try write.run(db)
        } catch {
            failure = error
            throw WriteFailed()
        }
    }

    /// The error a write's transaction is rolled back with when the write itself threw.
    private struct WriteFailed: Error {}
}
