import Foundation
import IntentKit
import Synchronization
import Testing

@testable import IntentStore

/// `DatabaseQueue`'s group commit when a write or a whole commit fails, storage
/// errors that pass, and `DatabaseOutcomeLedger`'s decisions, on real SQLite files.
@Suite struct GroupCommitAndLedgerTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    func queue(_ name: String = "app.sqlite", busyTimeout: Int32 = 5_000) throws -> DatabaseQueue {
        let queue = try DatabaseQueue(path: directory.file(name), busyTimeoutMilliseconds: busyTimeout)
        try queue.sync { db in try db.execute("CREATE TABLE IF NOT EXISTS item(name TEXT NOT NULL)") }
        return queue
    }

    struct Refused: Error {}

    /// Runs `count` writes at once, so the queue groups them; the results in order.
    static func concurrentWrites(_ count: Int, on queue: DatabaseQueue, failing: Int? = nil) async -> [Bool] {
        await countedWrites(count, on: queue, failing: failing ?? -1, with: Refused()).ok
    }

    func rows(_ queue: DatabaseQueue) throws -> Int {
        try queue.sync { db in try db.queryFirst("SELECT count(*) FROM item") { $0.int(0) } ?? -1 }
    }

    // MARK: Group commit

    @Test func aWriteThatNeedNotBeDurableCommitsUnsyncedAndADurableOneSyncsAgain() async throws {
        let queue = try queue()
        // How many of the queue's commits were synced (by the VFS, see CStoreVFS.h).
        @Sendable func synced() throws -> Int64 { try queue.sync { db in db.syncedCommits } ?? -1 }
        let start = try synced()
        #expect(start >= 0)
        try await queue.write(durable: false) { db in try db.run("INSERT INTO item(name) VALUES ('admitted')") }
        #expect(try synced() == start, "committed without a sync")
        // Committed all the same: another connection reads it at once.
        let reader = try Database(path: directory.file("app.sqlite"))
        #expect(try reader.queryFirst("SELECT count(*) FROM item WHERE name = 'admitted'") { $0.int(0) } == 1)
        reader.close()
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('decided')") }
        #expect(try synced() == start + 1, "a durable write syncs")
        // A batch with one durable write among others is durable as a whole, and only such a batch syncs: twenty
        // writes, however they were batched, make one synced commit.
        let written = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<20 {
                group.addTask {
                    (try? await queue.write(durable: index == 7) { db in
                        try db.run("INSERT INTO item(name) VALUES (?)", [.text("mixed-\(index)")])
                    }) != nil
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(written == 20)
        #expect(try synced() == start + 2)
        #expect(try rows(queue) == 22)
    }

    @Test func aWriteThatThrowsFailsAloneAndTheRestOfItsBatchCommits() async throws {
        let queue = try queue()
        let results = await Self.concurrentWrites(40, on: queue, failing: 17)
        #expect(results.enumerated().allSatisfy { $0.element == ($0.offset != 17) })
        #expect(try rows(queue) == 39)
    }

    /// Runs `count` writes at once (the queue groups them), each counting its runs, the one at `failing` throwing
    /// `error` after its insert; which succeeded, and how many times each ran.
    static func countedWrites(_ count: Int, on queue: DatabaseQueue, failing: Int, with error: any Error) async -> (ok: [Bool], runs: [Int]) {
        final class Runs: Sendable {
            let counts: Mutex<[Int]>
            init(_ count: Int) { counts = Mutex([Int](repeating: 0, count: count)) }
        }
        let runs = Runs(count)
        let ok = await withTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<count {
                group.addTask {
                    do {
                        try await queue.write { db in
                            runs.counts.withLock { $0[index] += 1 }
                            try db.run("INSERT INTO item(name) VALUES (?)", [.text("counted-\(index)")])
                            if index == failing { throw error }
                        }
                        return (index, true)
                    } catch {
                        return (index, false)
                    }
                }
            }
            var ok = Array(repeating: false, count: count)
            for await (index, written) in group { ok[index] = written }
            return ok
        }
        return (ok, runs.counts.withLock { $0 })
    }

    /// A batch whose writes all succeed is applied once, without savepoints: no body runs twice. One whose write
    /// throws (its own error, even one that says busy) is applied again with savepoints: that write fails alone, its
    /// body run at most twice (not tried again for the busy), and every other write commits.
    @Test func aBatchRunsEachWriteOnceUnlessOneThrowsAndThenThatOneFailsAlone() async throws {
        let queue = try queue()
        let clean = await Self.countedWrites(40, on: queue, failing: -1, with: Refused())
        #expect(clean.ok.allSatisfy { $0 })
        #expect(clean.runs.allSatisfy { $0 == 1 }, "\(clean.runs)")
        #expect(try rows(queue) == 40)
        let busy = DatabaseError(code: 5, message: "database is locked", context: "a write of the app's")
        let failing = await Self.countedWrites(40, on: queue, failing: 23, with: busy)
        #expect(failing.ok.enumerated().allSatisfy { $0.element == ($0.offset != 23) }, "\(failing.ok)")
        #expect(failing.runs.allSatisfy { (1...2).contains($0) }, "\(failing.runs)")
        #expect(try rows(queue) == 79)
    }

    @Test func aCommitThatFailsOnceIsRetriedWriteByWriteAndEveryWriteCommits() async throws {
        let queue = try queue()
        // The first commit of the batch fails as a whole (SQLite rolls it back): each write is tried again alone.
        try queue.sync { db in db.failNextCommits(1) }
        let results = await Self.concurrentWrites(40, on: queue)
        #expect(results.allSatisfy { $0 }, "no write failed because another's commit did")
        #expect(try rows(queue) == 40)
    }

    @Test func commitsThatGoOnFailingFailEveryWriteAndCommitNothing() async throws {
        let queue = try queue()
        try queue.sync { db in db.failNextCommits(1_000) }
        let results = await Self.concurrentWrites(10, on: queue)
        #expect(results.allSatisfy { !$0 })
        try queue.sync { db in db.failNextCommits(0) }
        #expect(try rows(queue) == 0)
    }

    @Test func aLoneWriteThatThrowsFailsOnceAndCommitsNothingAndTheNextOneCommits() async throws {
        let queue = try queue()
        let runs = Mutex(0)
        do {
            try await queue.write { db in
                runs.withLock { $0 += 1 }
                try db.run("INSERT INTO item(name) VALUES ('refused')")
                // Its own error, even one that says busy, fails it: the transaction is not tried again for it.
                throw DatabaseError(code: 5, message: "database is locked", context: "a write of the app's")
            }
            Issue.record("a write that threw succeeded")
        } catch let error as DatabaseError {
            #expect(error.isBusy, "\(error)")
        }
        #expect(runs.withLock { $0 } == 1)
        #expect(try rows(queue) == 0)
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('after')") }
        #expect(try rows(queue) == 1)
    }

    /// A durable write after unsynced ones, which itself changes no row, commits and then syncs the log; should
    /// that sync fail, the write is told, and is not run again: it committed, and a second run would apply it twice.
    /// The next durable write syncs the log.
    @Test func aWriteWhoseCommitStoodButWhoseSyncFailedIsToldAndNotRunAgain() async throws {
        let queue = try queue()
        try await queue.write(durable: false) { db in try db.run("INSERT INTO item(name) VALUES ('unsynced')") }
        let logSyncs = try #require(try queue.sync { $0.logSyncs })
        try queue.sync { db in db.failLogSyncs(1) }
        let runs = Mutex(0)
        let error = await #expect(throws: DatabaseError.self) {
            try await queue.write { db in
                runs.withLock { $0 += 1 }
                try db.run("UPDATE item SET name = name")
            }
        }
        #expect(error?.committed == true, "\(String(describing: error))")
        #expect(runs.withLock { $0 } == 1, "a write that committed is not run again")
        #expect(try queue.sync { $0.logSyncs } == logSyncs, "the sync failed")

        try await queue.write { db in runs.withLock { $0 += 1 } }
        #expect(try queue.sync { $0.logSyncs } == logSyncs + 1, "the next durable write, though it writes nothing, first recovers the log")
        #expect(try !queue.sync { $0.logSyncFailed })
        #expect(try rows(queue) == 1)
    }

    /// On Linux a failed `fsync` may drop the pages it was writing while a later one succeeds, and a log's frames chain
    /// their checksums: a later sync proves nothing about the commits before it. After a failed sync of the log, no
    /// commit is made until the log is copied whole into the database file, cut to nothing and synced. While a
    /// reader's snapshot keeps the log from being cut, a write fails as storage does (and is not made), a commit's own
    /// sync is refused, and only then does a write go through, with what came before it in the database file.
    @Test func afterAFailedSyncNothingIsCommittedUntilTheLogIsCopiedIntoTheDatabaseFile() async throws {
        let queue = try queue(busyTimeout: 100)
        try await queue.write(durable: false) { db in try db.run("INSERT INTO item(name) VALUES ('before the failure')") }
        try queue.sync { db in db.failLogSyncs(1) }
        let failed = await #expect(throws: DatabaseError.self) { try await queue.write { db in try db.run("UPDATE item SET name = name") } }
        #expect(failed?.committed == true, "\(String(describing: failed))")
        #expect(try queue.sync { $0.logSyncFailed })

        let reader = try Database(path: directory.file("app.sqlite"), mode: .readOnly)
        try reader.execute("BEGIN")
        #expect(try reader.queryFirst("SELECT count(*) FROM item") { $0.int(0) } == 1)
        let refused = await #expect(throws: DatabaseError.self) {
            try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('while a reader holds the log')") }
        }
        #expect(refused?.isRetryable == true && refused?.isBusy == false && refused?.committed == false, "\(String(describing: refused))")
        // A commit made outside a transaction, which skips the recovery, has its own sync refused: rolled back.
        try queue.sync { db in
            #expect(throws: DatabaseError.self) { try db.execute("INSERT INTO item(name) VALUES ('autocommitted')") }
        }
        #expect(try queue.sync { $0.logSyncFailed })
        #expect(try rows(queue) == 1, "neither write was made")

        try reader.execute("COMMIT")
        reader.close()
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('after the recovery')") }
        #expect(try !queue.sync { $0.logSyncFailed })
        #expect(try rows(queue) == 2)
        // The database file alone, without its log, holds what was committed before the recovery.
        let copy = directory.file("copy.sqlite")
        try FileManager.default.copyItem(atPath: directory.file("app.sqlite"), toPath: copy)
        let alone = try Database(path: copy)
        #expect(try alone.query("SELECT name FROM item") { $0.string(0) } == ["before the failure"])
    }

    @Test func aLoneWriteWhoseCommitFailsIsTriedOnceMore() async throws {
        let queue = try queue()
        try queue.sync { db in db.failNextCommits(1) }
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('again')") }
        #expect(try rows(queue) == 1, "committed by the second transaction")
        try queue.sync { db in db.failNextCommits(2) }
        await #expect(throws: DatabaseError.self) {
            try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('never')") }
        }
        try queue.sync { db in db.failNextCommits(0) }
        #expect(try rows(queue) == 1, "two failed commits commit nothing")
    }

    /// A write tried again after its commit failed, whose body then throws busy itself, fails with that error after
    /// one more run: its own error is not the transaction's, so the second transaction is not tried again for it.
    @Test func aWriteTriedAgainThatThenThrowsBusyIsNotTriedAgainForIt() async throws {
        let queue = try queue()
        let runs = Mutex(0)
        try queue.sync { db in db.failNextCommits(1) }
        do {
            try await queue.write { db in
                let run = runs.withLock { runs in
                    runs += 1
                    return runs
                }
                try db.run("INSERT INTO item(name) VALUES ('tried again')")
                if run > 1 { throw DatabaseError(code: 5, message: "database is locked", context: "a write of the app's") }
            }
            Issue.record("a write that threw succeeded")
        } catch let error as DatabaseError {
            #expect(error.isBusy, "\(error)")
        }
        #expect(runs.withLock { $0 } == 2, "once in the commit that failed, once more alone")
        #expect(try rows(queue) == 0)
    }

    @Test func aLockHeldPastTheBusyTimeoutIsRetryableAndWritesResumeWhenItGoes() async throws {
        let queue = try queue(busyTimeout: 50)
        let other = try Database(path: directory.file("app.sqlite"))
        try other.execute("BEGIN IMMEDIATE")
        do {
            try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('blocked')") }
            Issue.record("the write went through a held lock")
        } catch let error as DatabaseError {
            #expect(error.isBusy && error.isRetryable, "\(error)")
        }
        try other.execute("COMMIT")
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('after')") }
        #expect(try rows(queue) == 1)
    }

    @Test func busyFullAndIOErrorsPassAndOthersDoNot() {
        func error(_ code: Int32) -> DatabaseError { DatabaseError(code: code, message: "", context: "test") }
        // SQLITE_BUSY, LOCKED, NOMEM, IOERR (and IOERR_WRITE, 10 | 3 << 8), FULL, CANTOPEN, PROTOCOL.
        for code: Int32 in [5, 6, 7, 10, 10 | 3 << 8, 13, 14, 15] {
            #expect(error(code).isRetryable, "code \(code)")
        }
        #expect(error(13).isDiskFull && !error(10).isDiskFull)
        // SQLITE_ERROR, READONLY, CORRUPT, CONSTRAINT, MISMATCH: a retry would fail the same way.
        for code: Int32 in [1, 8, 11, 19, 20] {
            #expect(!error(code).isRetryable, "code \(code)")
        }
    }

    struct FailingHandler: IntentHandler {
        struct Intent: IntentKit.Intent {
            static let typeName = "Failing"
            @Parameter var step: String
        }

        let code: Int32

        func resolve(_ intent: Intent, context: IntentContext) async throws {
            if intent.step == "resolve" { throw DatabaseError(code: code, message: "disk I/O error", context: "reading") }
        }

        func handle(_ intent: Intent, context: IntentContext) async throws -> IntentResponse {
            throw DatabaseError(code: code, message: "database or disk is full", context: "committing")
        }
    }

    @Test(arguments: ["resolve", "handle"])
    func aStorageErrorInAHandlerWaitsForStorageInsteadOfFailing(step: String) async throws {
        var registry = IntentRegistry()
        try registry.register(FailingHandler(code: 10))
        let envelope = IntentEnvelope(id: "x", type: "Failing", parameters: ["step": .string(step)], submittedAt: 0)
        let outcome = await IntentPipeline.run(envelope, registry: registry, context: IntentContext(intentID: "x", intentType: "Failing"))
        #expect(outcome.retryReason != nil && outcome.waitsForStorage, "\(outcome)")

        var constraint = IntentRegistry()
        try constraint.register(FailingHandler(code: 19))
        let failed = await IntentPipeline.run(envelope, registry: constraint, context: IntentContext(intentID: "x", intentType: "Failing"))
        #expect(failed.state == .failure && failed.response?.code == FailureCode.handlerError, "a constraint error is not storage passing")
    }

    // MARK: Reads in place

    /// Waits for `semaphore` on a dispatch thread, not the task's (a cooperative thread blocked could starve the
    /// tests running beside this one); false when a minute passed first.
    static func signaled(_ semaphore: DispatchSemaphore) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: semaphore.wait(timeout: .now() + 60) == .success) }
        }
    }

    /// `readInPlace` runs on its own read-only connection (a write through it is refused), and sees what this queue
    /// committed, durable or not, and what another connection to the file committed.
    @Test func aReadInPlaceSeesEveryCommitThroughAReadOnlyConnectionOfItsOwn() async throws {
        let queue = try queue()
        try await queue.write(durable: false) { db in try db.run("INSERT INTO item(name) VALUES ('unsynced')") }
        let other = try DatabaseQueue(path: directory.file("app.sqlite"))
        try await other.write { db in try db.run("INSERT INTO item(name) VALUES ('other')") }

        let names = try await queue.readInPlace { db in try db.query("SELECT name FROM item ORDER BY name") { $0.string(0) } }
        #expect(names == ["other", "unsynced"])
        let refused = await #expect(throws: DatabaseError.self) {
            try await queue.readInPlace { db in try db.run("INSERT INTO item(name) VALUES ('written by a read')") }
        }
        #expect(refused.map { $0.code & 0xFF } == DatabaseTests.sqliteReadOnly)
        #expect(try rows(queue) == 2)
    }

    /// While one read holds the connection, another goes to the queue rather than wait for it; a database with no
    /// file to share (in memory) reads on the queue, through its one connection.
    @Test func aReadInPlaceNeverWaitsForTheReaderAndFallsBackToTheQueue() async throws {
        let queue = try queue()
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('a')") }
        let reader = try #require(queue.inPlaceReader)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        // What the first read counted: empty when it could not hold the reader.
        let firstCount = Mutex<[Int?]>([])
        // The first read holds the reader from a thread of its own (blocking one of the cooperative pool's few
        // threads could starve the tests running beside this one).
        let first = Thread {
            defer { finished.signal() }
            let ran = try? reader.run { db in
                holding.signal()
                release.wait()
                let count = try db.queryFirst("SELECT count(*) FROM item") { $0.int(0) }
                firstCount.withLock { $0.append(count) }
            }
            if ran != true { holding.signal() }
        }
        first.start()
        // Whatever fails below, the thread lets the reader go.
        defer { release.signal() }
        #expect(await Self.signaled(holding))
        // The reader is held: this read is the queue's, on the writer's connection.
        let writer = ObjectIdentifier(queue.database)
        let second = try await queue.readInPlace { db in
            (ObjectIdentifier(db) == writer, try db.queryFirst("SELECT count(*) FROM item") { $0.int(0) })
        }
        #expect(second.0 && second.1 == 1)
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('b')") }
        release.signal()
        // The held read counts after the queue's write committed: it sees it.
        #expect(await Self.signaled(finished))
        #expect(firstCount.withLock { $0 } == [2])
        // The queue's connection writes again once the read is over.
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('c')") }
        #expect(try rows(queue) == 3)

        let memory = try DatabaseQueue(path: ":memory:")
        #expect(memory.inPlaceReader == nil)
        try memory.sync { db in try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)") }
        let inMemory = try await memory.readInPlace { db in try db.queryFirst("SELECT count(*) FROM t") { $0.int(0) } }
        #expect(inMemory == 1)
    }

    /// A read in place leaves no read transaction open, whether it read to the end, threw halfway or opened a
    /// transaction or a savepoint of its own: the next read sees the next commit, and the log can be checkpointed and emptied right
    /// after, which a reader still holding its snapshot would stop.
    @Test func aReadInPlaceLeavesNoTransactionOpen() async throws {
        let queue = try queue()
        for index in 0..<20 {
            try await queue.write { db in try db.run("INSERT INTO item(name) VALUES (?)", [.text("item \(index)")]) }
        }
        let names = try await queue.readInPlace { db in try db.query("SELECT name FROM item") { $0.string(0) } }
        #expect(names.count == 20)
        // A read that throws on its first row, its statement stopped halfway.
        await #expect(throws: Refused.self) {
            try await queue.readInPlace { db in try db.query("SELECT name FROM item") { _ -> String in throw Refused() } }
        }
        // Reads that leave a transaction, or a savepoint, of their own open.
        _ = try await queue.readInPlace { db in try db.run("BEGIN") }
        _ = try await queue.readInPlace { db in try db.run("SAVEPOINT left_open") }
        try await queue.write { db in try db.run("INSERT INTO item(name) VALUES ('after the read')") }
        // No snapshot of before the write was kept: the next read in place sees it.
        #expect(try await queue.readInPlace { db in try db.queryFirst("SELECT count(*) FROM item") { $0.int(0) } } == 21)
        let checkpoint = try queue.sync { db in
            try db.queryFirst("PRAGMA wal_checkpoint(TRUNCATE)") { [$0.int(0), $0.int(1), $0.int(2)] }
        }
        #expect(checkpoint == [0, 0, 0], "busy, log frames, frames checkpointed: \(String(describing: checkpoint))")
    }

    /// The same on the queue, where a read in place goes when it cannot have a connection of its own (another
    /// caller holds it, the file is busy, or there is none: a database in memory). A transaction it left open there
    /// would stay open on the writer's connection, and every write after it fail ("cannot start a transaction within
    /// a transaction").
    @Test func aReadInPlaceOnTheQueueLeavesNoTransactionOpen() async throws {
        let memory = try DatabaseQueue(path: ":memory:")
        #expect(memory.inPlaceReader == nil, "no file to share: every read in place runs on the queue")
        try memory.sync { db in try db.execute("CREATE TABLE item(name TEXT)") }
        await #expect(throws: Refused.self) {
            try await memory.readInPlace { db in try db.query("SELECT 1") { _ -> Int in throw Refused() } }
        }
        _ = try await memory.readInPlace { db in try db.run("BEGIN") }
        _ = try await memory.readInPlace { db in try db.run("SAVEPOINT left_open") }
        try await memory.write { db in try db.run("INSERT INTO item(name) VALUES ('after the reads')") }
        #expect(try memory.sync { db in try db.queryFirst("SELECT count(*) FROM item") { $0.int(0) } } == 1)
    }

    // MARK: The ledger

    /// A refusal is said only once the owner it rests on is durable. The owner was admitted without a sync, and the
    /// refusal's write changes no row (it writes the owner back as it was), so its commit makes no sync of its own:
    /// the transaction syncs the log.
    @Test func aRefusalIsSaidOnlyOnceTheOwnerItRestsOnIsDurable() async throws {
        let queue = try queue()
        let ledger = try DatabaseOutcomeLedger(queue: queue)
        let first = try await ledger.admit("x", type: "SendMessage", sender: Sender(user: "alice"), turn: 0, request: nil, confirming: [])
        #expect(first.refusal == nil && first.owner == "alice")
        let commits = try #require(try queue.sync { $0.syncedCommits })
        let logSyncs = try #require(try queue.sync { $0.logSyncs })

        let refused = try await ledger.admit("x", type: "SendMessage", sender: Sender(user: "mallory"), turn: 0, request: .cancel, confirming: [])
        #expect(refused.refusal?.code == FailureCode.notOwner)
        #expect(try queue.sync { $0.syncedCommits } == commits, "the refusal's write changed no row, and its commit synced nothing")
        #expect(try queue.sync { $0.logSyncs } == logSyncs + 1, "the log, with the owner in it, was synced before the refusal was said")
    }

    @Test func theFirstDecisionStandsForEveryLaterOne() async throws {
        let ledger = try DatabaseOutcomeLedger(queue: queue())
        let success = DecidedOutcome.success(IntentResponse(code: "success", message: "sent"))
        #expect(try await ledger.outcome(of: "a") == nil)
        #expect(try await ledger.decide("a", success, attempt: 1, by: .run) == success)
        #expect(try await ledger.decide("a", .canceled("late"), attempt: 1, by: .cancel) == success, "a cancel after the effects loses")
        #expect(try await ledger.decide("a", .failure(IntentFailure(code: FailureCode.timedOut, message: "")), attempt: 2, by: .run) == success)
        #expect(try await ledger.outcome(of: "a") == success)
        #expect(try await ledger.ask("a", turn: 3, confirmations: [], granted: []) == success, "a decided intent asks nothing")
    }

    /// A ledger's retention forgets decided intents only, and only those decided before the cutoff, in steps that
    /// each look at `limit` decisions; an intent it forgot is admitted again as a new one.
    @Test func forgettingOldDecisionsLeavesUndecidedAndRecentIntentsAndAForgottenIDIsNewAgain() async throws {
        let database = try queue()
        let ledger = try DatabaseOutcomeLedger(queue: database, holdsEffects: false)  // one that claims runs
        let sent = DecidedOutcome.success(IntentResponse(code: "success", message: "sent"))
        func admit(_ id: String, as user: String = "alice", turn: Int = 0, request: IntentRequest? = nil) async throws -> Admission {
            try await ledger.admit(id, type: "SendMessage", sender: Sender(user: user), turn: turn, request: request, confirming: [])
        }
        // Five old decisions, one recent, one old question still waiting, one old claim of a run, one admitted only.
        for id in ["a1", "a2", "a3", "a4", "a5", "recent"] {
            _ = try await admit(id)
            #expect(try await ledger.decide(id, sent, attempt: 1, by: .run) == sent)
        }
        _ = try await admit("waiting")
        #expect(try await ledger.ask("waiting", turn: 0, confirmations: [], granted: []) == nil)
        _ = try await admit("claimed")
        #expect(try await ledger.claim("claimed", attempt: 1) == nil)
        _ = try await admit("admitted")
        // And one decided (canceled) while its run was being kept for later: kept, its decision must stay for its run.
        _ = try await admit("b-kept")
        #expect(try await ledger.keep(KeptIntent(id: "b-kept", turn: 0, dueAt: 5_000, body: Array("{}".utf8), owner: "alice")))
        #expect(try await ledger.decide("b-kept", .canceled("canceled"), attempt: 1, by: .cancel) == .canceled("canceled"))
        try await database.write { db in
            try db.run("UPDATE intent_effect SET handled_at = 1000 WHERE intent_id <> 'recent'")
            try db.run("UPDATE intent_pending SET updated_at = 1000")
            try db.run("UPDATE intent_owner SET since = 1000")
        }
        func count(_ table: String) throws -> Int {
            try database.sync { db in try db.queryFirst("SELECT count(*) FROM \(table)") { $0.int(0) } ?? -1 }
        }

        // Steps of two decisions each: a1 a2 | a3 a4 | a5 b-kept | recent | the end.
        var steps: [(forgotten: Int, next: String?)] = []
        var cursor = ""
        while true {
            let step = try await ledger.forgetDecided(before: 2_000, after: cursor, limit: 2)
            steps.append(step)
            guard let next = step.next else { break }
            cursor = next
        }
        #expect(steps.map(\.forgotten) == [2, 2, 1, 0, 0])
        #expect(steps.map(\.next) == ["a2", "a4", "b-kept", "recent", nil])
        #expect(try count("intent_effect") == 2, "only the recent decision and the kept one's are left")
        #expect(try await ledger.outcome(of: "recent") == sent)
        #expect(try await ledger.outcome(of: "b-kept") == .canceled("canceled"))
        #expect(try count("intent_owner") == 5, "recent, b-kept, waiting, claimed and admitted keep their owners")
        #expect(try count("intent_pending") == 2, "the waiting question and the claim are kept")
        let second = try await ledger.forgetDecided(before: 2_000, after: "", limit: 10)
        #expect(second.forgotten == 0 && second.next == "recent", "a second pass finds nothing")
        // Once its run is over (it found the cancel), the kept one's decision goes with the next pass.
        try await ledger.forgetKept("b-kept", turn: 0)
        #expect(try await ledger.forgetDecided(before: 2_000, after: "", limit: 10).forgotten == 1)

        // What it forgot is unknown: a copy of a1's submission is a new intent, and anyone's.
        #expect(try await ledger.outcome(of: "a1") == nil)
        let again = try await admit("a1", as: "bob")
        #expect(again.isNew && again.refusal == nil && again.owner == "bob")
        // What it kept still holds: the waiting question's owner is still the only one who may answer it.
        #expect(try await admit("waiting", as: "mallory", turn: 1).refusal?.code == FailureCode.notOwner)
        #expect(try await admit("waiting", turn: 1).refusal == nil)
        #expect(try await admit("recent", as: "mallory").refusal?.code == FailureCode.idInUse, "a recent decision keeps its owner")
    }

    @Test func runningSlotsAreCountedPerKeyKeptOnARedeliveryAndFreedWhenGivenBackOrStale() async throws {
        let database = try queue()
        let ledger = try DatabaseOutcomeLedger(queue: database)
        let other = try DatabaseOutcomeLedger(queue: database)  // a second worker on the same database
        #expect(try await ledger.acquireSlot("owner=alice", intentID: "a", maximum: 2, staleAfter: 60))
        #expect(try await other.acquireSlot("owner=alice", intentID: "b", maximum: 2, staleAfter: 60))
        #expect(try await !other.acquireSlot("owner=alice", intentID: "c", maximum: 2, staleAfter: 60), "both slots are taken")
        #expect(try await ledger.acquireSlot("owner=alice", intentID: "a", maximum: 2, staleAfter: 60), "a redelivery keeps its slot")
        #expect(try await ledger.acquireSlot("owner=bob", intentID: "d", maximum: 2, staleAfter: 60), "another owner's slots are their own")
        try await ledger.releaseSlot("owner=alice", intentID: "a")
        #expect(try await other.acquireSlot("owner=alice", intentID: "c", maximum: 2, staleAfter: 60))
        // A worker that died holding a slot: it is free again once stale.
        #expect(try await !ledger.acquireSlot("owner=alice", intentID: "e", maximum: 2, staleAfter: 60))
        #expect(try await ledger.acquireSlot("owner=alice", intentID: "e", maximum: 2, staleAfter: 0))
    }

    @Test func aKeptIntentIsTakenOnceWhenDueAndAgainOnlyFromATakerThatNoLongerHoldsIt() async throws {
        let database = try queue()
        let ledger = try DatabaseOutcomeLedger(queue: database)
        let other = try DatabaseOutcomeLedger(queue: database)  // a second worker on the same database
        func kept(_ id: String, turn: Int = 0, at due: Double, startedAt: Double? = nil) -> KeptIntent {
            KeptIntent(
                id: id, turn: turn, dueAt: due, body: Array("{\"id\":\"\(id)\",\"turn\":\(turn)}".utf8), owner: "alice",
                startedAt: startedAt)
        }
        #expect(try await ledger.keep(kept("a", at: 100)))
        #expect(try await ledger.keep(kept("b", at: 200)))
        #expect(try await ledger.nextKeptDue() == 100)
        // Takers "one" and "two" (two workers); only "one" still holds what it took.
        let holds: @Sendable (String, Double) -> Bool = { taker, _ in taker == "one" }
        #expect(try await ledger.takeDueKept(by: 99, taker: "one", isHeld: holds, limit: 10).isEmpty, "not due yet")
        let first = try await ledger.takeDueKept(by: 150, taker: "one", isHeld: holds, limit: 10)
        #expect(first == [kept("a", at: 100)], "as it was kept, owner and body; no earlier start on a first take")
        #expect(try await ledger.nextKeptDue() == 200, "the next one no worker has taken")
        #expect(try await ledger.takeDueKept(by: 150, taker: "one", isHeld: holds, limit: 10).isEmpty, "held by its taker")
        try await ledger.letGoKept("a", turn: 0)  // taken, and let go before its run began
        #expect(try await ledger.takeDueKept(by: 150, taker: "one", isHeld: holds, limit: 10) == first, "no run began")
        try await ledger.noteKeptStart("a", turn: 0, at: 120)
        try await ledger.noteKeptStart("a", turn: 0, at: 130)  // a later run's start changes nothing
        try await ledger.letGoKept("a", turn: 0)  // what its run published was lost with the connection
        let retaken = try await ledger.takeDueKept(by: 150, taker: "one", isHeld: holds, limit: 10)
        let start = 120.0
        #expect(retaken == [kept("a", at: 100, startedAt: start)], "taken up again: when its first run began")
        #expect(try await other.takeDueKept(by: 150, taker: "two", isHeld: holds, limit: 10).isEmpty, "held by a worker that holds it")
        // Its taker ended before it ran: another worker takes it, and is told of the first start.
        let again = try await other.takeDueKept(by: 150, taker: "two", isHeld: { _, _ in false }, limit: 10)
        #expect(again == [kept("a", at: 100, startedAt: start)])
        // A later turn (an answer asked ahead) replaces the kept one; an older turn, or the same one taken, changes nothing.
        #expect(try await ledger.keep(kept("b", turn: 1, at: 210)))
        #expect(try await ledger.keep(kept("b", turn: 0, at: 200)))
        #expect(try await ledger.keep(kept("a", at: 100)))
        #expect(try await other.takeDueKept(by: 150, taker: "two", isHeld: { _, _ in true }, limit: 10).isEmpty, "still taken")
        try await ledger.forgetKept("b", turn: 0)
        // "a" is held by "two", which holds it no longer: taken back after "b" (at its later turn), which none held.
        let later = try await ledger.takeDueKept(by: 300, taker: "one", isHeld: holds, limit: 10)
        #expect(later == [kept("b", turn: 1, at: 210), kept("a", at: 100, startedAt: start)])
        try await ledger.forgetKept("a", turn: 0)
        try await ledger.forgetKept("b", turn: 1)
        #expect(try await ledger.nextKeptDue() == nil, "what ran is forgotten")
    }

    /// Workers serving different types may share a ledger (the worker's own, by default one file per user): each
    /// takes the due intents of its own types only, and what it does not serve stays for the worker that does; a body
    /// without a type is anyone's. The in-memory ledger does the same, and a ledger kept by an older version (no type
    /// column) has its rows' types read from their bodies when it is opened.
    @Test func aWorkerTakesOnlyTheKeptIntentsOfTheTypesItServes() async throws {
        func kept(_ id: String, _ type: String, at due: Double) -> KeptIntent {
            let envelope = IntentEnvelope(id: id, type: type, parameters: [:], submittedAt: 0, dueAt: due)
            return KeptIntent(id: id, turn: 0, dueAt: due, body: envelope.encoded(), owner: "alice")
        }
        let older = try queue("older.sqlite")
        try older.sync { db in
            try db.execute(
                """
                CREATE TABLE intent_kept (intent_id TEXT PRIMARY KEY NOT NULL, turn INTEGER NOT NULL, due_at REAL NOT NULL,
                    body TEXT NOT NULL, owner TEXT, taken_by TEXT, taken_at REAL, started_at REAL) WITHOUT ROWID
                """)
            for intent in [kept("message", "SendMessage", at: 100), kept("soup", "OrderSoup", at: 90)] {
                try db.run(
                    "INSERT INTO intent_kept(intent_id, turn, due_at, body) VALUES (?, 0, ?, ?)",
                    [.text(intent.id), .real(intent.dueAt), .text(String(decoding: intent.body, as: UTF8.self))])
            }
            try db.run("INSERT INTO intent_kept(intent_id, turn, due_at, body) VALUES ('unreadable', 0, 80, 'not an envelope')")
        }
        let fresh = try DatabaseOutcomeLedger(queue: queue())
        let ledgers: [any OutcomeLedger] = [fresh, InMemoryOutcomeLedger(), try DatabaseOutcomeLedger(queue: older)]
        for (index, ledger) in ledgers.enumerated() where index < 2 {
            #expect(try await ledger.keep(kept("message", "SendMessage", at: 100)))
            #expect(try await ledger.keep(kept("soup", "OrderSoup", at: 90)))
            var unreadable = kept("unreadable", "SendMessage", at: 80)
            unreadable.body = Array("not an envelope".utf8)
            #expect(try await ledger.keep(unreadable))
        }
        for ledger in ledgers {
            let free: @Sendable (String, Double) -> Bool = { _, _ in false }
            let messages = try await ledger.takeDueKept(by: 200, taker: "messages", isHeld: free, limit: 10, types: ["SendMessage"])
            #expect(messages.map(\.id).sorted() == ["message", "unreadable"], "\(type(of: ledger))")
            let soups = try await ledger.takeDueKept(
                by: 200, taker: "soups", isHeld: { taker, _ in taker == "messages" }, limit: 10, types: ["OrderSoup"])
            #expect(soups.map(\.id) == ["soup"], "the other type's worker finds its intent free: \(type(of: ledger))")
            #expect(try await ledger.keptIntent(of: "soup")?.dueAt == 90)
        }
        let plan = try older.sync { db in
            try db.query("EXPLAIN QUERY PLAN SELECT intent_id FROM intent_kept WHERE type IN ('OrderSoup') AND due_at <= 200") { $0.string(3) }
        }
        #expect(plan.contains { $0.contains("intent_kept_by_type") }, "\(plan)")
    }

    @Test func keptIntentsHeldByARunningWorkerNeverHideOneAWorkerThatEndedHeld() async throws {
        let ledger = try DatabaseOutcomeLedger(queue: queue())
        for index in 0..<300 {
            #expect(try await ledger.keep(KeptIntent(id: "busy-\(index)", turn: 0, dueAt: Double(index), body: Array("{}".utf8), owner: nil)))
        }
        #expect(try await ledger.takeDueKept(by: 1_000, taker: "running", isHeld: { _, _ in true }, limit: 300).count == 300)
        #expect(try await ledger.keep(KeptIntent(id: "orphan", turn: 0, dueAt: 500, body: Array("{}".utf8), owner: nil)))
        #expect(try await ledger.takeDueKept(by: 1_000, taker: "ended", isHeld: { _, _ in true }, limit: 1).map(\.id) == ["orphan"])
        // Three hundred rows of a worker that still runs come first by due time; the ended one's row is found past them.
        let found = try await ledger.takeDueKept(by: 1_000, taker: "other", isHeld: { taker, _ in taker == "running" }, limit: 1)
        #expect(found.map(\.id) == ["orphan"])
    }

    @Test func aDenialOrExpiryOfAnOlderQuestionIsMoot() async throws {
        let ledger = try DatabaseOutcomeLedger(queue: queue())
        #expect(try await ledger.ask("q", turn: 0, confirmations: [], granted: []) == nil)
        #expect(try await ledger.ask("q", turn: 1, confirmations: [], granted: []) == nil)
        let expired = DecidedOutcome.failure(IntentFailure(code: FailureCode.expired, message: "too late"))
        #expect(try await ledger.decide("q", expired, attempt: 1, by: .answer(question: 0)) == nil, "the intent asked again since")
        #expect(try await ledger.outcome(of: "q") == nil)
        #expect(try await ledger.decide("q", expired, attempt: 1, by: .answer(question: 1)) == expired)
    }

    @Test func aLedgerWithoutTheEffectsIsClaimedAndACancelLosesToTheClaim() async throws {
        let ledger = try DatabaseOutcomeLedger(path: directory.file("outcomes.sqlite"))
        #expect(!ledger.holdsEffects)
        #expect(try await ledger.claim("c", attempt: 1) == nil)
        #expect(try await ledger.decide("c", .canceled("stop"), attempt: 1, by: .cancel) == nil, "the handler may have acted")
        // Released without an outcome (waiting for a retry): unclaimed, it may be canceled.
        #expect(try await ledger.claim("d", attempt: 1) == nil)
        try await ledger.release("d")
        #expect(try await ledger.decide("d", .canceled("stop"), attempt: 1, by: .cancel) == .canceled("stop"))
        #expect(try await ledger.claim("d", attempt: 2) == .canceled("stop"))
    }

    @Test func aCancelThatFindsTheIntentClaimedHoldsOnceTheRunEndsWithoutAnOutcome() async throws {
        let ledger = try DatabaseOutcomeLedger(path: directory.file("claimed.sqlite"))
        // The run asks a question: the cancel that came meanwhile ends it instead.
        #expect(try await ledger.claim("q", attempt: 1) == nil)
        #expect(try await ledger.decide("q", .canceled("stop"), attempt: 1, by: .cancel) == nil)
        #expect(try await ledger.ask("q", turn: 0, confirmations: [], granted: [])?.state == .canceled)
        // The run waits for a retry: once released, the cancel holds.
        #expect(try await ledger.claim("r", attempt: 1) == nil)
        #expect(try await ledger.decide("r", .canceled("stop"), attempt: 1, by: .cancel) == nil)
        try await ledger.release("r")
        #expect(try await ledger.outcome(of: "r")?.state == .canceled)
        // The run succeeds: its outcome stands, the cancel lost.
        #expect(try await ledger.claim("s", attempt: 1) == nil)
        #expect(try await ledger.decide("s", .canceled("stop"), attempt: 1, by: .cancel) == nil)
        let done = DecidedOutcome.success(IntentResponse(code: "success"))
        #expect(try await ledger.decide("s", done, attempt: 1, by: .run) == done)
    }

    @Test func aSecondDeliveryWaitsWhileTheFirstHoldsTheClaim() async throws {
        let ledger = try DatabaseOutcomeLedger(path: directory.file("held.sqlite"))
        #expect(try await ledger.claim("c", attempt: 1) == nil)
        await #expect(throws: ClaimHeld.self) { _ = try await ledger.claim("c", attempt: 2) }
        try await ledger.release("c")
        #expect(try await ledger.claim("c", attempt: 2) == nil)
    }

    /// A claim holds as long as its run may last: past the usual lifetime (15 minutes) for a run with a longer time
    /// limit, so that a redelivery does not take it over and run the handler a second time beside the first.
    @Test func aClaimHoldsForItsRunsTimeLimitWhenThatIsLongerThanTheLifetime() async throws {
        let ledger = try DatabaseOutcomeLedger(path: directory.file("long.sqlite"))
        #expect(try await ledger.claim("short", attempt: 1) == nil)
        #expect(try await ledger.claim("long", attempt: 1, lasting: 7_200) == nil)
        // Twenty minutes pass.
        try await ledger.queue.write { db in
            try db.run("UPDATE intent_pending SET updated_at = updated_at - 1200, claim_until = claim_until - 1200")
        }
        #expect(try await ledger.claim("short", attempt: 2) == nil, "a claim past its lifetime is a dead worker's")
        await #expect(throws: ClaimHeld.self) { _ = try await ledger.claim("long", attempt: 2) }
        // A claim made before claims said until when holds for the lifetime from when it was made.
        try await ledger.queue.write { db in
            try db.run(
                "UPDATE intent_pending SET claim_until = NULL, updated_at = ? WHERE intent_id = 'long'", [.real(Date().timeIntervalSince1970 - 60)])
        }
        await #expect(throws: ClaimHeld.self) { _ = try await ledger.claim("long", attempt: 3) }
        try await ledger.queue.write { db in try db.run("UPDATE intent_pending SET updated_at = updated_at - 900 WHERE intent_id = 'long'") }
        #expect(try await ledger.claim("long", attempt: 4) == nil)
    }

    /// A claim left by a run whose worker died, with a cancel noted while it held it: twenty minutes later.
    private func deadRunsClaim(_ id: String, canceledDuring: Bool, in ledger: DatabaseOutcomeLedger) async throws {
        #expect(try await ledger.claim(id, attempt: 1) == nil)
        if canceledDuring {
            #expect(try await ledger.decide(id, .canceled("stop"), attempt: 1, by: .cancel) == nil, "noted: the run may have acted")
        }
        try await ledger.queue.write { db in
            try db.run(
                "UPDATE intent_pending SET updated_at = updated_at - 1200, claim_until = claim_until - 1200 WHERE intent_id = ?",
                [.text(id)])
        }
    }

    /// A takeover keeps the cancel noted during the dead run: the delivery that takes the claim over runs the intent
    /// again (the dead run may have acted, or not), and ends `canceled` if it asks a question or waits for a retry,
    /// as the dead run would have; with no cancel noted, its outcome stands.
    @Test func aCancelNotedDuringADeadRunsClaimIsKeptWhenAnotherDeliveryTakesTheClaimOver() async throws {
        let ledger = try DatabaseOutcomeLedger(path: directory.file("takeover.sqlite"))
        // The run that takes over asks a question: the cancel ends it instead.
        try await deadRunsClaim("q", canceledDuring: true, in: ledger)
        #expect(try await ledger.claim("q", attempt: 2) == nil, "the claim is a dead worker's: taken over")
        #expect(try await ledger.ask("q", turn: 0, confirmations: [], granted: [])?.state == .canceled)
        #expect(try await ledger.outcome(of: "q")?.state == .canceled)
        // The run that takes over waits for a retry: once it gives the claim back, the cancel holds.
        try await deadRunsClaim("r", canceledDuring: true, in: ledger)
        #expect(try await ledger.claim("r", attempt: 2) == nil)
        try await ledger.release("r")
        #expect(try await ledger.outcome(of: "r")?.state == .canceled)
        // No cancel: the takeover claims as before, and the run's outcome stands.
        try await deadRunsClaim("n", canceledDuring: false, in: ledger)
        #expect(try await ledger.claim("n", attempt: 2) == nil)
        let done = DecidedOutcome.success(IntentResponse(code: "success"))
        #expect(try await ledger.decide("n", done, attempt: 2, by: .run) == done)
    }

    /// A run that outlived its claim (its worker stalled, or its resolution took longer than the lifetime) while
    /// another delivery took the claim over: its release and its question lift nothing of the newer run's claim and
    /// decide nothing of a cancel noted during it, which the newer run's end decides. (They used to lift any claim: a
    /// cancel coming next was decided at once while the newer run's handler ran, and the newer run's success lost.)
    @Test func aRunThatOutlivedItsClaimLeavesTheClaimOfTheDeliveryThatTookItOverAlone() async throws {
        let ledger = try DatabaseOutcomeLedger(path: directory.file("outlived.sqlite"))
        #expect(try await ledger.claim("x", attempt: 1, holder: 11, lasting: 0) == nil)
        try await ledger.queue.write { db in
            try db.run("UPDATE intent_pending SET updated_at = updated_at - 1200, claim_until = claim_until - 1200")
        }
        #expect(try await ledger.claim("x", attempt: 1, holder: 22, lasting: 0) == nil, "a stale claim is taken over")
        try await ledger.release("x", holder: 11)
        await #expect(throws: ClaimHeld.self) { _ = try await ledger.claim("x", attempt: 1, holder: 33, lasting: 0) }
        #expect(try await ledger.decide("x", .canceled("stop"), attempt: 1, by: .cancel) == nil, "noted for the claim's run")
        #expect(try await ledger.ask("x", turn: 0, confirmations: [], granted: [], holder: 11) == nil)
        #expect(try await ledger.outcome(of: "x") == nil, "the older run's question decides nothing")
        await #expect(throws: ClaimHeld.self) { _ = try await ledger.claim("x", attempt: 1, holder: 33, lasting: 0) }
        // The claim's own run ends without an outcome: the cancel holds.
        try await ledger.release("x", holder: 22)
        #expect(try await ledger.outcome(of: "x")?.state == .canceled)
        // Without a holder, as before: any claim is lifted.
        #expect(try await ledger.claim("y", attempt: 1, holder: 44, lasting: 0) == nil)
        try await ledger.release("y")
        #expect(try await ledger.claim("y", attempt: 1, holder: 55, lasting: 0) == nil)
    }

    /// A renewed claim holds past its lifetime, for its own holder only.
    @Test func aClaimRenewedByItsHolderHoldsPastItsLifetime() async throws {
        let ledger = try DatabaseOutcomeLedger(path: directory.file("renewed.sqlite"))
        #expect(try await ledger.claim("live", attempt: 1, holder: 1, lasting: 0) == nil)
        #expect(try await ledger.claim("dead", attempt: 1, holder: 2, lasting: 0) == nil)
        try await ledger.queue.write { db in
            try db.run("UPDATE intent_pending SET updated_at = updated_at - 1200, claim_until = claim_until - 1200")
        }
        try await ledger.renewClaim("live", holder: 1, lasting: 0)
        try await ledger.renewClaim("dead", holder: 9, lasting: 0)
        await #expect(throws: ClaimHeld.self) { _ = try await ledger.claim("live", attempt: 1, holder: 3, lasting: 0) }
        #expect(try await ledger.claim("dead", attempt: 1, holder: 4, lasting: 0) == nil, "renewed by no one but its holder")
        // A claim made before claims said until when: renewed from when it was made.
        try await ledger.queue.write { db in
            try db.run("UPDATE intent_pending SET claim_until = NULL, updated_at = updated_at - 1200 WHERE intent_id = 'dead'")
        }
        try await ledger.renewClaim("dead", holder: 4, lasting: 0)
        await #expect(throws: ClaimHeld.self) { _ = try await ledger.claim("dead", attempt: 1, holder: 5, lasting: 0) }
    }

    @Test func effectsThatFindAnOutcomeDecidedCommitNothing() async throws {
        let queue = try queue()
        let ledger = try DatabaseOutcomeLedger(queue: queue)
        #expect(try await ledger.decide("t", .failure(IntentFailure(code: FailureCode.timedOut, message: "limit")), attempt: 1, by: .run) != nil)
        let context = IntentContext(intentID: "t", intentType: "Item")
        await #expect(throws: OutcomeAlreadyDecided.self) {
            _ = try await queue.write { db in
                try OnceOnly.perform(in: db, context: context) { db in
                    try db.run("INSERT INTO item(name) VALUES ('late')")
                    return .success("written")
                }
            }
        }
        #expect(try rows(queue) == 0)
    }

    /// Twenty `once` calls at once, ten for intents decided before (timed out): the batches they share are rolled
    /// back and applied again when one throws, and still each decided intent says "already decided" once, and each
    /// fresh one commits its effects once and says nothing of the kind.
    @Test func onceSaysAnOutcomeWasDecidedBeforeOnceEvenWhenItsBatchIsAppliedAgain() async throws {
        let app = try AppDatabase(path: directory.file("once.sqlite"), migrations: ["CREATE TABLE item(name TEXT NOT NULL)"])
        for index in 0..<10 {
            let late = IntentFailure(code: FailureCode.timedOut, message: "limit")
            #expect(try await app.ledger.decide("decided-\(index)", .failure(late), attempt: 1, by: .run) != nil)
        }
        let said = Mutex([String: Int]())
        let logger = Logger(label: "once") { record in
            guard record.message == "already decided: returning the recorded outcome", let id = record.metadata["intent.id"] else { return }
            said.withLock { $0[id, default: 0] += 1 }
        }
        let ids = (0..<10).flatMap { ["decided-\($0)", "fresh-\($0)"] }
        await withTaskGroup(of: Void.self) { group in
            for id in ids {
                group.addTask {
                    let context = IntentContext(intentID: id, intentType: "Item", logger: logger)
                    _ = try? await app.once(context) { db in
                        try db.run("INSERT INTO item(name) VALUES (?)", [.text(id)])
                        return .success("written")
                    }
                }
            }
        }
        #expect(said.withLock { $0 } == Dictionary(uniqueKeysWithValues: (0..<10).map { ("decided-\($0)", 1) }))
        let written = try app.queue.sync { db in try db.query("SELECT name FROM item ORDER BY name") { $0.string(0) } }
        #expect(written == (0..<10).map { "fresh-\($0)" }.sorted())
    }

    @Test func anOlderOnceOnlyTableIsBroughtUpToDateAndItsRowsStillRead() async throws {
        let queue = try queue("old.sqlite")
        try queue.sync { db in
            try db.execute(
                """
                CREATE TABLE intent_effect (
                    intent_id TEXT PRIMARY KEY NOT NULL, succeeded INTEGER NOT NULL, code TEXT NOT NULL, message TEXT,
                    payload TEXT, attempt INTEGER NOT NULL, handled_at REAL NOT NULL
                ) WITHOUT ROWID;
                INSERT INTO intent_effect VALUES ('ok', 1, 'success', 'done', NULL, 1, 0), ('no', 0, 'soupSoldOut', 'none left', NULL, 1, 0);
                """)
        }
        let ledger = try DatabaseOutcomeLedger(queue: queue)
        #expect(try await ledger.outcome(of: "ok") == .success(IntentResponse(code: "success", message: "done")))
        #expect(try await ledger.outcome(of: "no") == .failure(IntentFailure(code: "soupSoldOut", message: "none left")))
        #expect(try await ledger.decide("new", .canceled("stop"), attempt: 1, by: .cancel) == .canceled("stop"))
    }
}
