extension String {
    /// Without white space at either end.
    public func trimmingWhitespace() -> String {
        // Most texts start and end with an ASCII character that is not whitespace: then neither end's character
        // is whitespace (a character's whitespace is its first scalar's, and only a prepended mark, never
        // whitespace, joins an ASCII character as its first), and the text is returned as it is.
        if let first = utf8.first, let last = utf8.last, Self.isASCIIWord(first), Self.isASCIIWord(last) { return self }
        var slice = Substring(self)
        while slice.first?.isWhitespace == true { slice.removeFirst() }
        while slice.last?.isWhitespace == true { slice.removeLast() }
        return String(slice)
    }

    /// An ASCII byte that is not whitespace (U+0009 to U+000D, U+0020) and not a control that could join another.
    private static func isASCIIWord(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7F }

    /// The text with what a terminal or a log reader would act on made
    /// visible: control characters (newlines, carriage returns, escape
    /// sequences, DEL and the C1 controls), line and paragraph separators and
    /// bidirectional overrides become `\n`, `\r`, `\t` or `\u{…}`. Ids, types
    /// and messages come from message bodies anyone may send: printed raw, a
    /// newline forges a log line and an escape sequence rewrites the screen.
    public var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: Self.needsEscaping) else { return self }
        var escaped = ""
        escaped.unicodeScalars.reserveCapacity(unicodeScalars.count + 8)
        for scalar in unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where Self.needsEscaping(scalar): escaped += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func needsEscaping(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true  // C0, DEL, C1
        case 0x2028, 0x2029: true  // line and paragraph separators
        case 0x202A...0x202E, 0x2066...0x2069: true  // bidirectional embeddings, overrides and isolates
        default: false
        }
    }
}
