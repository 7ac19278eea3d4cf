import Foundation
import Hairdressers
import IntentQueue
import Synchronization

// The harness of deploy/worker-cost.sh: SendMessage intents through the real worker (decoding, the admission,
// resolution, the handler's `once`, the status event, the ack) on an in-memory transport, with the Hairdressers
// app database in a real SQLite file: the worker's own share of an intent, without the broker's I/O or the recorder.
//   worker-cost COUNT all    every delivery handed in at once (the worker at full speed)
//   worker-cost COUNT none   only the envelopes made: the harness's own share, to take away
let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1])! : 1_000
let mode = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : "all"
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("worker-cost-\(getpid())")
defer { try? FileManager.default.removeItem(at: directory) }
let database = try HairdressersDatabase.open(path: directory.appendingPathComponent("hairdressers.sqlite").path)
var registry = IntentRegistry()
try registry.register(SendMessageHandler(database: database))
var configuration = WorkerConfiguration(brokerURL: try BrokerURL("amqp://worker:worker@127.0.0.1:1/%2f"), concurrency: 16)
configuration.workerName = "worker-cost"
configuration.ledger = InMemoryOutcomeLedger()
// Callgrind slows every run fifty times, past the started-event delay; at full speed a quick run publishes no
// `inProgress`, so none does here either.
configuration.startedEventDelay = 1_000
let made = Mutex<InMemoryTransport?>(nil)
let worker = try WorkerService(registry: registry, configuration: configuration, logger: .disabled()) { loop, _ in
    let transport = InMemoryTransport(configuration: loop, loopback: [configuration.topology.cancelExchange])
    made.withLock { $0 = transport }
    return transport
}
let transport = made.withLock { $0! }
let envelopes = (0..<count).map { _ in
    let envelope = IntentEnvelope(
        id: UUID().uuidString.lowercased(), type: "SendMessage",
        parameters: ["recipients": .array([.string("Alice Smith")]), "content": .string("Running late")],
        submittedAt: Date().timeIntervalSince1970)
    return (id: envelope.id, body: envelope.encoded())
}
guard mode == "all" else { exit(0) }
let running = Task { try await worker.run() }
let done = DispatchSemaphore(value: 0)
Task {
    for envelope in envelopes {
        transport.deliver(body: envelope.body, routingKey: "SendMessage", messageID: envelope.id, type: "SendMessage", userID: "tester")
    }
    while transport.acked.count < count { try await Task.sleep(for: .milliseconds(5)) }
    done.signal()
}
done.wait()
let succeeded = try database.queue.sync { db in try db.queryFirst("SELECT count(*) FROM intent_effect WHERE state = 'success'") { $0.int(0) } }
guard succeeded == count else {
    FileHandle.standardError.write(Data("worker-cost: \(succeeded ?? 0) of \(count) intents succeeded\n".utf8))
    exit(1)
}
