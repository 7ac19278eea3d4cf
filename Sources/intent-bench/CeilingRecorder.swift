import Foundation
import IntentAMQP
import IntentStore

/// The ceiling's recorder: consumes the ledger and writes every message as a
/// row, in `BEGIN IMMEDIATE` batches (WAL, synchronous=FULL), acking each batch
/// with one `multiple` ack after its commit — the StatusRecorder's pattern
/// without decoding or upserts.
struct CeilingRecorder: Sendable {
    var url: BrokerURL
    var topology: Topology
    var storePath: String
    var expectedRows: Int
    var batchSize: Int

    /// Returns the time of the commit that wrote the last expected row.
    func run(gate: StartGate, control: PhaseControl) throws -> Date {
        let database = try Database(path: storePath)
        defer { database.close() }
        try database.execute(
            "CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, routing_key TEXT NOT NULL, body TEXT NOT NULL)")
        let connection = try AMQPConnection(url: url, connectTimeout: 5)
        defer { connection.close() }
        try connection.setPrefetch(UInt16(clamping: batchSize * 2))
        try connection.consume(topology.ledgerQueue)
        var batch: [Delivery] = []
        batch.reserveCapacity(batchSize)
        var written = 0
        var lastCommit = Date()
        _ = try gate.arriveAndWait(control: control)

        func flush() throws {
            guard let last = batch.last else { return }
            try database.transaction { db in
                for delivery in batch {
                    try db.run(
                        "INSERT INTO ledger(routing_key, body) VALUES (?, ?)",
                        [.text(delivery.routingKey), .text(String(decoding: delivery.body, as: UTF8.self))])
                }
            }
            try connection.ack(last.tag.value, multiple: true)
            written += batch.count
            batch.removeAll(keepingCapacity: true)
            lastCommit = Date()
        }

        while written < expectedRows {
            let event = try connection.nextEvent(timeout: batch.isEmpty ? 0.2 : 0)
            guard let event else {
                if batch.isEmpty {
                    try control.check("recording (\(written) of \(expectedRows) rows written)")
                } else {
                    try flush()
                }
                continue
            }
            guard case .delivery(let delivery) = event else { continue }
            batch.append(delivery)
            if batch.count >= batchSize || written + batch.count >= expectedRows { try flush() }
        }
        return lastCommit
    }
}
