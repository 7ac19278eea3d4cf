import Foundation
import IntentWorker
import Synchronization

/// The gateway's Prometheus families, served at `/metrics` straight from the
/// process. Requests are counted in a table of their own (a lock and an
/// integer per route and code, no label text made per request) and written
/// out with the rest when scraped.
final class GatewayMetrics: Sendable {
    let metrics = Metrics()

    private struct Key: Hashable {
        var route: String
        var status: Int
    }

    private struct Table {
        var answered: [Key: Int] = [:]
        var seconds: [String: (counts: [Int], sum: Double, count: Int)] = [:]
    }

    private let table = Mutex(Table())
    private static let buckets = Metrics.durationBuckets

    init() {
        metrics.declare("intent_gateway_submits_total", .counter, help: "Intents submitted and confirmed by the broker.")
        metrics.declare("intent_gateway_open_waits", .gauge, help: "Long polls waiting for an intent.")
        metrics.declare("intent_gateway_open_streams", .gauge, help: "Event streams open.")
        metrics.declare("intent_gateway_open_connections", .gauge, help: "HTTP connections with a request in progress.")
        metrics.declare("intent_gateway_broker_up", .gauge, help: "1 while the gateway follows status events on the broker.")
        metrics.declare("intent_gateway_unauthorized_total", .counter, help: "Requests refused for a missing or unknown token.")
        metrics.declare("intent_gateway_recorder_probes_total", .counter, help: "Questions to the recorder whether it answers, for /healthz.")
    }

    func answered(route: String, status: Int, seconds: Double) {
        let bucket = Self.buckets.firstIndex { seconds <= $0 }
        table.withLock { table in
            table.answered[Key(route: route, status: status), default: 0] += 1
            var entry = table.seconds[route] ?? (Array(repeating: 0, count: Self.buckets.count), 0, 0)
            if let bucket { entry.counts[bucket] += 1 }
            entry.sum += seconds
            entry.count += 1
            table.seconds[route] = entry
        }
    }

    func submitted() { metrics.increment("intent_gateway_submits_total") }

    func unauthorized() { metrics.increment("intent_gateway_unauthorized_total") }

    func probedRecorder() { metrics.increment("intent_gateway_recorder_probes_total") }

    func setBrokerUp(_ up: Bool) { metrics.set("intent_gateway_broker_up", to: up ? 1 : 0) }

    func render(waits: Int, streams: Int, connections: Int) -> String {
        metrics.set("intent_gateway_open_waits", to: Double(waits))
        metrics.set("intent_gateway_open_streams", to: Double(streams))
        metrics.set("intent_gateway_open_connections", to: Double(connections))
        let table = table.withLock { $0 }
        var text = "# HELP intent_gateway_requests_total HTTP requests answered, by route and status code.\n"
        text += "# TYPE intent_gateway_requests_total counter\n"
        for (key, count) in table.answered.sorted(by: { ($0.key.route, $0.key.status) < ($1.key.route, $1.key.status) }) {
            text += "intent_gateway_requests_total{code=\"\(key.status)\",route=\"\(key.route)\"} \(count)\n"
        }
        text += "# HELP intent_gateway_request_seconds Time from a request to its answer (streams: to their start), by route.\n"
        text += "# TYPE intent_gateway_request_seconds histogram\n"
        for (route, entry) in table.seconds.sorted(by: { $0.key < $1.key }) {
            var cumulative = 0
            for (index, bound) in Self.buckets.enumerated() {
                cumulative += entry.counts[index]
                text += "intent_gateway_request_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            text += "intent_gateway_request_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(entry.count)\n"
            text += "intent_gateway_request_seconds_sum{route=\"\(route)\"} \(entry.sum)\n"
            text += "intent_gateway_request_seconds_count{route=\"\(route)\"} \(entry.count)\n"
        }
        return text + metrics.render()
    }
}
