import CSQLite

/// A SQLite failure: the result code, SQLite's own message read at once, and
/// what IntentQueue was doing.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    public var code: Int32
    public var message: String
    public var context: String

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

    public var description: String { "\(context): \(message) (SQLite code \(code))" }
}
