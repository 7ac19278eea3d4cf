import Foundation
import IntentKit

#if canImport(Glibc)
    import Glibc
#endif

/// Output helpers for the command-line tools.
public enum Terminal {
    public static func write(_ text: String) {
        put(text + "\n", to: STDOUT_FILENO)
    }

    public static func writeError(_ text: String) {
        put(text + "\n", to: STDERR_FILENO)
    }

    /// A write to a pipe whose reader is gone fails with `EPIPE` (which `put` lets pass) instead of killing the
    /// process with `SIGPIPE`: `intent-submit … | head -c 10` must not die after the broker confirmed its
    /// submission, and exit as if it had not (a script would submit it again). Every tool calls it as it starts.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Writes `text` whole to `descriptor`, or as much as it takes. An output that is closed or full (a pipe whose
    /// reader is gone, /dev/full) is not a crash, as `FileHandle.write(_: Data)` made it: the tool's work (a
    /// submission the broker confirmed, say) stands, and the tool ends as it would have.
    static func put(_ text: String, to descriptor: Int32) {
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    /// Prints `Error: …`, the usage line and a `--help` hint to standard error;
    /// returns the usage exit code.
    public static func usageFailure(_ error: UsageError, tool: String, usage: String) -> Int32 {
        writeError("Error: \(error.description)\nUsage: \(usage)\nSee '\(tool) --help'.")
        return ExitCode.usage
    }

    /// Prints a one-line reason to standard error (control characters made
    /// visible: reasons quote ids and messages) and returns `code`.
    public static func fail(_ tool: String, _ reason: String, code: Int32) -> Int32 {
        writeError("\(tool): \(reason.escapingControlCharacters)")
        return code
    }

    /// A log sink writing one line per record to standard error, human by
    /// default or JSON for log shippers.
    public static func logSink(json: Bool) -> Logger.Sink {
        let lock = NSLock()
        return { record in
            let line: String
            if json {
                var object: [String: JSONValue] = [
                    "time": .string(timestamp(record.date)), "level": .string(record.level.name),
                    "logger": .string(record.label), "message": .string(record.message),
                ]
                for (key, value) in record.metadata { object[key] = .string(value) }
                line = JSONValue.object(object).jsonString
            } else {
                // Ids, types and reasons come from message bodies: one record stays one line.
                let metadata = record.metadata.sorted { $0.key < $1.key }
                    .map { "\($0.key)=\($0.value.escapingControlCharacters)" }.joined(separator: " ")
                line =
                    "\(timestamp(record.date)) \(record.level.name) \(record.label): \(record.message.escapingControlCharacters)\(metadata.isEmpty ? "" : " " + metadata)"
            }
            lock.lock()
            defer { lock.unlock() }
            put(line + "\n", to: STDERR_FILENO)
        }
    }

    /// ISO 8601 with milliseconds, UTC: `2026-12-01T12:21:13.991Z`.
    public static func timestamp(_ date: Date) -> String {
        timestamp(seconds: date.timeIntervalSince1970)
    }

    /// The same from seconds since 1970 (`Timestamp.iso8601`).
    public static func timestamp(seconds: Double) -> String {
        Timestamp.iso8601(seconds: seconds)
    }
}
