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

}
