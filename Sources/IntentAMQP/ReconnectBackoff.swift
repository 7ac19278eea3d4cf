import Foundation
import IntentKit

/// How long to wait before the next attempt to reach the broker: doubling from
/// `initial` up to `maximum`, with ±20 % jitter so a fleet does not reconnect in step.
public struct ReconnectBackoff: Sendable {
    /// The wait before the next attempt.
    public private(set) var delay: Double
    private let initial: Double
    private let maximum: Double

    /// A backoff that starts at `initial` seconds and grows to `maximum` at most (give or take its jitter).
    public init(initial: Double = 0.2, maximum: Double = 10) {
        self.initial = initial
        self.maximum = maximum
        delay = initial
    }

    /// The wait for this failed attempt; the next one will be longer.
    public mutating func next() -> Double {
        defer { delay = min(delay * 2, maximum) * Double.random(in: 0.8...1.2) }
        return delay
    }

    /// After a success: start again from `initial`.
    public mutating func reset() {
        delay = initial
    }
}

/// The life of a long-lived connection, the same for the worker's consumer
/// loop and the recorder: connect (and declare what it needs), serve until
/// `serve` returns, and when either fails, reconnect after a growing pause
/// (a connection that served a while starts the pauses again) — until stopped.
public enum ReconnectLoop {
    /// Connects and serves until `serve` returns or `isStopping` holds, reconnecting after each failure.
    /// - Parameters:
    ///   - url: the broker, for the log lines.
    ///   - logger: where each failure and reconnection is logged.
    ///   - isStopping: asked before each attempt; true ends the loop.
    ///   - pause: waits that long, or less when stopping.
    ///   - connect: a new connection, ready to serve; `generation` counts them from 1.
    ///   - serve: returns when the work is done (its connection is then closed), throws when the connection broke.
    ///   - longestPause: the longest wait between two attempts, in seconds.
    public static func run(
        url: BrokerURL, logger: Logger, isStopping: () -> Bool, pause: (Double) -> Void,
        connect: (_ generation: UInt64) throws -> AMQPConnection, serve: (AMQPConnection) throws -> Void,
        longestPause: Double = 10
    ) {
        var backoff = ReconnectBackoff(maximum: longestPause)
        var generation: UInt64 = 0
        while !isStopping() {
            generation += 1
            let connection: AMQPConnection
            do {
                connection = try connect(generation)
            } catch {
                let wait = backoff.next()
                logger.warning("broker unavailable, retrying in \(String(format: "%.1f", wait)) s: \(error)", metadata: ["amqp.url": url.description])
                pause(wait)
                continue
            }
            logger.info("connected", metadata: ["amqp.url": connection.url.description])
            let connected = Date()
            do {
                try serve(connection)
                connection.close()
                return
            } catch {
                connection.abandon()
                if Date().timeIntervalSince(connected) > 10 { backoff.reset() }
                let wait = backoff.next()
                logger.warning(
                    "connection lost, reconnecting in \(String(format: "%.1f", wait)) s: \(error)", metadata: ["amqp.url": connection.url.description]
                )
                pause(wait)
            }
        }
    }
}
