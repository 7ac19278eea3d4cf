import Foundation
import IntentAMQP

/// Publishes arbitrary bodies, as a careless or hostile client would, on a connection of its own.
func publishRaw(
    url: String, routingKey: String, body: [UInt8], messageID: String? = nil, exchange: String = "intents",
    headers: [String: HeaderValue] = [:], userID: String? = nil
) async throws {
    let broker = try BrokerURL(url)
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        Thread {
            continuation.resume(
                with: Result {
                    let connection = try AMQPConnection(url: broker)
                    defer { connection.close() }
                    try connection.enableConfirms()
                    try connection.publishConfirmed(
                        [
                            OutgoingMessage(
                                exchange: exchange, routingKey: routingKey, body: body, messageID: messageID, userID: userID, persistent: true,
                                mandatory: true, headers: headers)
                        ], timeout: 10, context: "publishing a raw message")
                })
        }.start()
    }
}

/// How many messages a queue of the sandbox's virtual host holds, from rabbitmqctl.
func queueDepth(_ queue: String, sandbox: Sandbox, broker: TestBroker = .shared) async throws -> Int? {
    try await queueFigure("messages", of: queue, sandbox: sandbox, broker: broker)
}

/// How many consumers a queue of the sandbox's virtual host has, from rabbitmqctl.
func queueConsumers(_ queue: String, sandbox: Sandbox, broker: TestBroker = .shared) async throws -> Int? {
    try await queueFigure("consumers", of: queue, sandbox: sandbox, broker: broker)
}

/// One of rabbitmqctl's `list_queues` figures for a queue of the sandbox's virtual host; nil when it has no such queue.
private func queueFigure(_ figure: String, of queue: String, sandbox: Sandbox, broker: TestBroker) async throws -> Int? {
    let vhost = String(sandbox.brokerURL.split(separator: "/").last ?? "")
    let listed = try await broker.control(["list_queues", "-q", "-p", vhost, "name", figure])
    for line in listed.split(separator: "\n") {
        let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
        if fields.count == 2, fields[0] == queue { return Int(fields[1]) }
    }
    return nil
}

/// The queue's depth once it reaches `expected` (rabbitmqctl's figures lag a
/// little behind acks), or the last figure seen after ten seconds.
func settledDepth(_ queue: String, expected: Int, sandbox: Sandbox, broker: TestBroker = .shared) async throws -> Int? {
    var depth: Int?
    for _ in 0..<40 {
        // A rabbitmqctl that fails on a busy machine is asked again.
        depth = try? await queueDepth(queue, sandbox: sandbox, broker: broker)
        if depth == expected { break }
        try await Task.sleep(for: .milliseconds(250))
    }
    return depth
}
