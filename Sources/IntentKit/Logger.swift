import Foundation

/// A small structured logger. Libraries take one; only executables decide where
/// records go, by choosing the sink. Metadata keys are dotted (`intent.id`).
public struct Logger: Sendable {
    /// How much a record matters; a logger writes the records at its own level and above.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        /// From the least to the most severe: `trace` and `debug` for tracking a fault down, `info` and `notice` for what
        /// happens (`notice` for what an operator should see), `warning` and `error` for what went wrong.
        case trace, debug, info, notice, warning, error

        /// Orders the levels by severity, `trace` first.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The level's name, as each record prints it and `--log-level` takes it.
        public var name: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            }
        }
    }

    /// One log line's content.
    public struct Record: Sendable {
        /// When the record was made.
        public var date: Date
        /// How much it matters.
        public var level: Level
        /// The label of the logger that wrote it: which program or part of one.
        public var label: String
        /// What happened, in words.
        public var message: String
        /// The logger's metadata with the record's own over it (`intent.id` and the like).
        public var metadata: [String: String]
    }

    /// Where records go: an executable's choice (standard error, as text or as JSON).
    public typealias Sink = @Sendable (Record) -> Void

    /// Names the program or part of one on every record (`intent-worker`).
    public var label: String
    /// The least severe level written; records below it are dropped before their message is built.
    public var level: Level
    /// Put on every record, with dotted keys (`intent.id`).
    public var metadata: [String: String] {
        get {
            guard !layered.isEmpty else { return base }
            var merged = base
            for (key, value) in layered { merged[key] = value }
            return merged
        }
        set {
            base = newValue
            layered = []
        }
    }
    /// The metadata as given or set, and what `with` put over it since, in order: a worker makes a logger for
    /// every delivery, and most write no record, so the two are merged only when a record is written.
    private var base: [String: String]
    private var layered: [(key: String, value: String)] = []
    private let sink: Sink

    /// A logger labeled `label` that hands `sink` the records at `level` (`info` by default) and above, each carrying
    /// `metadata` (none by default).
    public init(label: String, level: Level = .info, metadata: [String: String] = [:], sink: @escaping Sink) {
        self.label = label
        self.level = level
        self.base = metadata
        self.sink = sink
    }

    /// A logger that drops everything, for tests and quiet embedding.
    public static func disabled(label: String = "disabled") -> Logger {
        Logger(label: label, level: .error, sink: { _ in })
    }

    /// One key of the metadata on every record; setting it nil removes it.
    public subscript(metadataKey key: String) -> String? {
        get { layered.last(where: { $0.key == key })?.value ?? base[key] }
        set { metadata[key] = newValue }
    }

    /// A copy with more metadata on every line.
    public func with(_ extra: [String: String]) -> Logger {
        var copy = self
        copy.layer(extra)
        return copy
    }

    /// A copy with more metadata on every line, given in order (a later key over an earlier one), with no
    /// dictionary made for them.
    public func with(pairs extra: KeyValuePairs<String, String>) -> Logger {
        var copy = self
        copy.layer(extra)
        return copy
    }

    /// Puts `extra` over the metadata; past `layeredLimit` pairs, they are merged into it, so that a logger made
    /// again and again from itself (`logger = logger.with(…)` in a loop) holds no more than its distinct keys.
    private mutating func layer(_ extra: some Sequence<(key: String, value: String)>) {
        layered.append(contentsOf: extra)
        if layered.count > Self.layeredLimit { metadata = metadata }
    }

    private static let layeredLimit = 16

    /// How many pairs `with` has put over the metadata and not yet merged into it (for tests).
    var layeredCount: Int { layered.count }

    /// Writes a record at `level`, with `extra` over the logger's metadata, unless `level` is below the logger's; the message
    /// is built only when the record is written.
    public func log(_ level: Level, _ message: @autoclosure () -> String, metadata extra: [String: String] = [:]) {
        guard level >= self.level else { return }
        var merged = metadata
        if !extra.isEmpty { merged.merge(extra) { _, new in new } }
        sink(Record(date: Date(), level: level, label: label, message: message(), metadata: merged))
    }

    /// Logs `message` at `debug`, with `metadata` over the logger's.
    public func debug(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.debug, message(), metadata: metadata)
    }
    /// Logs `message` at `info`, with `metadata` over the logger's.
    public func info(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.info, message(), metadata: metadata)
    }
    /// Logs `message` at `notice`, with `metadata` over the logger's.
    public func notice(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.notice, message(), metadata: metadata)
    }
    /// Logs `message` at `warning`, with `metadata` over the logger's.
    public func warning(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.warning, message(), metadata: metadata)
    }
    /// Logs `message` at `error`, with `metadata` over the logger's.
    public func error(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.error, message(), metadata: metadata)
    }
}
