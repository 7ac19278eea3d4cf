import Foundation
import IntentKit

/// An app's own SQLite database, with the ledger its intents' outcomes are
/// decided in: a handler writes its effects with `once`, and a cancel, a
/// denial, an expiry or a time limit can then never commit beside them.
///
/// ```swift
/// let todos = try AppDatabase(path: "todo.sqlite", migrations: [
///     "CREATE TABLE todo (id INTEGER PRIMARY KEY, title TEXT NOT NULL, intent_id TEXT NOT NULL)",
/// ])
/// ```
public final class AppDatabase: Sendable {
    /// The database file.
    public let path: String
    /// The queue every use of the database goes through: reads, group-committed writes, `once`.
    public let queue: DatabaseQueue
    /// The outcome ledger in this database, where its handlers' intents are decided.
    public let ledger: DatabaseOutcomeLedger

    /// Opens (creating, mode 0600) the database at `path` and applies the
    /// migrations it has not had yet (`PRAGMA user_version` counts them).
    public init(path: String, migrations: [String] = [], label: String = "intentqueue.app") throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.path = path
        queue = try DatabaseQueue(path: path, label: label)
        try queue.sync { db in try db.migrate(migrations) }
        ledger = try DatabaseOutcomeLedger(queue: queue)
    }

    /// Reads, off the cooperative pool.
    public func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await queue.read(body)
    }

    /// A short read on the calling thread when the queue's reader is free (see `DatabaseQueue.readInPlace`): for
    /// lookups made on every intent's path, which the hop to the queue and back costs more than.
    public func readInPlace<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await queue.readInPlace(body)
    }

    /// Writes in a transaction (group-committed with the others queued meanwhile).
    public func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await queue.write(body)
    }

    /// The intent's effects, once: run in one transaction with the record of
    /// its outcome, unless it already has one (a redelivery gets the recorded
    /// response back; an outcome decided without the handler is thrown).
    /// `effects` may run more than once before one run commits (see
    /// `DatabaseQueue.write`): keep its effects to the database.
    public func once(_ context: IntentContext, _ effects: @escaping @Sendable (Database) throws -> IntentResponse) async throws -> IntentResponse {
        // Logged once the write has ended, not inside it: its body may run more than once.
        let response: IntentResponse
        let recorded: Bool
        do {
            let written: IntentResponse
            (written, recorded) = try await queue.write { db in try OnceOnly.performNoting(in: db, context: context, effects) }
            response = OnceOnly.noted(written, recorded: recorded, context)
        } catch {
            throw OnceOnly.noted(error, context)
        }
        context.committed.note(.success(response), before: recorded)
        return response
    }

    /// The first column of every row of a query: for a parameter's `choices`.
    public func strings(_ sql: String, _ bindings: [SQLValue] = []) async throws -> [String] {
        try await queue.read { db in try db.query(sql, bindings) { $0.string(0) } }
    }
}

/// A handler whose effects live in an app database: its outcomes are decided
/// in that database's ledger, and parameter types find the database with
/// `context.dependency(AppDatabase.self)`.
public protocol DatabaseIntentHandler: IntentHandler {
    /// The app database the handler writes its effects to (with `once`).
    var database: AppDatabase { get }
}

extension DatabaseIntentHandler {
    /// The app database's ledger: outcomes are decided in the same transactions as the handler's effects.
    public var ledger: (any OutcomeLedger)? { database.ledger }
    /// The app database, so parameter types find it with `context.dependency(AppDatabase.self)`.
    public var dependencies: [any Sendable] { [database] }
}
