import IntentKit

/// How the app matches what a user said against its names: an exact name
/// (ignoring case) wins; otherwise every name one of whose words starts with
/// the query ("Jeff" → "Jeff Baker", "Jeff Chen").
enum NameMatcher {
    static func matches(_ query: String, in names: [String]) -> [String] {
        let wanted = query.lowercased().trimmingWhitespace()
        guard !wanted.isEmpty else { return [] }
        if let exact = names.first(where: { $0.lowercased() == wanted }) { return [exact] }
        return names.filter { name in
            let lowered = name.lowercased()
            return lowered.hasPrefix(wanted)
                || lowered.split(separator: " ").contains { $0.hasPrefix(wanted) }
        }
    }

    /// A hairdresser's name as a resolution: one match, a choice, or unsupported.
    static func resolveHairdresser(_ query: String, in names: [String]) -> ResolutionResult {
        let found = matches(query, in: names)
        switch found.count {
        case 0: return .unsupported(reason: "no hairdresser is called '\(query)'")
        case 1: return .success(.string(found[0]))
        default: return .disambiguation(found.map(JSONValue.string))
        }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while slice.first?.isWhitespace == true { slice.removeFirst() }
        while slice.last?.isWhitespace == true { slice.removeLast() }
        return String(slice)
    }
}
