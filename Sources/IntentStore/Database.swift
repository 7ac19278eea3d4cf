import CSQLite
import CStoreVFS
import Foundation

/// One SQLite connection. Not `Sendable`: a connection is confined to the thread
/// or queue that owns it (see `DatabaseQueue`).
public final class Database {
    /// How `init(path:mode:busyTimeoutMilliseconds:)` opens the file.
    public enum Mode: Sendable {
        /// Read and write, creating the file (private to its user) when missing, in WAL mode with each commit synced
        /// (`synchronous=FULL`'s guarantee).
        case readWrite
        /// Read only, for readers beside the one writer; the file must exist.
        case readOnly
    }

    private var handle: OpaquePointer?
    private var statements = StatementCache()
    /// The database file.
    public let path: String

    /// Opens (and for `.readWrite`, creates) the database at `path`, in WAL mode
    /// with a busy timeout. Commits are synced by default (what `synchronous=FULL`
    /// does, made by IntentQueue's VFS) because commits gate broker acks: a
    /// committed row must survive power loss.
    public init(path: String, mode: Mode = .readWrite, busyTimeoutMilliseconds: Int32 = 5_000) throws(DatabaseError) {
        self.path = path
        var db: OpaquePointer?
        let flags: Int32
        switch mode {
        case .readWrite: flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        case .readOnly: flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        }
        let creating = mode == .readWrite && !FileManager.default.fileExists(atPath: path)
        // Registered before any connection opens, a reader's too: the registration is the process's first call into
        // SQLite, and sets what must be set before SQLite initializes (see `iq_store_vfs_register`).
        let registered = Self.storeVFSRegistered
        // A writer opens through IntentQueue's VFS, which writes a log frame's header and page in one call (the
        // file format is SQLite's own); should it fail to register, through the platform's default.
        let vfs: String? = mode == .readWrite && registered ? IQ_STORE_VFS_NAME : nil
        let rc = sqlite3_open_v2(path, &db, flags, vfs)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close_v2(db)
            throw DatabaseError(code: rc, message: message, context: "opening \(path)")
        }
        handle = db
        if creating {
            // Private to its user whatever the umask: statuses and app data are
            // nobody else's to read. SQLite gives the -wal and -shm files the
            // main file's mode.
            chmod(path, 0o600)
        }
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
        if mode == .readWrite {
            // SQLite's busy handler does not wait for a change of journal mode: two processes opening one new file
            // at once (workers sharing an app database, started together) would have one fail "database is locked".
            try retryingWhileBusy(for: busyTimeoutMilliseconds) { () throws(DatabaseError) in try execute("PRAGMA journal_mode=WAL") }
            try execute("PRAGMA synchronous=FULL")
            // Through IntentQueue's VFS, a commit's sync (FULL's one difference from NORMAL in WAL mode) is skipped
            // when the database is not durable (see CStoreVFS.h): turning it off and on again is then no statement.
            syncsCommits = vfs != nil && iq_store_vfs_set_durable(db, 1) == SQLITE_OK
            vfsFile = vfs != nil ? iq_store_vfs_database_file(db) : nil
        }
        try execute("PRAGMA foreign_keys=ON")
    }

    deinit { close() }

    /// Runs `body` again while another connection's lock makes it fail with `SQLITE_BUSY`, for at most `milliseconds`.
    private func retryingWhileBusy(for milliseconds: Int32, _ body: () throws(DatabaseError) -> Void) throws(DatabaseError) {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, milliseconds)) * 1_000_000
        var pause: useconds_t = 1_000
        while true {
            do {
                try body()
                return
            } catch {
                guard (error.code & 0xFF) == SQLITE_BUSY, DispatchTime.now().uptimeNanoseconds < deadline else { throw error }
                usleep(pause)
                pause = min(pause * 2, 50_000)
            }
        }
    }

    /// Whether the "intentqueue" VFS is registered (once per process, on first use).
    static let storeVFSRegistered = iq_store_vfs_register() == SQLITE_OK

    /// Whether SQLite counts the memory it holds in this process (for tests: it should not, see
    /// `iq_store_vfs_register`, since the count took a process-wide lock around each of its allocations).
    static var countsMemory: Bool { sqlite3_memory_used() > 0 }

    /// How many log frames this process wrote with their header in the same call (for tests).
    static var joinedFrameWrites: Int64 { iq_store_vfs_joined_writes() }

    /// The syncs this process's databases made so far (`Database.syncTimes`): a benchmark tells a slow disk from
    /// slow code with them.
    public struct SyncTimes: Sendable, Equatable {
        /// How many syncs.
        public var count: Int64
        /// How many of them took over 5 ms.
        public var over5ms: Int64
        /// How many of them took over 20 ms.
        public var over20ms: Int64
        /// Their time in all, in seconds.
        public var seconds: Double
        /// The slowest since `resetSlowestSync()`, in seconds.
        public var slowestSeconds: Double

        /// The syncs since `earlier`; the slowest is this one's (since the last reset).
        public func since(_ earlier: SyncTimes) -> SyncTimes {
            SyncTimes(
                count: count - earlier.count, over5ms: over5ms - earlier.over5ms, over20ms: over20ms - earlier.over20ms,
                seconds: seconds - earlier.seconds, slowestSeconds: slowestSeconds)
        }
    }

    /// Every sync of this process's databases and their logs so far, commits' and checkpoints' alike.
    public static var syncTimes: SyncTimes {
        _ = storeVFSRegistered
        let times = iq_store_vfs_sync_times()
        return SyncTimes(
            count: times.count, over5ms: times.over5ms, over20ms: times.over20ms, seconds: Double(times.nanoseconds) / 1e9,
            slowestSeconds: Double(times.slowestNanoseconds) / 1e9)
    }

    /// Starts `syncTimes.slowestSeconds` over.
    public static func resetSlowestSync() { iq_store_vfs_reset_slowest_sync() }

    /// Finalizes every statement and closes the connection. Safe to call twice.
    public func close() {
        statements = StatementCache()
        vfsFile = nil
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// The one gate for SQLite result codes: anything but OK/ROW/DONE becomes a
    /// `DatabaseError` carrying `sqlite3_errmsg`, read before anything else runs.
    @discardableResult
    func check(_ rc: Int32, _ context: @autoclosure () -> String) throws(DatabaseError) -> Int32 {
        switch rc {
        case SQLITE_OK, SQLITE_ROW, SQLITE_DONE:
            return rc
        default:
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "database is closed"
            throw DatabaseError(code: rc, message: message, context: context())
        }
    }

    var rawHandle: OpaquePointer {
        get throws(DatabaseError) {
            guard let handle else {
                throw DatabaseError(code: SQLITE_MISUSE, message: "database is closed", context: path)
            }
            return handle
        }
    }

    /// Whether commits sync the log (as `synchronous=FULL` does, the default) or only write it
    /// (as `NORMAL` does: in WAL mode atomic and safe when the process dies, but not when the machine
    /// loses power, until a later synced commit syncs the log with everything before it). Set
    /// between transactions; a no-op when it already is. A write outside `transaction` commits
    /// as the last one left it. Through IntentQueue's VFS (every writer, unless it failed to
    /// register) this sets a flag the VFS reads at the next commit, skipping its sync or not; otherwise it runs
    /// the pragma.
    public func setDurable(_ durable: Bool) throws(DatabaseError) {
        guard durable != synchronousFull else { return }
        if syncsCommits {
            try check(iq_store_vfs_set_durable(try rawHandle, durable ? 1 : 0), "setting whether commits are synced")
        } else {
            try run(durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL")
        }
        synchronousFull = durable
        if !durable { unsyncedCommits = true }
    }

    private var synchronousFull = true
    /// Whether commits may have been made without a sync since the last durable transaction: its commit syncs the log
    /// with them, or `transaction` syncs it when the commit wrote nothing.
    private var unsyncedCommits = false
    /// Whether the VFS decides this connection's commit syncs (`setDurable` is then a flag, not a pragma).
    private(set) var syncsCommits = false
    /// The VFS's database file of this connection (nil without the VFS), asked whether a sync failed.
    private var vfsFile: UnsafeMutableRawPointer?

    /// How many commits were synced on this connection, counted by the VFS, or nil without it (for tests).
    var syncedCommits: Int64? {
        guard syncsCommits, let handle else { return nil }
        return iq_store_vfs_commit_syncs(handle)
    }

    /// How many syncs of the log this connection made, commits' and checkpoints' alike, or nil without the VFS or
    /// an open log (for tests).
    var logSyncs: Int64? {
        guard syncsCommits, let handle else { return nil }
        let syncs = iq_store_vfs_log_syncs(handle)
        return syncs < 0 ? nil : syncs
    }

    /// Runs one or more statements that take no parameters.
    public func execute(_ sql: String) throws(DatabaseError) {
        let db = try rawHandle
        var error: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(db, sql, nil, nil, &error)
        if rc != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
            sqlite3_free(error)
            throw DatabaseError(code: rc, message: message, context: "executing \(sql.prefix(80))")
        }
    }

    /// A prepared statement, cached per SQL text for the life of the connection.
    public func statement(_ sql: String) throws(DatabaseError) -> Statement {
        let fingerprint = Self.fingerprint(of: sql)
        if let cached = statements.find(sql, fingerprint: fingerprint) {
            cached.reset()
            return cached
        }
        let statement = try Statement(database: self, sql: sql)
        statements.insert(statement, fingerprint: fingerprint)
        return statement
    }

    /// The statement cache's hash of a SQL text: its length and 16 bytes at each end, read as four words and
    /// mixed. The recorder's statements run to kilobytes, and a statement is looked up about eleven times an
    /// intent, so neither the whole text nor a `Hasher` is worth running; texts that hash alike are told apart by
    /// comparing them whole (at once, when they are the same string, as a statement's `static` text is).
    static func fingerprint(of sql: String) -> UInt64 {
        if let hashed = sql.utf8.withContiguousStorageIfAvailable(Self.fingerprint) { return hashed }
        var copy = sql
        return copy.withUTF8(Self.fingerprint)
    }

    private static func fingerprint(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        func mix(_ word: UInt64) -> UInt64 { (word ^ (word >> 32)) &* 0xd6e8_feb8_6659_fd93 }
        let count = bytes.count
        var folded = mix(UInt64(truncatingIfNeeded: count) &+ 0x9e37_79b9_7f4a_7c15)
        guard count >= 16, let start = bytes.baseAddress else {
            for byte in bytes { folded = mix(folded ^ UInt64(byte)) }
            return folded
        }
        let raw = UnsafeRawPointer(start)
        folded = mix(folded ^ raw.loadUnaligned(as: UInt64.self))
        folded = mix(folded ^ raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        folded = mix(folded ^ raw.loadUnaligned(fromByteOffset: count - 16, as: UInt64.self))
        return mix(folded ^ raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
    }

    /// A connection's prepared statements, in an open-addressed table indexed by their texts' fingerprints:
    /// a lookup compares a word, then (on a match) the text, instead of hashing a key and comparing the texts
    /// of every statement its probe passes.
    struct StatementCache {
        private var slots: [(fingerprint: UInt64, statement: Statement)?] = Array(repeating: nil, count: 64)
        private var count = 0

        func find(_ sql: String, fingerprint: UInt64) -> Statement? {
            let mask = slots.count - 1
            var index = Self.start(fingerprint, mask: mask)
            while let slot = slots[index] {
                if slot.fingerprint == fingerprint, slot.statement.sql == sql { return slot.statement }
                index = (index + 1) & mask
            }
            return nil
        }

        /// Adds a statement not in the table; the table doubles once it is half full.
        mutating func insert(_ statement: Statement, fingerprint: UInt64) {
            if (count + 1) * 2 > slots.count {
                let held = slots.compactMap { $0 }
                slots = Array(repeating: nil, count: slots.count * 2)
                for slot in held { place(slot) }
            }
            place((fingerprint, statement))
            count += 1
        }

        /// Where a probe starts: the fingerprint's high bits, which every byte it read moved (a product's low
        /// bits depend only on its factors' low bits).
        private static func start(_ fingerprint: UInt64, mask: Int) -> Int {
            Int(truncatingIfNeeded: fingerprint >> 40) & mask
        }

        private mutating func place(_ slot: (fingerprint: UInt64, statement: Statement)) {
            let mask = slots.count - 1
            var index = Self.start(slot.fingerprint, mask: mask)
            while slots[index] != nil { index = (index + 1) & mask }
            slots[index] = slot
        }
    }

    /// Runs a statement with bound parameters and no result rows.
    public func run(_ sql: String, _ bindings: [SQLValue] = []) throws(DatabaseError) {
        let statement = try statement(sql)
        try statement.bind(bindings)
        try statement.runToEnd()
    }

    /// Runs a query and maps every row.
    public func query<T>(_ sql: String, _ bindings: [SQLValue] = [], _ row: (Row) throws -> T) throws -> [T] {
        let statement = try statement(sql)
        // Also when `row` throws halfway: a statement left stepping keeps its read open, which on a writer's
        // connection holds back every checkpoint until the same SQL runs again.
        defer { statement.reset() }
        try statement.bind(bindings)
        var rows: [T] = []
        while try statement.step() {
            rows.append(try row(Row(statement: statement)))
        }
        return rows
    }

    /// The first row of a query, if any.
    public func queryFirst<T>(_ sql: String, _ bindings: [SQLValue] = [], _ row: (Row) throws -> T) throws -> T? {
        let statement = try statement(sql)
        try statement.bind(bindings)
        defer { statement.reset() }
        guard try statement.step() else { return nil }
        return try row(Row(statement: statement))
    }

    /// Ends a read, whatever its body did: every statement still running (one stopped halfway by an error) is reset,
    /// and a transaction the body began and left open is rolled back, so that no snapshot stays to hold the log back
    /// from a checkpoint.
    @usableFromInline func endReadTransaction() {
        guard let handle else { return }
        var statement = sqlite3_next_stmt(handle, nil)
        while let running = statement {
            if sqlite3_stmt_busy(running) != 0 { sqlite3_reset(running) }
            statement = sqlite3_next_stmt(handle, running)
        }
        if sqlite3_get_autocommit(handle) == 0 { try? run("ROLLBACK") }
    }

    /// The absolute path of the file the connection opened; nil or empty for an in-memory or a temporary database.
    var fileName: String? {
        guard let handle, let name = sqlite3_db_filename(handle, "main") else { return nil }
        return String(cString: name)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int {
        handle.map { Int(sqlite3_changes($0)) } ?? 0
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws.
    /// When the database is busy past the busy timeout, the whole transaction
    /// is tried again (up to `attempts` times), since a half-done one was rolled back.
    /// The commit is synced unless `durable` is false (see `setDurable`), which
    /// then stays so until a transaction or a caller asks for a synced one.
    public func transaction<T>(durable: Bool = true, attempts: Int = 5, _ body: (Database) throws -> T) throws -> T {
        // Set only when it changes: without the VFS it is a pragma, which SQLite compiles again each time it runs (its
        // effect is made as it is compiled), some 8,000 instructions.
        try setDurable(durable)
        // The commits made without a sync before it are made durable by this one's sync of the log, but a commit that
        // writes nothing (a body that changed no row, or wrote back what a row held) makes none: then it syncs the
        // log itself. The VFS counts the commits it synced; without it, the log is synced whenever there were some.
        try recoverLogAfterAFailedSync()
        let syncedBefore = durable && unsyncedCommits ? syncedCommits : nil
        var attempt = 1
        while true {
            do {
                // Prepared once and kept, like every statement run through `run`: no parse per transaction.
                try run("BEGIN IMMEDIATE")
                do {
                    let value = try body(self)
                    try run("COMMIT")
                    if durable, unsyncedCommits {
                        try syncCommitsBefore(unlessSyncedSince: syncedBefore)
                    }
                    return value
                } catch let error as DatabaseError where error.committed {
                    throw error
                } catch {
                    try? run("ROLLBACK")
                    throw error
                }
            } catch let error as DatabaseError where error.isBusy && !error.committed && attempt < attempts {
                attempt += 1
                Thread.sleep(forTimeInterval: 0.01 * Double(attempt))
            }
        }
    }

    /// After a durable commit: syncs the log unless the commit did (the VFS counted one more synced commit than
    /// `before`), so that the commits made without a sync before it are durable too. A failed sync throws an error
    /// that says the transaction committed: its writes stand, but are not durable, and must not be applied again.
    private func syncCommitsBefore(unlessSyncedSince before: Int64?) throws(DatabaseError) {
        if let before, let now = syncedCommits, now > before {
            unsyncedCommits = false
            return
        }
        let rc = iq_store_sync_log(try rawHandle)
        guard rc == SQLITE_OK else {
            var error = DatabaseError(code: rc, message: "the log could not be synced", context: "syncing \(path)'s log after a commit")
            error.committed = true
            throw error
        }
        unsyncedCommits = false
    }

    /// Whether a sync of the database or its log failed, and the log has not been recovered since (see
    /// `recoverLogAfterAFailedSync`); always false without the VFS.
    var logSyncFailed: Bool {
        handle != nil && iq_store_vfs_file_sync_failed(vfsFile) != 0
    }

    /// After a failed sync, before anything else is written: on Linux a failed `fsync` may drop the pages it was
    /// writing while a later one succeeds, and a log's frames chain their checksums, so a crash would also lose every
    /// commit after the lost frames, synced or not. Until the log is copied whole into the database file, cut to
    /// nothing and synced (`iq_store_recover_log`), no commit is made: its sync would prove nothing. Thrown while that
    /// cannot be done yet (a reader's snapshot holds frames in the log, or the disk still fails), as an I/O error: what
    /// waited for the commit waits for storage. Through the VFS only; free when no sync failed.
    func recoverLogAfterAFailedSync() throws(DatabaseError) {
        // Asked of the file itself (a file control would cost a few hundred instructions a transaction).
        guard let handle, iq_store_vfs_file_sync_failed(vfsFile) != 0 else { return }
        endReadTransaction()
        let rc = iq_store_recover_log(handle)
        guard rc == SQLITE_OK else {
            throw DatabaseError(
                code: rc & 0xFF == SQLITE_IOERR ? rc : SQLITE_IOERR | (4 << 8),  // SQLITE_IOERR_FSYNC
                message:
                    "an earlier sync of the log failed, and the log cannot yet be copied into the database file: \(String(cString: sqlite3_errstr(rc)))",
                context: "recovering \(path)'s log after a failed sync")
        }
        unsyncedCommits = false
    }

    /// Makes the next `count` syncs of the log fail, as a failing disk would (through the VFS only), for tests of
    /// what a commit that could not be made durable does.
    func failLogSyncs(_ count: Int) {
        guard let handle else { return }
        _ = iq_store_vfs_fail_log_syncs(handle, Int32(count))
    }

    /// Makes the next `count` COMMITs fail (SQLite turns them into a rollback),
    /// for tests of what a failed commit does to the writes it carried.
    func failNextCommits(_ count: Int) {
        let box = CommitFailures(remaining: count)
        commitFailures = box
        sqlite3_commit_hook(
            handle,
            { context in
                guard let context else { return 0 }
                let box = Unmanaged<CommitFailures>.fromOpaque(context).takeUnretainedValue()
                guard box.remaining > 0 else { return 0 }
                box.remaining -= 1
                return 1
            }, Unmanaged.passUnretained(box).toOpaque())
    }

    private final class CommitFailures {
        var remaining: Int
        init(remaining: Int) { self.remaining = remaining }
    }

    private var commitFailures: CommitFailures?

    /// `PRAGMA user_version`, used by migrations.
    public var userVersion: Int {
        get throws(DatabaseError) {
            let statement = try statement("PRAGMA user_version")
            defer { statement.reset() }
            _ = try statement.step()
            return Int(statement.int64(at: 0))
        }
    }

    /// Applies the migrations after the stored `user_version`, each in its own transaction. The version is read
    /// again inside each one: another process opening the same file at the same moment (workers sharing an app
    /// database, started together) may have applied it meanwhile, and it must be neither applied twice nor have
    /// its version set back. `atomically`, every one still to apply is applied in one transaction instead: a reader
    /// in another process (a tool, a benchmark's probe) opening the file meanwhile finds the schema as it was or
    /// as it is now, never a version in between, which it would refuse as older than it reads.
    public func migrate(_ migrations: [String], atomically: Bool = false) throws {
        let current = try userVersion
        guard current < migrations.count else { return }
        if atomically {
            try transaction { db in
                let from = try db.userVersion
                guard from < migrations.count else { return }
                for sql in migrations[from...] { try db.execute(sql) }
                try db.execute("PRAGMA user_version=\(migrations.count)")
            }
            return
        }
        for (index, sql) in migrations.enumerated() where index >= current {
            try transaction { db in
                guard try db.userVersion == index else { return }
                try db.execute(sql)
                try db.execute("PRAGMA user_version=\(index + 1)")
            }
        }
    }
}
