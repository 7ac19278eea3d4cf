import IntentWorker

/// The gateway's Prometheus families, served at `/metrics` straight from the process.
final class GatewayMetrics: Sendable {
    let metrics = Metrics()

    init() {
        metrics.declare("intent_gateway_requests_total", .counter, help: "HTTP requests answered, by route and status code.")
        metrics.declare("intent_gateway_request_seconds", .histogram, help: "Time from a request to its answer (streams: to their start), by route.")
        metrics.declare("intent_gateway_submits_total", .counter, help: "Intents submitted and confirmed by the broker.")
        metrics.declare("intent_gateway_open_waits", .gauge, help: "Long polls waiting for an intent.")
        metrics.declare("intent_gateway_open_streams", .gauge, help: "Event streams open.")
        metrics.declare("intent_gateway_open_connections", .gauge, help: "HTTP connections with a request in progress.")
        metrics.declare("intent_gateway_broker_up", .gauge, help: "1 while the gateway follows status events on the broker.")
        metrics.declare("intent_gateway_unauthorized_total", .counter, help: "Requests refused for a missing or unknown token.")
    }

    func answered(route: String, status: Int, seconds: Double) {
        metrics.increment("intent_gateway_requests_total", ["route": route, "code": String(status)])
        metrics.observe("intent_gateway_request_seconds", ["route": route], seconds)
    }

    func submitted() { metrics.increment("intent_gateway_submits_total") }

    func unauthorized() { metrics.increment("intent_gateway_unauthorized_total") }

    func setBrokerUp(_ up: Bool) { metrics.set("intent_gateway_broker_up", to: up ? 1 : 0) }

    func render(waits: Int, streams: Int, connections: Int) -> String {
        metrics.set("intent_gateway_open_waits", to: Double(waits))
        metrics.set("intent_gateway_open_streams", to: Double(streams))
        metrics.set("intent_gateway_open_connections", to: Double(connections))
        return metrics.render()
    }
}
