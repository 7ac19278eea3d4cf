import Foundation
import IntentKit
import IntentStore

/// The Hairdressers app's own SQLite database: hairdressers, groups, the
/// messages sent to them, the soup menu and orders, appointments, payments,
/// the custom vocabulary, and the ledger where its intents' outcomes are
/// decided (in the same transactions as its rows).
public enum HairdressersDatabase {
    public static let environmentVariable = "HAIRDRESSERS_DB"

    /// Opens (creating and seeding on first start) the database at `path`.
    public static func open(path: String) throws -> AppDatabase {
        try AppDatabase(path: path, migrations: migrations, label: "hairdressers.database")
    }

    static let migrations = [
        """
        CREATE TABLE hairdresser (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE
        );
        CREATE TABLE "group" (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE
        );
        CREATE TABLE group_member (
            group_id INTEGER NOT NULL REFERENCES "group"(id),
            hairdresser_id INTEGER NOT NULL REFERENCES hairdresser(id),
            PRIMARY KEY (group_id, hairdresser_id)
        ) WITHOUT ROWID;
        CREATE TABLE message (
            id INTEGER PRIMARY KEY,
            created_at REAL NOT NULL,
            hairdresser TEXT NOT NULL,
            content TEXT NOT NULL,
            group_name TEXT,
            intent_id TEXT NOT NULL
        );
        CREATE INDEX message_by_intent ON message(intent_id);
        CREATE TABLE soup (
            name TEXT PRIMARY KEY NOT NULL,
            price_cents INTEGER NOT NULL,
            available INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE soup_order (
            id INTEGER PRIMARY KEY,
            created_at REAL NOT NULL,
            soup TEXT NOT NULL REFERENCES soup(name),
            quantity INTEGER NOT NULL,
            total_cents INTEGER NOT NULL,
            intent_id TEXT NOT NULL UNIQUE
        );
        """ + seed,
        """
        CREATE TABLE appointment (
            id INTEGER PRIMARY KEY,
            created_at REAL NOT NULL,
            hairdresser TEXT NOT NULL,
            time TEXT NOT NULL,
            intent_id TEXT NOT NULL UNIQUE
        );
        """,
        """
        CREATE TABLE payment (
            id INTEGER PRIMARY KEY,
            created_at REAL NOT NULL,
            hairdresser TEXT NOT NULL,
            amount REAL NOT NULL,
            currency TEXT NOT NULL,
            payer TEXT,
            intent_id TEXT NOT NULL UNIQUE
        );
        """,
        """
        CREATE TABLE vocabulary (
            kind TEXT NOT NULL,
            term TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (kind, term)
        ) WITHOUT ROWID;
        """,
        namesRevision,
    ]

    /// Resolution keeps the names and terms it read for as long as this revision stays the same: every change to
    /// them, through the app, `vocabulary set` in another process or plain SQL, moves it in the same transaction.
    /// A later migration that rebuilds one of these four tables (create, copy, drop, rename) drops its triggers
    /// with it and must create them again, or resolution would go on reading the names it kept.
    static let namesRevision =
        """
        CREATE TABLE names_revision (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            revision INTEGER NOT NULL
        );
        INSERT INTO names_revision(id, revision) VALUES (1, 0);

        """
        + ["hairdresser", "\"group\"", "soup", "vocabulary"].flatMap { table in
            ["INSERT", "UPDATE", "DELETE"].map { change in
                let name = "names_revision_\(table.filter(\.isLetter))_\(change.lowercased())"
                return "CREATE TRIGGER \(name) AFTER \(change) ON \(table) BEGIN UPDATE names_revision SET revision = revision + 1; END;\n"
            }
        }.joined()

    /// The seed data of the tutorial app, created on first start.
    static let seed = """
        INSERT INTO hairdresser(name) VALUES
            ('Alice Smith'), ('Bob Jones'), ('Jeff Baker'), ('Jeff Chen'), ('Carol White'), ('Dan Brown'), ('Erin Davis');
        INSERT INTO "group"(name) VALUES ('neighbors'), ('coworkers'), ('developers');
        INSERT INTO group_member(group_id, hairdresser_id)
            SELECT g.id, h.id FROM "group" g, hairdresser h
            WHERE (g.name = 'neighbors' AND h.name IN ('Alice Smith', 'Bob Jones'))
               OR (g.name = 'coworkers' AND h.name IN ('Carol White', 'Dan Brown', 'Jeff Baker'))
               OR (g.name = 'developers' AND h.name IN ('Erin Davis', 'Jeff Chen'));
        INSERT INTO soup(name, price_cents, available) VALUES
            ('Tomato Soup', 450, 1), ('Clam Chowder', 650, 1), ('Chicken Noodle Soup', 550, 1), ('Minestrone', 500, 0);
        """

}
