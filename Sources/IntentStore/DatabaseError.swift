import CSQLite
import IntentKit

/// A SQLite failure: the result code, SQLite's own message read at once, and
/// what IntentQueue was doing.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    /// SQLite's extended result code; `code & 0xFF` is the primary one (`SQLITE_BUSY`, `SQLITE_FULL`…).
    public var code: Int32
    /// SQLite's message for it (`sqlite3_errmsg`), or IntentQueue's own.
    public var message: String
    /// What IntentQueue was doing: `opening /path/status.sqlite`, `running INSERT INTO …`.
    public var context: String
    /// True when the transaction committed and only the sync that would make it durable failed
    /// (`Database.transaction`): its writes stand (though not yet durable), so running them again would apply them twice.
    public var committed = false

    /// A failure with SQLite's `code` and `message` while doing `context`.
    public init(code: Int32, message: String, context: String) {
        self.code = code
        self.message = message
        self.context = context
    }

    /// SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock; the whole
    /// transaction may be retried.
    public var isBusy: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_BUSY || primary == SQLITE_LOCKED
    }

    /// A condition that may pass by itself: busy or locked, out of memory, an
    /// I/O error, a full disk, a file that cannot be opened for now. An intent
    /// whose handler meets one waits and is tried again instead of failing.
    public var isRetryable: Bool {
        let primary = code & 0xFF
        return [SQLITE_BUSY, SQLITE_LOCKED, SQLITE_NOMEM, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_PROTOCOL].contains(primary)
    }

    /// SQLITE_FULL: the disk (or the file system the database lives on) is full.
    public var isDiskFull: Bool { code & 0xFF == SQLITE_FULL }

    /// `context: message (SQLite code n)`, for logs and error messages.
    public var description: String { "\(context): \(message) (SQLite code \(code))" }
}

extension DatabaseError: RetryableError {}
