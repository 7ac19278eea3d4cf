import Foundation
import IntentAMQP
import IntentKit
import Testing

/// A retry copy waits in the one delay queue its bucket names. Earlier IntentQueues bound the delay queues to the
/// headers exchange with "x-match: all", under which RabbitMQ ignores every `x-` argument: each binding matched any
/// message, and every retry went to all nine delay queues, to come back nine times.
@Suite(.timeLimit(.minutes(10)))
struct RetryRoutingTests {
    @Test func aRetryCopyWaitsInTheOneDelayQueueOfItsBucketEvenWhereAnOlderWorkerBoundThem() async throws {
        let sandbox = try await Sandbox("retry-routing")
        defer { Task { await sandbox.tearDown() } }
        let url = try BrokerURL(sandbox.brokerURL)
        let topology = Topology()
        let connection = try AMQPConnection(url: url, connectTimeout: 10, rpcTimeout: 30)
        defer { connection.close() }
        try topology.declareRetries(on: connection)
        // What an older worker left behind: each delay queue bound as it bound them.
        for delay in topology.retryDelays {
            let retry = topology.retryQueue(forDelay: Double(delay))
            try connection.bindQueue(
                retry.queue, exchange: topology.retryExchange, routingKey: "",
                arguments: ["x-match": .string("all"), Topology.retryBucketHeader: .string(retry.bucket)])
        }
        // A worker of this version starts, and a retry is published for the longest delay: where it was wrongly
        // routed, the copies in the queues of a minute or more are still there to be counted.
        try topology.declareRetries(on: connection)
        let longest = topology.retryQueue(forDelay: Double(topology.retryDelays.max() ?? 1))
        try connection.enableConfirms()
        try connection.publishConfirmed(
            [
                OutgoingMessage(
                    exchange: topology.retryExchange, routingKey: "SendMessage", body: Array("{}".utf8), persistent: true, mandatory: true,
                    headers: [Topology.retryBucketHeader: .string(longest.bucket)])
            ], timeout: 30, context: "publishing a retry")
        var held: [String: Int] = [:]
        for delay in topology.retryDelays {
            let queue = topology.retryQueue(forDelay: Double(delay)).queue
            held[queue] = try connection.inspectQueue(queue).messages
        }
        #expect(held[longest.queue] == 1, "\(held)")
        #expect(held.filter { $0.key != longest.queue }.values.allSatisfy { $0 == 0 }, "\(held)")
    }

    /// A requeued dead letter goes back to the queue its priority chose: a high-priority intent is not demoted.
    @Test func aRequeuedHighPriorityIntentGoesBackToTheHighPriorityQueue() async throws {
        let sandbox = try await Sandbox("requeue-priority")
        defer { Task { await sandbox.tearDown() } }
        let url = try BrokerURL(sandbox.brokerURL)
        let topology = Topology()
        let connection = try AMQPConnection(url: url, connectTimeout: 10, rpcTimeout: 30)
        defer { connection.close() }
        try topology.declareWork(on: connection, types: ["SendMessage"])
        try connection.enableConfirms()
        let urgent = IntentEnvelope(
            id: "urgent-1", type: "SendMessage", parameters: ["recipients": ["Alice"], "content": "now"], submittedAt: 1, priority: .high)
        try connection.publishConfirmed(
            [
                OutgoingMessage(
                    exchange: "", routingKey: topology.deadLetterQueue, body: urgent.encoded(), messageID: urgent.id, type: urgent.type,
                    persistent: true, mandatory: true)
            ], timeout: 30, context: "dead-lettering an urgent intent")
        #expect(try DeadLetters.requeue(id: urgent.id, url: url, topology: topology) == .requeued(type: "SendMessage"))
        #expect(try connection.inspectQueue(topology.highPriorityQueue).messages == 1)
        #expect(try connection.inspectQueue(topology.workQueue).messages == 0)
    }
}
