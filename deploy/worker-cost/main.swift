import Foundation
import Hairdressers
import IntentQueue
import Synchronization

// The harness of deploy/worker-cost.sh: SendMessage intents through the real worker (decoding, the admission,
// resolution, the handler's `once`, the status event, the ack) on an in-memory transport, with the Hairdressers
// app database in a real SQLite file: the worker's own share of an intent, without the broker's I/O or the recorder.
//   worker-cost COUNT all    every delivery handed in at once (the worker at full speed)
//   worker-cost COUNT one    one delivery at a time, the next once the last is acked (a light load: batches of one)
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
/// The in-memory transport, telling the harness of every ack.
final class AckSignallingTransport: DeliveryTransport {
    let inner: InMemoryTransport
    let acks = DispatchSemaphore(value: 0)

    init(_ inner: InMemoryTransport) { self.inner = inner }

    var deliveries: AsyncStream<Delivery> { inner.deliveries }
    var isConnected: Bool { inner.isConnected }
    func start() { inner.start() }
    func stopConsuming() { inner.stopConsuming() }
    func shutdown(grace: Double) async { await inner.shutdown(grace: grace) }

    func send(_ command: ConsumerLoop.Command) {
        inner.send(command)
        // Every delivery is settled once: acked with its outcome's publish, acked alone, or rejected (which
        // the count after the run then reports).
        switch command {
        case .publish(_, .some), .ack, .reject: acks.signal()
        case .publish(_, nil): break
        }
    }
}

let made = Mutex<AckSignallingTransport?>(nil)
let worker = try WorkerService(registry: registry, configuration: configuration, logger: .disabled()) { loop, _ in
    let transport = AckSignallingTransport(InMemoryTransport(configuration: loop, loopback: [configuration.topology.cancelExchange]))
    made.withLock { $0 = transport }
    return transport
}
let transport = made.withLock { $0! }
// Ids as IntentQueue's clients make them (`IntentID`: version 7, the time in milliseconds first), made a millisecond
// apart; COST_IDS=random counts version 4 ones, as clients made them before.
let randomIDs = ProcessInfo.processInfo.environment["COST_IDS"] == "random"
func newID(_ index: Int) -> String {
    let random = UUID().uuidString.lowercased()
    guard !randomIDs else { return random }
    let time = String(format: "%012llx", 1_796_000_000_000 + UInt64(index))
    return "\(time.prefix(8))-\(time.suffix(4))-7\(random.dropFirst(15))"
}
let envelopes = (0..<count).map { index in
    let envelope = IntentEnvelope(
        id: newID(index), type: "SendMessage",
        parameters: ["recipients": .array([.string("Alice Smith")]), "content": .string("Running late")],
        submittedAt: Date().timeIntervalSince1970)
    return (id: envelope.id, body: envelope.encoded())
}
guard mode == "all" || mode == "one" else { exit(0) }
let running = Task { try await worker.run() }
func deliver(_ envelope: (id: String, body: [UInt8])) {
    transport.inner.deliver(body: envelope.body, routingKey: "SendMessage", messageID: envelope.id, type: "SendMessage", userID: "tester")
}
if mode == "one" {
    for envelope in envelopes {
        deliver(envelope)
        transport.acks.wait()
    }
} else {
    for envelope in envelopes { deliver(envelope) }
    for _ in envelopes { transport.acks.wait() }
}
guard transport.inner.acked.count == count else {
    let (acked, rejected) = (transport.inner.acked.count, transport.inner.rejected.count)
    FileHandle.standardError.write(Data("worker-cost: \(acked) of \(count) deliveries acked, \(rejected) rejected\n".utf8))
    exit(1)
}
let succeeded = try database.queue.sync { db in try db.queryFirst("SELECT count(*) FROM intent_effect WHERE state = 'success'") { $0.int(0) } }
guard succeeded == count else {
    FileHandle.standardError.write(Data("worker-cost: \(succeeded ?? 0) of \(count) intents succeeded\n".utf8))
    exit(1)
}
