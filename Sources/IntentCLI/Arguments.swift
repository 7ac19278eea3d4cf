import Foundation

/// A command line split into flags, options with values and positional words,
/// parsed from an explicit array so tests can pass one.
///
/// `--name value` and `--name=value` are both accepted; `--` ends the options.
public struct Arguments: Sendable {
    public private(set) var flags: Set<String> = []
    public private(set) var options: [String: [String]] = [:]
    public private(set) var positionals: [String] = []

    /// - Parameters:
    ///   - flags: options without a value, such as `--json` (with their dashes).
    ///   - options: options that take a value, such as `--timeout`.
    ///   - aliases: short spellings, such as `-h` for `--help`.
    public init(
        _ words: [String], flags knownFlags: Set<String>, options knownOptions: Set<String>,
        aliases: [String: String] = ["-h": "--help"]
    ) throws(UsageError) {
        var index = 0
        var optionsEnded = false
        while index < words.count {
            let word = words[index]
            index += 1
            if optionsEnded || !word.hasPrefix("-") || word == "-" {
                positionals.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            var name = word
            var inlineValue: String?
            if let equals = word.firstIndex(of: "="), word.hasPrefix("--") {
                name = String(word[..<equals])
                inlineValue = String(word[word.index(after: equals)...])
            }
            name = aliases[name] ?? name
            if knownFlags.contains(name) {
                guard inlineValue == nil else { throw UsageError("option \(name) takes no value") }
                flags.insert(name)
            } else if knownOptions.contains(name) {
                if let inlineValue {
                    options[name, default: []].append(inlineValue)
                } else {
                    guard index < words.count else { throw UsageError("option \(name) needs a value") }
                    options[name, default: []].append(words[index])
                    index += 1
                }
            } else {
                throw UsageError("unknown option '\(name)'")
            }
        }
    }

    public func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The value of an option given at most once.
    public func value(_ option: String) throws(UsageError) -> String? {
        guard let values = options[option] else { return nil }
        guard values.count == 1 else { throw UsageError("option \(option) is given more than once") }
        return values[0]
    }

    /// A positive number of seconds, or nil when absent.
    public func seconds(_ option: String) throws(UsageError) -> Double? {
        guard let text = try value(option) else { return nil }
        guard let seconds = Double(text), seconds.isFinite, seconds > 0 else {
            throw UsageError("\(option) must be a positive number of seconds, not '\(text)'")
        }
        return seconds
    }

    /// A positive duration, `90` or `90s` (seconds), `10m`, `2h` or `7d`, in seconds; nil when absent.
    public func duration(_ option: String) throws(UsageError) -> Double? {
        guard let text = try value(option) else { return nil }
        return try Self.duration(text, option: option)
    }

    /// `text` as a positive duration (`90`, `90s`, `10m`, `2h`, `7d`) in seconds; the error names `option`.
    public static func duration(_ text: String, option: String) throws(UsageError) -> Double {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400]
        var number = Substring(text)
        var unit = 1.0
        if let last = text.last, let scale = units[last] {
            number = number.dropLast()
            unit = scale
        }
        guard let value = Double(number), value.isFinite, value > 0, (value * unit).isFinite else {
            throw UsageError("\(option) must be a positive duration such as 90s, 10m, 2h or 7d, not '\(text)'")
        }
        return value * unit
    }

    /// A time in ISO 8601 with its zone (`2026-12-24T18:00:00Z`, `2026-12-24T19:00:00+01:00`, fractions of a
    /// second allowed), as seconds since 1970; nil when absent.
    public func instant(_ option: String) throws(UsageError) -> Double? {
        guard let text = try value(option) else { return nil }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text), Self.namesARealTime(text) { return date.timeIntervalSince1970 }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text), Self.namesARealTime(text) { return date.timeIntervalSince1970 }
        throw UsageError("\(option) must be a time in ISO 8601 with its zone, such as 2026-12-24T18:00:00Z, not '\(text)'")
    }

    /// Whether the fields of a time the formatter read exist: it rolls 30 February over into March, an hour of 25
    /// into the next day, and takes a zone of +99:99. `text` is `YYYY-MM-DDTHH:MM:SS`, perhaps a fraction, then `Z`
    /// or `±HH:MM`, as the formatter accepted it.
    static func namesARealTime(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            return Int(String(decoding: bytes[start..<start + count], as: UTF8.self))
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2), (1...12).contains(month), hour < 24, minute < 60, second < 60
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { return false }
        if bytes.last == UInt8(ascii: "Z") { return true }
        // The zone's hours and minutes, at the end: ±HH:MM (UTC±14:00 is the widest in use).
        guard let zoneHours = number(bytes.count - 5, 2), let zoneMinutes = number(bytes.count - 2, 2) else { return false }
        return zoneHours <= 14 && zoneMinutes < 60
    }

    /// A whole number within `range`, or nil when absent.
    public func integer(_ option: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = try value(option) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError("\(option) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }
}

/// A mistake on the command line: printed with the usage line, exit 64.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
