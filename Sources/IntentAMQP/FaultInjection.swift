import IntentKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Points where a worker can be made to die as if by `kill -9`, for the
/// fault-injection suite. Off unless an executable configures it (from
/// `INTENTQUEUE_FAULT`); never used in production.
public enum FaultPoint: String, Sendable, CaseIterable {
    /// A delivery was received, before the pipeline runs.
    case afterReceive
    /// `handle` returned: its effects are committed, the status event not yet published.
    case afterHandle
    /// The outcome's status event was handed to the broker, not yet confirmed.
    case afterStatusPublish
    /// The status event is confirmed; the ack is about to be sent.
    case beforeAck
}

/// The fault-injection settings: `point[@idPrefix][:probability]`, several
/// separated by commas (`afterHandle:0.01,afterReceive@poison-`).
public struct FaultInjection: Sendable {
    struct Rule: Sendable {
        var point: FaultPoint
        var idPrefix: String?
        var probability: Double
    }

    private let rules: [Rule]

    /// No fault points: what every process runs with unless `INTENTQUEUE_FAULT` sets some.
    public static let none = FaultInjection(rules: [])

    init(rules: [Rule]) {
        self.rules = rules
    }

    /// Parses the setting; nil with a reason when it is malformed.
    public static func parse(_ text: String) -> Result<FaultInjection, IntentFailure> {
        var rules: [Rule] = []
        for item in text.split(separator: ",") where !item.isEmpty {
            var rest = Substring(item)
            var probability = 1.0
            if let colon = rest.lastIndex(of: ":") {
                guard let value = Double(rest[rest.index(after: colon)...]), (0...1).contains(value) else {
                    return .failure(IntentFailure(code: "invalidFault", message: "'\(item)': the probability must be from 0 to 1"))
                }
                probability = value
                rest = rest[..<colon]
            }
            var prefix: String?
            if let at = rest.firstIndex(of: "@") {
                prefix = String(rest[rest.index(after: at)...])
                rest = rest[..<at]
            }
            guard let point = FaultPoint(rawValue: String(rest)) else {
                return .failure(
                    IntentFailure(
                        code: "invalidFault",
                        message: "'\(rest)' is not a fault point; points are \(FaultPoint.allCases.map(\.rawValue).joined(separator: ", "))"))
            }
            rules.append(Rule(point: point, idPrefix: prefix, probability: probability))
        }
        return .success(FaultInjection(rules: rules))
    }

    /// Whether any fault point is set.
    public var isEnabled: Bool { !rules.isEmpty }

    /// Dies at once (SIGKILL to itself) when a rule matches this point and intent.
    public func hit(_ point: FaultPoint, intentID: String?) {
        guard !rules.isEmpty else { return }
        for rule in rules where rule.point == point {
            if let prefix = rule.idPrefix, !(intentID ?? "").hasPrefix(prefix) { continue }
            if rule.probability >= 1 || Double.random(in: 0..<1) < rule.probability {
                kill(getpid(), SIGKILL)
            }
        }
    }
}
