import Foundation

/// A systemd unit file: `[Section]` headers and `Key=Value` lines (a key may repeat).
struct SystemdUnit {
    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    private(set) var entries: [(section: String, key: String, value: String)] = []

    init(_ text: String) throws {
        var section: String?
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw ParseError(description: "line \(offset + 1): bad section header") }
                section = String(line.dropFirst().dropLast())
                continue
            }
            guard let section else { throw ParseError(description: "line \(offset + 1): a setting outside any section") }
            guard let equals = line.firstIndex(of: "=") else { throw ParseError(description: "line \(offset + 1): no '='") }
            entries.append(
                (
                    section, line[..<equals].trimmingCharacters(in: .whitespaces),
                    line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                ))
        }
    }

    func values(_ key: String, in section: String = "Service") -> [String] {
        entries.filter { $0.section == section && $0.key == key }.map(\.value)
    }

    /// The last setting wins, as in systemd.
    func value(_ key: String, in section: String = "Service") -> String? {
        values(key, in: section).last
    }

    /// `Environment=NAME=value` settings.
    var environment: [String: String] {
        var result: [String: String] = [:]
        for assignment in values("Environment") {
            let parts = assignment.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { result[parts[0]] = parts[1] }
        }
        return result
    }
}
