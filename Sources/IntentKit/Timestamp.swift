import Foundation

/// Times as IntentQueue writes them: ISO 8601 with milliseconds, in UTC
/// (`2026-12-01T12:21:13.991Z`) — in logs, the tools' output, messages and
/// the ids of a schedule's intents.
public enum Timestamp {
    /// `seconds` since 1970, written with `gmtime_r` rather than a format
    /// style: Foundation's calendar machinery costs a short-lived tool more
    /// than the lookup it prints (milliseconds truncated, as the style does).
    public static func iso8601(seconds: Double) -> String {
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "\(seconds)" }
        // A Date holds seconds since 2001: the milliseconds are read from that value, as Foundation's style
        // reads them (read from seconds since 1970, about one time in 100,000 came out a millisecond short).
        let sinceReference = seconds - 978_307_200
        let wholeSinceReference = sinceReference.rounded(.down)
        let milliseconds = min(999, Int(((sinceReference - wholeSinceReference) * 1000).rounded(.down)))
        var time = time_t(wholeSinceReference) + 978_307_200
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(seconds)" }
        func padded(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(parts.tm_year + 1900, 4))-\(padded(parts.tm_mon + 1, 2))-\(padded(parts.tm_mday, 2))T"
            + "\(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2)).\(padded(Int32(milliseconds), 3))Z"
    }
}
