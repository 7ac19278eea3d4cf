import Testing

/// Edits of encoded bodies, for the tests that hold a member-by-member reading to the tree's.
enum BodyEdits {
    /// `text` with `old` replaced by `new`, which it must hold (or the case would test nothing new).
    static func edited(_ text: String, _ old: String, _ new: String) -> String {
        #expect(text.contains(old), "\(old) is not in \(text)")
        return text.replacingOccurrences(of: old, with: new)
    }

    /// `depth` arrays, one inside the other.
    static func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }

    /// Every `step`-th prefix of `text` (the empty one first): a body cut anywhere.
    static func prefixes(of text: String, every step: Int) -> [String] {
        stride(from: 0, to: text.utf8.count, by: step).map { String(decoding: Array(text.utf8.prefix($0)), as: UTF8.self) }
    }
}
