import Foundation
import Synchronization

/// Counters, gauges and histograms, rendered in Prometheus' text exposition
/// format. Families are declared once with their help and type; samples are
/// keyed by their labels. Thread-safe; no I/O (a writer puts the text in a file).
public final class Metrics: Sendable {
    /// What a family measures, named as in its `# TYPE` line.
    public enum Kind: String, Sendable {
        /// A counter only goes up; a gauge is set to what is current; a histogram counts observations in buckets, with their sum.
        case counter, gauge, histogram
    }

    /// The upper bounds of histogram buckets, in seconds: 1 ms to 10 min.
    public static let durationBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600]

    private struct Family {
        var kind: Kind
        var help: String
        var buckets: [Double]
        /// Rendered label set (`{a="x",b="y"}` or empty) → value.
        var values: [String: Double] = [:]
        /// For histograms: label set → (bucket counts, sum, count).
        var histograms: [String: (counts: [Double], sum: Double, count: Double)] = [:]
    }

    private struct State {
        var order: [String] = []
        var families: [String: Family] = [:]
    }

    private let state = Mutex(State())

    /// Metrics with no families yet: samples of a family not declared (see `declare`) are ignored.
    public init() {}

    /// Declares a family; declaring it again with the same kind is harmless.
    public func declare(_ name: String, _ kind: Kind, help: String, buckets: [Double] = Metrics.durationBuckets) {
        state.withLock { state in
            guard state.families[name] == nil else { return }
            state.order.append(name)
            state.families[name] = Family(kind: kind, help: help, buckets: buckets.sorted())
        }
    }

    /// Adds to a counter (or a gauge).
    public func increment(_ name: String, _ labels: [String: String] = [:], by amount: Double = 1) {
        let key = Self.labelText(labels)
        state.withLock { state in
            guard let family = state.families[name] else { return }
            state.families[name]?.values[Self.bounded(key, labels, family.values.count, family.values[key] != nil), default: 0] += amount
        }
    }

    /// The most label sets a family keeps: label values come from what
    /// workers report (types, codes), and a family without a bound is a
    /// Prometheus series per distinct value anyone could send.
    public static let maximumSeriesPerFamily = 500

    /// `key`, or past the bound the one set whose every value is `other`.
    private static func bounded(_ key: String, _ labels: [String: String], _ count: Int, _ known: Bool) -> String {
        guard !known, count >= maximumSeriesPerFamily else { return key }
        return labelText(labels.mapValues { _ in "other" })
    }

    /// Sets a gauge.
    public func set(_ name: String, _ labels: [String: String] = [:], to value: Double) {
        let key = Self.labelText(labels)
        state.withLock { state in
            state.families[name]?.values[key] = value
        }
    }

    /// Removes every sample of a gauge family (before setting what is current).
    public func clear(_ name: String) {
        state.withLock { state in
            state.families[name]?.values.removeAll()
        }
    }

    /// Records one observation in a histogram.
    public func observe(_ name: String, _ labels: [String: String] = [:], _ value: Double) {
        state.withLock { state in
            guard var family = state.families[name], family.kind == .histogram else { return }
            let given = Self.labelText(labels)
            let key = Self.bounded(given, labels, family.histograms.count, family.histograms[given] != nil)
            var entry = family.histograms[key] ?? (Array(repeating: 0, count: family.buckets.count), 0, 0)
            for (index, bound) in family.buckets.enumerated() where value <= bound {
                entry.counts[index] += 1
            }
            entry.sum += value
            entry.count += 1
            family.histograms[key] = entry
            state.families[name] = family
        }
    }

    /// A counter's or gauge's current value (0 when never set).
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double {
        let key = Self.labelText(labels)
        return state.withLock { $0.families[name]?.values[key] ?? 0 }
    }

    /// The text exposition format, families in declaration order, samples sorted.
    /// `constantLabels` go first on every sample (telling apart the files of
    /// several processes in one textfile-collector directory).
    public func render(constantLabels: [String: String] = [:]) -> String {
        let constant = Self.labelText(constantLabels)
        func with(_ labels: String) -> String {
            guard !constant.isEmpty else { return labels }
            return labels.isEmpty ? constant : String(constant.dropLast()) + "," + labels.dropFirst()
        }
        return state.withLock { state in
            var text = ""
            for name in state.order {
                guard let family = state.families[name] else { continue }
                text += "# HELP \(name) \(Self.escapeHelp(family.help))\n# TYPE \(name) \(family.kind.rawValue)\n"
                if family.kind == .histogram {
                    for (own, entry) in family.histograms.sorted(by: { $0.key < $1.key }) {
                        let labels = with(own)
                        for (index, bound) in family.buckets.enumerated() {
                            text += "\(name)_bucket\(Self.adding("le", Self.number(bound), to: labels)) \(Self.number(entry.counts[index]))\n"
                        }
                        text += "\(name)_bucket\(Self.adding("le", "+Inf", to: labels)) \(Self.number(entry.count))\n"
                        text += "\(name)_sum\(labels) \(Self.number(entry.sum))\n"
                        text += "\(name)_count\(labels) \(Self.number(entry.count))\n"
                    }
                } else {
                    for (labels, value) in family.values.sorted(by: { $0.key < $1.key }) {
                        text += "\(name)\(with(labels)) \(Self.number(value))\n"
                    }
                }
            }
            return text
        }
    }

    static func labelText(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        return "{" + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\"\(escapeLabel($0.value))\"" }.joined(separator: ",") + "}"
    }

    private static func adding(_ key: String, _ value: String, to labels: String) -> String {
        labels.isEmpty ? "{\(key)=\"\(value)\"}" : String(labels.dropLast()) + ",\(key)=\"\(value)\"}"
    }

    /// The text format's escapes, scalar by scalar (a `\r\n` is one Swift
    /// Character, so escaping by Character let it through raw): `\\`, `\"`
    /// and `\n`; any other control character, which would break the one line
    /// a sample must be, becomes U+FFFD.
    static func escapeLabel(_ value: String) -> String {
        var escaped = ""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029:
                escaped += "\u{FFFD}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func escapeHelp(_ text: String) -> String {
        escapeLabel(text).replacingOccurrences(of: "\\\"", with: "\"")
    }

    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}

extension Metrics {
    /// The families IntentQueue's worker and recorder report, declared in one place.
    public func declareIntentQueueFamilies() {
        declare("intentqueue_intents_received_total", .counter, help: "Intents the status store saw for the first time, by type.")
        declare("intentqueue_intents_needs_input_total", .counter, help: "Times an intent stopped to ask the user (needsInput), by type.")
        declare("intentqueue_intents_finished_total", .counter, help: "Intents that reached a terminal state, by type, state and response code.")
        declare(
            "intentqueue_intents_dead_lettered_total", .counter, help: "Intents the broker dead-lettered (recorded as failure/deadLettered), by type."
        )
        declare("intentqueue_store_deleted_total", .counter, help: "Finished intents removed from the status store by retention.")
        declare("intentqueue_worker_handled_total", .counter, help: "Deliveries a worker ran through the pipeline, by type and outcome state.")
        declare("intentqueue_worker_retries_total", .counter, help: "Transient failures sent to a retry queue, by type.")
        declare("intentqueue_ledger_forgotten_total", .counter, help: "Decided intents forgotten by a ledger's retention.")
        declare(
            "intentqueue_worker_handle_duration_seconds", .histogram,
            help: "Time from receiving an intent to its outcome (resolve, confirm, handle), by type.")
        declare("intentqueue_queue_messages", .gauge, help: "Messages ready in an IntentQueue queue, as the broker reports them.")
        declare("intentqueue_queue_consumers", .gauge, help: "Consumers of an IntentQueue queue, as the broker reports them.")
        declare("intentqueue_broker_up", .gauge, help: "1 when the last look at the broker's queues succeeded, else 0.")
    }
}
