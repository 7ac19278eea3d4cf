import Foundation
import IntentKit

/// Output helpers for the command-line tools.
public enum Terminal {
    public static func write(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    public static func writeError(_ text: String) {
        FileHandle.standardError.write(Data((text + "\n").utf8))
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
            FileHandle.standardError.write(Data((line + "\n").utf8))
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
