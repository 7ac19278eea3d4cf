import CSQLite

/// A value bound to or read from SQL. Only bound parameters reach SQL: no
/// caller text is ever spliced into a statement.
public enum SQLValue: Sendable, Hashable {
    /// SQL `NULL`: what an absent value binds as.
    case null
    /// A 64-bit integer (SQLite `INTEGER`; flags are 0 or 1).
    case integer(Int64)
    /// A floating-point number (SQLite `REAL`): times are seconds since 1970.
    case real(Double)
    /// UTF-8 text (SQLite `TEXT`), JSON included.
    case text(String)

    /// Text, or `NULL` for nil.
    public static func optional(_ text: String?) -> SQLValue { text.map(SQLValue.text) ?? .null }
    /// A real, or `NULL` for nil.
    public static func optional(_ number: Double?) -> SQLValue { number.map(SQLValue.real) ?? .null }
    /// An `Int`, bound as a 64-bit integer.
    public static func int(_ number: Int) -> SQLValue { .integer(Int64(number)) }
    /// An integer, or `NULL` for nil.
    public static func optional(_ number: Int?) -> SQLValue { number.map(SQLValue.int) ?? .null }
}

/// A prepared statement owned by one `Database`.
public final class Statement {
    private var handle: OpaquePointer?
    private unowned let database: Database
    let sql: String
    /// How many parameters the statement has (the largest `?NNN`).
    private let parameterCount: Int32

    init(database: Database, sql: String) throws(DatabaseError) {
        self.database = database
        self.sql = sql
        var statement: OpaquePointer?
        let db = try database.rawHandle
        try database.check(sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil), "preparing \(sql.prefix(80))")
        handle = statement
        parameterCount = sqlite3_bind_parameter_count(statement)
    }

    deinit {
        sqlite3_finalize(handle)
        texts.deallocate()
    }

    /// The bytes of the texts bound for the current run, one after another: SQLite reads them where they are
    /// (each bound as `SQLITE_STATIC`) instead of copying every text into memory of its own (an allocation, a copy
    /// and a free per text, run after run). Rewritten only by `bind`, which every run calls after the reset that
    /// ends the run before, so SQLite never reads a text of another run.
    /// Allocated by the first bind (an init that throws runs no deinit to free it).
    private var texts = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private static let initialTextBytes = 256
    /// The most text bytes a kept statement goes on holding between runs: past it, the reset lets go of them.
    private static let keptTextLimit = 16_384

    /// Ready to run again. Its parameters are bound anew by `bind`, which every run calls; the room of a large
    /// text bound last time is let go of now (its binding cleared first) rather than held until the next run.
    func reset() {
        sqlite3_reset(handle)
        if texts.count > Self.keptTextLimit {
            sqlite3_clear_bindings(handle)
            texts.deallocate()
            texts = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        }
    }

    func bind(_ values: [SQLValue]) throws(DatabaseError) {
        var texted = false
        var textBytes = 0
        for case .text(let text) in values {
            texted = true
            textBytes += text.utf8.count
        }
        // A statement that binds no text keeps no room; one that does has a room even for empty texts.
        if texted, textBytes > texts.count || texts.baseAddress == nil {
            // Every binding of the last run pointing into the old room goes before it does (none is read before
            // this run binds it again, but none is left pointing at freed memory either). Doubling stops at the
            // size a reset keeps, so a room that grows by steps is not let go of and made again at every run.
            sqlite3_clear_bindings(handle)
            texts.deallocate()
            texts = UnsafeMutableRawBufferPointer.allocate(
                byteCount: max(textBytes, min(2 * texts.count, Self.keptTextLimit), Self.initialTextBytes), alignment: 1)
        }
        var offset = 0
        for (position, value) in values.enumerated() {
            let index = Int32(position + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, index)
            case .integer(let number): rc = sqlite3_bind_int64(handle, index, number)
            case .real(let number): rc = sqlite3_bind_double(handle, index, number)
            case .text(let text):
                let start = texts.baseAddress! + offset
                let length = Self.copyUTF8(of: text, to: start)
                offset += length
                // A nil destructor is SQLITE_STATIC: the bytes stay where they are until the next bind. The
                // address is never NULL (the room is always allocated), so an empty text binds as '' and not NULL.
                rc = sqlite3_bind_text(handle, index, start.assumingMemoryBound(to: CChar.self), Int32(length), nil)
            }
            try checkBinding(rc, index)
        }
        // A parameter given no value now is NULL, as in a fresh statement, not what an earlier run bound
        // (cheaper than clearing every binding at each reset).
        if values.count < parameterCount {
            for index in Int32(values.count + 1)...parameterCount {
                try checkBinding(sqlite3_bind_null(handle, index), index)
            }
        }
    }

    /// A bind's result, checked here first: reaching the database through its unowned reference costs a retain and a
    /// release, twenty-odd times an intent, for a bind that all but never fails.
    @inline(__always)
    private func checkBinding(_ rc: Int32, _ index: Int32) throws(DatabaseError) {
        if rc != SQLITE_OK { try database.check(rc, "binding parameter \(index) of \(sql.prefix(80))") }
    }

    /// Copies a text's UTF-8 bytes to `destination` (room for `text.utf8.count` of them) and returns how many.
    private static func copyUTF8(of text: String, to destination: UnsafeMutableRawPointer) -> Int {
        // A native string's bytes are read where they are (the `var` is a reference, not a copy of them).
        var text = text
        return text.withUTF8 { bytes in
            if let source = bytes.baseAddress { destination.copyMemory(from: source, byteCount: bytes.count) }
            return bytes.count
        }
    }

    /// Steps once: true when a row is available.
    func step() throws(DatabaseError) -> Bool {
        let rc = sqlite3_step(handle)
        if rc == SQLITE_ROW { return true }
        if rc == SQLITE_DONE { return false }
        let error: DatabaseError
        do {
            try database.check(rc, "running \(sql.prefix(80))")
            return false
        } catch let caught {
            error = caught
        }
        sqlite3_reset(handle)
        throw error
    }

    func runToEnd() throws(DatabaseError) {
        while try step() {}
        sqlite3_reset(handle)
    }

    func int64(at column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }
    func double(at column: Int32) -> Double { sqlite3_column_double(handle, column) }
    func isNull(at column: Int32) -> Bool { sqlite3_column_type(handle, column) == SQLITE_NULL }

    func text(at column: Int32) -> String? {
        guard let pointer = sqlite3_column_text(handle, column) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self)
    }
}

/// The current row of a query, read by column position. Valid only inside the
/// closure it is passed to: the statement moves on afterwards.
public struct Row {
    let statement: Statement

    /// The column (counted from 0) as an `Int`; 0 for `NULL`.
    public func int(_ column: Int32) -> Int { Int(statement.int64(at: column)) }
    /// The column as an `Int64`; 0 for `NULL`.
    public func int64(_ column: Int32) -> Int64 { statement.int64(at: column) }
    /// The column as a `Double`; 0 for `NULL`.
    public func double(_ column: Int32) -> Double { statement.double(at: column) }
    /// The column as a `Double`, or nil for `NULL`.
    public func optionalDouble(_ column: Int32) -> Double? { statement.isNull(at: column) ? nil : statement.double(at: column) }
    /// True when the column is NULL (for a `LEFT JOIN`'s row that found nothing, say).
    public func isNull(_ column: Int32) -> Bool { statement.isNull(at: column) }
    /// The column as an `Int`, or nil for `NULL`.
    public func optionalInt(_ column: Int32) -> Int? { statement.isNull(at: column) ? nil : Int(statement.int64(at: column)) }
    /// The column as text, or nil for `NULL`.
    public func text(_ column: Int32) -> String? { statement.text(at: column) }
    /// The column as text, empty for `NULL`.
    public func string(_ column: Int32) -> String { statement.text(at: column) ?? "" }
}
