import Foundation

/// A small structured logger. Libraries take one; only executables decide where
/// records go, by choosing the sink. Metadata keys are dotted (`intent.id`).
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

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
        public var date: Date
        public var level: Level
        public var label: String
        public var message: String
        public var metadata: [String: String]
    }

    public typealias Sink = @Sendable (Record) -> Void

    public var label: String
    public var level: Level
    public var metadata: [String: String]
    private let sink: Sink

    public init(label: String, level: Level = .info, metadata: [String: String] = [:], sink: @escaping Sink) {
        self.label = label
        self.level = level
        self.metadata = metadata
        self.sink = sink
    }

    /// A logger that drops everything, for tests and quiet embedding.
    public static func disabled(label: String = "disabled") -> Logger {
        Logger(label: label, level: .error, sink: { _ in })
    }

    public subscript(metadataKey key: String) -> String? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// A copy with more metadata on every line.
    public func with(_ extra: [String: String]) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { _, new in new }
        return copy
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String, metadata extra: [String: String] = [:]) {
        guard level >= self.level else { return }
        var merged = metadata
        if !extra.isEmpty { merged.merge(extra) { _, new in new } }
        sink(Record(date: Date(), level: level, label: label, message: message(), metadata: merged))
    }

    public func debug(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.debug, message(), metadata: metadata)
    }
    public func info(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.info, message(), metadata: metadata)
    }
    public func notice(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.notice, message(), metadata: metadata)
    }
    public func warning(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.warning, message(), metadata: metadata)
    }
    public func error(_ message: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.error, message(), metadata: metadata)
    }
}
