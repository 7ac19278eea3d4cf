import Foundation
import IntentKit
import Synchronization
import Testing

@testable import IntentStore

/// `Database`, migrations and `OnceOnly` on real SQLite files.
@Suite struct DatabaseTests {
    let directory: TemporaryDirectory
    let database: Database

    init() throws {
        directory = try TemporaryDirectory()
        database = try Database(path: directory.file("test.sqlite"))
    }

    // SQLite's primary result codes (sqlite3.h), so the test needs no C module.
    static let sqliteError: Int32 = 1
    static let sqliteBusy: Int32 = 5
    static let sqliteLocked: Int32 = 6
    static let sqliteReadOnly: Int32 = 8
    static let sqliteConstraint: Int32 = 19

    struct Abort: Error, Equatable {
        var reason: String
    }

    func count(_ table: String) throws -> Int {
        try database.queryFirst("SELECT count(*) FROM \(table)") { $0.int(0) } ?? -1
    }

    // MARK: Statements

    @Test func aParameterGivenNoValueIsNullNotWhatAnEarlierRunBound() throws {
        let sql = "SELECT ?1, ?2, ?3 IS NULL"
        let first = try database.queryFirst(sql, [.text("a"), .integer(2), .real(3)]) { [$0.text(0), $0.text(1), $0.text(2)] }
        #expect(first == ["a", "2", "0"])
        let second = try database.queryFirst(sql, [.text("b")]) { [$0.text(0), $0.text(1), $0.text(2)] }
        #expect(second == ["b", nil, "1"], "the same prepared statement, two values fewer")
        let none = try database.queryFirst(sql) { [$0.text(0), $0.text(1), $0.text(2)] }
        #expect(none == [nil, nil, "1"])
        try database.execute("CREATE TABLE pair(a TEXT, b TEXT)")
        try database.run("INSERT INTO pair(a, b) VALUES (?, ?)", [.text("x"), .text("y")])
        try database.run("INSERT INTO pair(a, b) VALUES (?, ?)", [.text("z")])
        #expect(try database.query("SELECT a, b FROM pair ORDER BY a") { [$0.text(0), $0.text(1)] } == [["x", "y"], ["z", nil]])
        #expect(throws: DatabaseError.self) { try database.run("INSERT INTO pair(a, b) VALUES (?, ?)", [.text("1"), .text("2"), .text("3")]) }
    }

    // MARK: Transactions

    @Test func aTransactionCommitsAndReturnsTheBodysValue() throws {
        try database.execute("CREATE TABLE item(name TEXT NOT NULL)")

        let value = try database.transaction { db in
            try db.run("INSERT INTO item(name) VALUES (?)", [.text("kept")])
            return 42
        }

        #expect(value == 42)
        #expect(try count("item") == 1)
    }

    @Test func aTransactionRollsBackWhenItsBodyThrows() throws {
        try database.execute("CREATE TABLE item(name TEXT NOT NULL)")
        try database.run("INSERT INTO item(name) VALUES (?)", [.text("before")])

        #expect(throws: Abort(reason: "changed my mind")) {
            try database.transaction { db in
                try db.run("INSERT INTO item(name) VALUES (?)", [.text("discarded")])
                try db.run("DELETE FROM item WHERE name = ?", [.text("before")])
                #expect(try db.queryFirst("SELECT count(*) FROM item WHERE name = 'discarded'") { $0.int(0) } == 1)
                throw Abort(reason: "changed my mind")
            }
        }

        #expect(try database.query("SELECT name FROM item") { $0.string(0) } == ["before"])
        // The connection is usable again: no transaction was left open.
        try database.transaction { db in try db.run("INSERT INTO item(name) VALUES (?)", [.text("after")]) }
        #expect(try count("item") == 2)
    }

    @Test func aFailingStatementInsideATransactionRollsBackEarlierWrites() throws {
        try database.execute("CREATE TABLE item(name TEXT PRIMARY KEY)")

        #expect(throws: DatabaseError.self) {
            try database.transaction { db in
                try db.run("INSERT INTO item(name) VALUES (?)", [.text("a")])
                try db.run("INSERT INTO item(name) VALUES (?)", [.text("a")])
            }
        }

        #expect(try count("item") == 0)
    }

    // MARK: Migrations

    static let migrations = [
        "CREATE TABLE one(x INTEGER); INSERT INTO one(x) VALUES (1);",
        "CREATE TABLE two(y TEXT);",
    ]

    @Test func migrateAppliesEachMigrationOnceAndSetsUserVersion() throws {
        #expect(try database.userVersion == 0)

        try database.migrate(Self.migrations)
        #expect(try database.userVersion == 2)
        #expect(try count("one") == 1)
        #expect(try count("two") == 0)

        // Again: nothing runs (the CREATE TABLE would fail, the INSERT would duplicate).
        try database.migrate(Self.migrations)
        #expect(try database.userVersion == 2)
        #expect(try count("one") == 1)
    }

    @Test func migrateAppliesOnlyTheNewMigrations() throws {
        try database.migrate(Self.migrations)
        try database.migrate(Self.migrations + ["INSERT INTO one(x) VALUES (2);"])

        #expect(try database.userVersion == 3)
        #expect(try database.query("SELECT x FROM one ORDER BY x") { $0.int(0) } == [1, 2])
    }

    @Test func aFailingMigrationLeavesTheVersionBeforeIt() throws {
        #expect(throws: DatabaseError.self) {
            try database.migrate([Self.migrations[0], "CREATE TABLE three(z); THIS IS NOT SQL;"])
        }

        #expect(try database.userVersion == 1)
        #expect(try database.queryFirst("SELECT count(*) FROM sqlite_master WHERE name = 'three'") { $0.int(0) } == 0)
    }

    /// A store's reader (a tool, intent-bench's probe) opening it while its recorder made it could find a schema
    /// part-way, and refused it as older than it reads. Migrated atomically, it is as it was or as it is now.
    @Test func anAtomicMigrationLeavesTheSchemaAsItWasOrWhole() throws {
        #expect(throws: DatabaseError.self) {
            try database.migrate([Self.migrations[0], "CREATE TABLE three(z); THIS IS NOT SQL;"], atomically: true)
        }
        #expect(try database.userVersion == 0)
        #expect(try database.queryFirst("SELECT count(*) FROM sqlite_master WHERE name IN ('one', 'three')") { $0.int(0) } == 0)
        try database.migrate(Self.migrations, atomically: true)
        #expect(try database.userVersion == 2)
        #expect(try count("one") == 1)
        try database.migrate(Self.migrations + ["INSERT INTO one(x) VALUES (2);"], atomically: true)
        #expect(try database.userVersion == 3 && count("one") == 2)
    }

    /// Processes opening one file at once (workers sharing an app database, started together) each read the
    /// version before the other migrated: the second applied the first migration again and set the version back
    /// (a re-runnable one then left every later open failing on the next), or failed outright. Raced many times;
    /// with the version read again inside each migration's transaction, every open succeeds.
    @Test func twoOpensMigratingOneFileAtOnceBothSucceedAndTheVersionOnlyMovesOn() throws {
        let migrations = ["CREATE TABLE IF NOT EXISTS t(x)", "ALTER TABLE t ADD COLUMN y"]
        for round in 0..<40 {
            let path = directory.file("race-\(round).sqlite")
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                do {
                    try Database(path: path).migrate(migrations)
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "round \(round): \(failures.withLock { $0 })")
            let reopened = try Database(path: path)
            try reopened.migrate(migrations)
            #expect(try reopened.userVersion == 2, "round \(round)")
        }
        // The status store's own migrations, the same way.
        for round in 0..<10 {
            let path = directory.file("status-\(round).sqlite")
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                do { _ = try StatusStore(path: path) } catch { failures.withLock { $0.append("\(error)") } }
            }
            #expect(failures.withLock { $0 }.isEmpty, "round \(round): \(failures.withLock { $0 })")
        }
    }

    @Test func migrationsSurviveReopening() throws {
        try database.migrate(Self.migrations)
        database.close()

        let reopened = try Database(path: directory.file("test.sqlite"))
        #expect(try reopened.userVersion == 2)
        try reopened.migrate(Self.migrations)
        #expect(try reopened.queryFirst("SELECT count(*) FROM one") { $0.int(0) } == 1)
    }

    // MARK: Pragmas

    @Test func aWritableDatabaseUsesWALAndSyncsEachCommitUnlessToldNotTo() throws {
        #expect(try database.queryFirst("PRAGMA journal_mode") { $0.string(0) } == "wal")
        #expect(try database.queryFirst("PRAGMA foreign_keys") { $0.int(0) } == 1)
        // FULL, whose commit sync the VFS skips while the database is not durable (CStoreVFS.h).
        #expect(try database.queryFirst("PRAGMA synchronous") { $0.int(0) } == 2)
        let start = try #require(database.syncedCommits)
        try database.execute("CREATE TABLE item(x)")
        #expect(database.syncedCommits == start + 1, "a commit outside `transaction` syncs too")
        try database.transaction { db in try db.run("INSERT INTO item(x) VALUES (1)") }
        #expect(database.syncedCommits == start + 2)
        try database.transaction(durable: false) { db in try db.run("INSERT INTO item(x) VALUES (2)") }
        try database.run("INSERT INTO item(x) VALUES (3)")
        #expect(database.syncedCommits == start + 2, "not durable, until told again")
        try database.transaction { db in try db.run("INSERT INTO item(x) VALUES (4)") }
        #expect(database.syncedCommits == start + 3)
    }

    /// A durable commit makes the commits before it durable by syncing the log; one that writes nothing (no row
    /// changed, or a row written back as it was) syncs nothing by itself, so the transaction syncs the log: a caller
    /// told "durable" after it (the recorder, acking what it recorded unsynced) is told the truth.
    @Test func aDurableCommitThatWritesNothingStillMakesTheUnsyncedCommitsBeforeItDurable() throws {
        try database.execute("CREATE TABLE item(x)")
        try database.transaction { db in try db.run("INSERT INTO item(x) VALUES (1)") }
        let commits = try #require(database.syncedCommits)
        let logSyncs = try #require(database.logSyncs)
        try database.transaction(durable: false) { db in try db.run("INSERT INTO item(x) VALUES (2)") }
        #expect(database.logSyncs == logSyncs, "not durable: the log is written, not synced")

        try database.transaction { db in try db.run("UPDATE item SET x = x") }
        #expect(database.syncedCommits == commits, "a commit that writes nothing makes no sync of its own")
        #expect(database.logSyncs == logSyncs + 1, "so the transaction synced the log, with the unsynced commit in it")

        try database.transaction { db in try db.run("UPDATE item SET x = x") }
        #expect(database.logSyncs == logSyncs + 1, "with nothing unsynced before it, nothing more to sync")
        try database.transaction(durable: false) { db in try db.run("INSERT INTO item(x) VALUES (3)") }
        try database.transaction { db in try db.run("INSERT INTO item(x) VALUES (4)") }
        #expect(database.syncedCommits == commits + 1, "a commit that writes syncs the log itself")
        #expect(database.logSyncs == logSyncs + 2, "and no second sync follows it")
    }

    @Test func aReadOnlyConnectionSeesWALAndCannotWrite() throws {
        try database.execute("CREATE TABLE item(x)")
        let reader = try Database(path: directory.file("test.sqlite"), mode: .readOnly)

        #expect(try reader.queryFirst("PRAGMA journal_mode") { $0.string(0) } == "wal")
        let error = #expect(throws: DatabaseError.self) { try reader.execute("INSERT INTO item(x) VALUES (1)") }
        #expect(error.map { $0.code & 0xFF } == Self.sqliteReadOnly)
    }

    /// The writer's VFS joins each log frame's header and page in one write; a copy of the files taken while the
    /// writer still holds its log (as a crash would leave them) is read back, frame by frame, by SQLite's own VFS.
    /// A header written at the wrong place, or lost, fails the frame's checksum and every commit after it.
    @Test func logFramesWrittenAsOneCallAreRecoveredBySQLitesOwnVFS() throws {
        let frames = Int(Database.joinedFrameWrites)
        try database.execute("PRAGMA wal_autocheckpoint=0")
        try database.execute("CREATE TABLE item(n INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        let padding = String(repeating: "x", count: 1_500)
        for batch in 0..<40 {
            try database.transaction { db in
                for row in 0..<5 { try db.run("INSERT INTO item(n, body) VALUES (?, ?)", [.integer(Int64(batch * 5 + row)), .text(padding)]) }
            }
        }
        #expect(Int(Database.joinedFrameWrites) - frames >= 40, "each commit wrote at least one frame in one call")

        let copy = try TemporaryDirectory()
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: directory.file("test.sqlite") + suffix, toPath: copy.file("test.sqlite") + suffix)
        }
        let logSize = try FileManager.default.attributesOfItem(atPath: copy.file("test.sqlite-wal"))[.size] as? Int ?? 0
        #expect(logSize > 100 * 4_096, "the rows are in the log, not yet in the database file")
        let reader = try Database(path: copy.file("test.sqlite"), mode: .readOnly)
        let totals = try reader.queryFirst("SELECT count(*), sum(n), min(length(body)) FROM item") { [$0.int(0), $0.int(1), $0.int(2)] }
        #expect(totals == [200, 19_900, 1_500], "every row of the 40 commits, read back from the log")
        #expect(try reader.queryFirst("PRAGMA integrity_check") { $0.string(0) } == "ok")
    }

    /// The sync the VFS skips for a commit that need not be durable is that commit's own: when a commit makes none
    /// (as under `synchronous=NORMAL`, which anyone may set on the connection), the next sync, a checkpoint's, is
    /// made, so that no page reaches the database file from a log that was never synced.
    @Test func aCheckpointAfterACommitThatMadeNoSyncStillSyncsTheLog() throws {
        try database.execute("PRAGMA wal_autocheckpoint=0")
        try database.execute("CREATE TABLE item(n INTEGER)")
        try database.setDurable(false)
        try database.execute("PRAGMA synchronous=NORMAL")
        try database.run("INSERT INTO item(n) VALUES (1)")
        let before = try #require(database.logSyncs)
        try database.execute("PRAGMA wal_checkpoint")
        #expect(try #require(database.logSyncs) > before, "the checkpoint synced the log before copying its pages")
        try database.execute("PRAGMA synchronous=FULL")
        try database.setDurable(true)
    }

    /// Every sync the VFS makes is timed in the process's totals (which intent-bench reports per phase): at least
    /// this connection's syncs are added, with their time, and the slowest since a reset is one of them. (Other
    /// tests running meanwhile add theirs; run alone, a sync left out of the totals fails it.)
    @Test func everySyncIsCountedAndTimedInTheProcessTotals() throws {
        try database.execute("PRAGMA wal_autocheckpoint=0")
        try database.execute("CREATE TABLE item(n INTEGER)")
        let before = Database.syncTimes
        let ownBefore = try #require(database.logSyncs)
        Database.resetSlowestSync()
        for n in 0..<3 {
            try database.transaction { db in try db.run("INSERT INTO item(n) VALUES (?)", [.integer(Int64(n))]) }
        }
        let own = try #require(database.logSyncs) - ownBefore
        let added = Database.syncTimes.since(before)
        #expect(own >= 3, "each durable commit synced the log")
        #expect(added.count >= own)
        #expect(added.seconds > 0)
        #expect(added.slowestSeconds > 0 && added.slowestSeconds <= added.seconds)
        #expect(added.over20ms <= added.over5ms && added.over5ms <= added.count)
    }

    /// A commit that need not be durable makes no sync, and the checkpoint after it does.
    @Test func anUnsyncedCommitSkipsItsOwnSyncAndNoOther() throws {
        try database.execute("PRAGMA wal_autocheckpoint=0")
        try database.execute("CREATE TABLE item(n INTEGER)")
        let start = try #require(database.logSyncs)
        try database.transaction(durable: false) { db in try db.run("INSERT INTO item(n) VALUES (1)") }
        #expect(database.logSyncs == start, "the commit's own sync, skipped")
        try database.execute("PRAGMA wal_checkpoint")
        let checkpointed = try #require(database.logSyncs)
        #expect(checkpointed > start, "the checkpoint's")
        let commits = try #require(database.syncedCommits)
        try database.transaction { db in try db.run("INSERT INTO item(n) VALUES (2)") }
        // The log begins again after the checkpoint: its new header's sync, then the commit's.
        #expect(try #require(database.logSyncs) >= checkpointed + 1)
        #expect(database.syncedCommits == commits + 1, "a durable commit's")
    }

    /// A transaction bigger than the page cache spills pages to the log and, writing one of them again, makes
    /// SQLite rewrite the headers of every frame after it once the commit frame is written, each after reading its
    /// frame: those rewrites, the commit frame's last, are in the file as soon as the commit returns, and another
    /// connection's commits after it are never overwritten by them. Read back by SQLite's own VFS from a copy taken
    /// with both connections still open.
    @Test func headersRewrittenAfterACacheSpillAreWrittenAtOnceAndNeverOverAnotherConnectionsFrames() throws {
        try database.execute("PRAGMA wal_autocheckpoint=0")
        try database.execute("PRAGMA cache_size=10")
        try database.execute("CREATE TABLE item(n INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        // Not durable: its commit's sync, which would write a held header first, is skipped.
        try database.transaction(durable: false) { db in
            for n in 1...100 { try db.run("INSERT INTO item(n, body) VALUES (?, randomblob(1500))", [.integer(Int64(n))]) }
            try db.run("UPDATE item SET body = randomblob(1500) WHERE n <= 3")
        }
        let other = try Database(path: directory.file("test.sqlite"))
        try other.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for n in 101...140 {
            try other.transaction { db in try db.run("INSERT INTO item(n, body) VALUES (?, randomblob(1500))", [.integer(Int64(n))]) }
        }
        // The first connection's next call on the log, which wrote a held header where it stood, after the others.
        try database.transaction { db in try db.run("INSERT INTO item(n, body) VALUES (141, randomblob(10))") }

        let copy = try TemporaryDirectory()
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(atPath: directory.file("test.sqlite") + suffix, toPath: copy.file("test.sqlite") + suffix)
        }
        let reader = try Database(path: copy.file("test.sqlite"), mode: .readOnly)
        let totals = try reader.queryFirst("SELECT count(*), sum(n) FROM item") { [$0.int(0), $0.int(1)] }
        #expect(totals == [141, 141 * 142 / 2], "every commit of both connections")
        #expect(try reader.queryFirst("PRAGMA integrity_check") { $0.string(0) } == "ok")
    }

    // MARK: Errors

    @Test func badSQLCarriesSQLitesMessage() throws {
        let error = #expect(throws: DatabaseError.self) { try database.execute("SELEKT 1") }
        #expect(error?.message.contains("syntax error") == true)
        #expect(error?.code == Self.sqliteError)
        #expect(error?.context.contains("SELEKT 1") == true)
        #expect(error?.description.contains("syntax error") == true)
        #expect(error?.isBusy == false)
    }

    @Test func preparingAgainstAMissingTableCarriesSQLitesMessage() throws {
        let error = #expect(throws: DatabaseError.self) {
            try database.query("SELECT * FROM no_such_table WHERE x = ?", [.int(1)]) { $0.int(0) }
        }
        #expect(error?.message.contains("no such table: no_such_table") == true)
        #expect(error?.context.contains("no_such_table") == true)
    }

    @Test func aConstraintViolationCarriesSQLitesMessage() throws {
        try database.execute("CREATE TABLE item(name TEXT PRIMARY KEY)")
        try database.run("INSERT INTO item(name) VALUES (?)", [.text("a")])

        let error = #expect(throws: DatabaseError.self) { try database.run("INSERT INTO item(name) VALUES (?)", [.text("a")]) }
        #expect(error?.message.contains("UNIQUE constraint failed: item.name") == true)
        #expect(error.map { $0.code & 0xFF } == Self.sqliteConstraint)

        // The cached statement still works after its failure.
        try database.run("INSERT INTO item(name) VALUES (?)", [.text("b")])
        #expect(try count("item") == 2)
    }

    @Test func statementsAlikeAtBothEndsAreToldApart() throws {
        // Same length, same first and last 16 bytes: the cache's key hashes them alike, and each must still run as written.
        let first = "SELECT value FROM (SELECT 1 AS value, 'a' AS tag) WHERE value > 0 AND tag IS NOT NULL"
        let second = "SELECT value FROM (SELECT 2 AS value, 'b' AS tag) WHERE value > 0 AND tag IS NOT NULL"
        #expect(first.utf8.count == second.utf8.count)
        #expect(first.utf8.prefix(16).elementsEqual(second.utf8.prefix(16)) && first.utf8.suffix(16).elementsEqual(second.utf8.suffix(16)))
        #expect(first.withCString { Database.fingerprint(of: String(cString: $0)) } == Database.fingerprint(of: second))

        #expect(try database.queryFirst(first) { $0.int(0) } == 1)
        #expect(try database.queryFirst(second) { $0.int(0) } == 2)
        // And again, from the cache, with the texts made anew (another string's storage).
        #expect(try database.queryFirst(String(first.reversed().reversed())) { $0.int(0) } == 1)
        #expect(try database.queryFirst(second) { $0.int(0) } == 2)
    }

    @Test func everyCachedStatementRunsAsWrittenAfterTheCacheGrows() throws {
        // 300 texts of a few lengths, most alike at their ends: the table grows several times, and each text
        // found again (made anew, another string's storage) runs as itself.
        let texts = (0..<300).map { "SELECT \($0) AS value" + String(repeating: " ", count: $0 % 7) }
        for (value, text) in texts.enumerated() {
            #expect(try database.queryFirst(text) { $0.int(0) } == value)
        }
        for (value, text) in texts.enumerated().reversed() {
            #expect(try database.queryFirst(String(text.reversed().reversed())) { $0.int(0) } == value)
        }
    }

    @Test func aClosedDatabaseThrowsInsteadOfCrashing() throws {
        database.close()
        database.close()
        let error = #expect(throws: DatabaseError.self) { try database.execute("SELECT 1") }
        #expect(error?.message.contains("closed") == true)
    }

    @Test func busyIsRecognisedFromExtendedCodes() {
        #expect(DatabaseError(code: Self.sqliteBusy, message: "", context: "").isBusy)
        #expect(DatabaseError(code: Self.sqliteLocked, message: "", context: "").isBusy)
        #expect(DatabaseError(code: Self.sqliteBusy | (2 << 8), message: "", context: "").isBusy)
        #expect(!DatabaseError(code: Self.sqliteError, message: "", context: "").isBusy)
        #expect(!DatabaseError(code: Self.sqliteConstraint, message: "", context: "").isBusy)
    }

    // MARK: Bindings

    @Test func boundValuesComeBackAsBound() throws {
        try database.execute("CREATE TABLE value(i INTEGER, r REAL, t TEXT, n TEXT)")
        try database.run(
            "INSERT INTO value(i, r, t, n) VALUES (?, ?, ?, ?)",
            [.integer(Int64.max), .real(0.1), .text("'; DROP TABLE value; -- Zoë 👋🏽"), .optional(nil as String?)])

        let row = try #require(
            try database.queryFirst("SELECT i, r, t, n FROM value") { row in
                (row.int64(0), row.double(1), row.text(2), row.text(3), row.optionalDouble(3))
            })
        #expect(row.0 == Int64.max)
        #expect(row.1 == 0.1)
        #expect(row.2 == "'; DROP TABLE value; -- Zoë 👋🏽")
        #expect(row.3 == nil)
        #expect(row.4 == nil)
    }

    /// SQLite's count of its memory is off in every process that opens a database through `Database`: nothing
    /// reads it, and it took a process-wide lock around each allocation SQLite made.
    @Test func sqliteKeepsNoCountOfTheMemoryItHolds() throws {
        try database.execute("CREATE TABLE filler(t TEXT)")
        for round in 0..<50 {
            try database.run("INSERT INTO filler(t) VALUES (?)", [.text(String(repeating: "m", count: 1_000 + round))])
        }
        let reader = try Database(path: directory.file("test.sqlite"), mode: .readOnly)
        #expect(try reader.queryFirst("SELECT count(*) FROM filler") { $0.int(0) } == 50)
        #expect(!Database.countsMemory)
    }

    /// Texts are bound where the statement keeps them, without SQLite's own copy: each run of one statement must
    /// read its own texts, whatever the runs before bound — an empty text (still not NULL), texts of many lengths
    /// side by side, a text larger than the room kept between runs, and small ones after it.
    @Test func eachRunOfAStatementReadsTheTextsItBound() throws {
        try database.execute("CREATE TABLE bound(run INTEGER, a TEXT, b TEXT, c TEXT)")
        let insert = "INSERT INTO bound(run, a, b, c) VALUES (?, ?, ?, ?)"
        let runs: [[String?]] = [
            ["", "x", nil],
            [String(repeating: "α", count: 100), "Zoë 👋🏽", ""],
            [String(repeating: "b", count: 40_000), "", String(repeating: "c", count: 300)],
            ["short", nil, "a text of its own"],
            [String(repeating: "d", count: 255), String(repeating: "e", count: 256), String(repeating: "f", count: 257)],
            ["", "", ""],
        ]
        for (run, texts) in runs.enumerated() {
            try database.run(insert, [.int(run)] + texts.map { SQLValue.optional($0) })
            // A query of the same texts through another cached statement, read back while the insert's are held.
            let echoed = try database.queryFirst("SELECT ?1, ?2, ?3", texts.map { SQLValue.optional($0) }) {
                [$0.text(0), $0.text(1), $0.text(2)]
            }
            #expect(echoed == texts, "run \(run), read at once")
        }
        let stored = try database.query("SELECT a, b, c FROM bound ORDER BY run") { [$0.text(0), $0.text(1), $0.text(2)] }
        #expect(stored == runs)
        // The same statement many times with texts of every length up to past the kept room's limit, in turn.
        for length in stride(from: 0, through: 20_000, by: 997) {
            let text = String(repeating: "g", count: length)
            let back = try database.queryFirst("SELECT ?1 || '|' || length(?2), ?3 IS NULL", [.text(text), .text(text)]) {
                ($0.string(0), $0.int(1))
            }
            #expect(back?.0 == "\(text)|\(length)" && back?.1 == 1, "length \(length)")
        }
    }

    // MARK: OnceOnly

    /// Counts how often `effects` ran.
    final class Runs: Sendable {
        let count = Atomic<Int>(0)
        func increment() { count.add(1, ordering: .relaxed) }
        var value: Int { count.load(ordering: .relaxed) }
    }

    func prepareOnceOnly() throws {
        try database.execute(OnceOnly.schema)
        try database.execute("CREATE TABLE effect(intent_id TEXT NOT NULL, what TEXT NOT NULL)")
    }

    func perform(_ intentID: String, attempt: Int = 1, runs: Runs, response: IntentResponse) throws -> IntentResponse {
        let context = IntentContext(intentID: intentID, intentType: "Test", attempt: attempt)
        return try database.transaction { db in
            try OnceOnly.perform(in: db, context: context) { db in
                runs.increment()
                try db.run("INSERT INTO effect(intent_id, what) VALUES (?, ?)", [.text(intentID), .text("attempt \(attempt)")])
                return response
            }
        }
    }

    static let responses: [IntentResponse] = [
        IntentResponse(
            code: "success", message: "Your order is confirmed!",
            payload: [
                "soup": "Tomato Soup", "quantity": 2, "totalCents": 900, "extras": ["bread", nil, true], "note": ["a": 0.5],
            ]),
        IntentResponse(code: "success"),
    ]

    @Test(arguments: DatabaseTests.responses)
    func performRunsEffectsOnceAndReturnsTheRecordedResponseAfterwards(_ response: IntentResponse) throws {
        try prepareOnceOnly()
        let runs = Runs()

        let first = try perform("intent-1", attempt: 1, runs: runs, response: response)
        let second = try perform("intent-1", attempt: 2, runs: runs, response: IntentResponse(code: "different", message: "must not be used"))

        #expect(first == response)
        #expect(second == response)
        #expect(runs.value == 1)
        #expect(try database.query("SELECT what FROM effect WHERE intent_id = 'intent-1'") { $0.string(0) } == ["attempt 1"])
        #expect(try OnceOnly.decidedOutcome(in: database, intentID: "intent-1") == .success(response))
        #expect(try database.queryFirst("SELECT attempt FROM intent_effect WHERE intent_id = 'intent-1'") { $0.int(0) } == 1)
    }

    @Test func anotherIntentRunsItsOwnEffects() throws {
        try prepareOnceOnly()
        let runs = Runs()

        _ = try perform("a", runs: runs, response: .success("a"))
        let b = try perform("b", runs: runs, response: .success("b"))

        #expect(b == .success("b"))
        #expect(runs.value == 2)
        #expect(try count("effect") == 2)
        #expect(try count("intent_effect") == 2)
    }

    @Test func nothingIsRecordedWhenTheEffectsThrow() throws {
        try prepareOnceOnly()
        let context = IntentContext(intentID: "thrower", intentType: "Test")

        for thrown: any Error in [Abort(reason: "disk on fire"), IntentFailure(code: "noRecipients", message: "the group 'x' has no members")] {
            #expect(throws: (any Error).self) {
                try database.transaction { db in
                    try OnceOnly.perform(in: db, context: context) { db in
                        try db.run("INSERT INTO effect(intent_id, what) VALUES ('thrower', 'partial')")
                        throw thrown
                    }
                }
            }
        }
        #expect(try OnceOnly.decidedOutcome(in: database, intentID: "thrower") == nil, "a failure is the worker's to record")
        #expect(try count("effect") == 0)

        let runs = Runs()
        let retried = try perform("thrower", attempt: 2, runs: runs, response: .success("ok"))
        #expect(retried == .success("ok"))
        #expect(runs.value == 1)
    }

    @Test func anOutcomeDecidedWithoutTheHandlerIsThrownAndNothingRuns() throws {
        try prepareOnceOnly()
        try database.transaction { db in
            try OnceOnly.record(.canceled("stop"), intentID: "stopped", attempt: 1, in: db)
        }
        let runs = Runs()
        #expect(throws: OutcomeAlreadyDecided.self) { _ = try perform("stopped", runs: runs, response: .success("late")) }
        #expect(runs.value == 0)
    }

    @Test func anUnhandledIntentHasNoRecordedOutcome() throws {
        try prepareOnceOnly()
        #expect(try OnceOnly.decidedOutcome(in: database, intentID: "nobody") == nil)
    }
}
