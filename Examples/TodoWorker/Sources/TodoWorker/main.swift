import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import IntentWorker

let environment = ProcessInfo.processInfo.environment
let logger = Logger(label: "todo-worker") { record in
    FileHandle.standardError.write(Data("\(record.level.name) \(record.message) \(record.metadata)\n".utf8))
}

let database = try DatabaseQueue(path: environment["TODO_DB"] ?? "todo.sqlite")
try database.sync { db in
    try db.execute(OnceOnly.schema + """
        CREATE TABLE IF NOT EXISTS todo (
            id INTEGER PRIMARY KEY, title TEXT NOT NULL, due_in_days INTEGER, intent_id TEXT NOT NULL
        );
        """)
}

var registry = IntentRegistry()
try registry.register(AddTodoHandler(database: database, ledger: try DatabaseOutcomeLedger(queue: database)))

let worker = try WorkerService(
    registry: registry,
    configuration: WorkerConfiguration(brokerURL: try BrokerURL.fromEnvironment(environment), concurrency: 4),
    logger: logger)
_ = try await ServiceGroup(services: [worker], gracePeriod: 10, logger: logger).run()
