import Foundation

/// A value of the YAML subset that compose.yaml is written in, parsed without a
/// YAML library (none can be fetched): block mappings and sequences (including
/// `- key: value` items), plain, single- and double-quoted scalars, flow
/// sequences of scalars, `{}`, literal and folded block scalars, and comments.
/// Anything else — anchors, aliases, tags, flow mappings, multi-line plain
/// scalars, tabs in indentation, several documents — is an error rather than a
/// guess, as are duplicate keys and misaligned lines. Scalars stay strings.
indirect enum YAMLNode: Equatable, Sendable, CustomStringConvertible {
    case scalar(String)
    case sequence([YAMLNode])
    case mapping([String: YAMLNode])

    static func parse(_ text: String) throws(YAMLError) -> YAMLNode {
        var parser = Parser(text)
        return try parser.document()
    }

    subscript(key: String) -> YAMLNode? {
        if case .mapping(let entries) = self { return entries[key] }
        return nil
    }

    var string: String? {
        if case .scalar(let text) = self { return text }
        return nil
    }

    var items: [YAMLNode]? {
        if case .sequence(let items) = self { return items }
        return nil
    }

    var entries: [String: YAMLNode]? {
        if case .mapping(let entries) = self { return entries }
        return nil
    }

    /// A sequence of scalars, or a scalar as a one-element list (compose accepts both for `command`).
    var strings: [String]? {
        switch self {
        case .scalar(let text): [text]
        case .sequence(let items): items.compactMap(\.string).count == items.count ? items.compactMap(\.string) : nil
        case .mapping: nil
        }
    }

    /// Plain Foundation values (String, [Any], [String: Any]) for JSONSerialization.
    var foundationValue: Any {
        switch self {
        case .scalar(let text): text
        case .sequence(let items): items.map(\.foundationValue)
        case .mapping(let entries): entries.mapValues(\.foundationValue)
        }
    }

    var description: String {
        guard let data = try? JSONSerialization.data(withJSONObject: foundationValue, options: [.sortedKeys, .fragmentsAllowed]) else {
            return "\(foundationValue)"
        }
        return String(decoding: data, as: UTF8.self)
    }
}

struct YAMLError: Error, CustomStringConvertible {
    var line: Int
    var message: String
    var description: String { "line \(line): \(message)" }
}

private struct Parser {
    struct Line {
        var number: Int
        var indent: Int
        var text: Substring  // without the indentation

        var isSequenceItem: Bool { text == "-" || text.hasPrefix("- ") }
    }

    let raw: [Substring]
    var index = 0

    init(_ text: String) {
        raw = text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasSuffix("\r") ? line.dropLast() : line
        }
    }

    mutating func document() throws(YAMLError) -> YAMLNode {
        guard let first = try peek() else { return .mapping([:]) }
        guard first.indent == 0 else { throw YAMLError(line: first.number, message: "the document must start in column 1") }
        if first.text.hasPrefix("---") || first.text.hasPrefix("%") {
            throw YAMLError(line: first.number, message: "document markers and directives are not supported")
        }
        let node = try block(indent: 0)
        if let extra = try peek() { throw YAMLError(line: extra.number, message: "unexpected indentation or content") }
        return node
    }

    /// The next line with content, skipping blank and comment-only lines.
    mutating func peek() throws(YAMLError) -> Line? {
        while index < raw.count {
            let line = raw[index]
            let content = line.drop { $0 == " " }
            if content.isEmpty || content.hasPrefix("#") {
                index += 1
                continue
            }
            if content.first == "\t" || line.prefix(while: { $0 == " " || $0 == "\t" }).contains("\t") {
                throw YAMLError(line: index + 1, message: "tabs are not allowed in indentation")
            }
            return Line(number: index + 1, indent: line.count - content.count, text: content)
        }
        return nil
    }

    mutating func block(indent: Int) throws(YAMLError) -> YAMLNode {
        guard let line = try peek() else { return .scalar("") }
        return line.isSequenceItem ? try sequence(indent: indent) : try mapping(indent: indent, first: nil)
    }

    /// Entries at `indent`; `first` is an entry already cut from a `- key: value` line.
    mutating func mapping(indent: Int, first: Line?) throws(YAMLError) -> YAMLNode {
        var entries: [String: YAMLNode] = [:]
        var pending = first
        while true {
            let line: Line
            if let taken = pending {
                line = taken
                pending = nil
            } else {
                guard let next = try peek(), next.indent == indent, !next.isSequenceItem else { break }
                index += 1
                line = next
            }
            guard let (key, rest) = try Self.splitEntry(line.text, line: line.number) else {
                throw YAMLError(line: line.number, message: "expected 'key: value', found '\(line.text)'")
            }
            if entries[key] != nil { throw YAMLError(line: line.number, message: "duplicate key '\(key)'") }
            entries[key] = try value(rest, parentIndent: indent, line: line.number, allowSameIndentSequence: true)
        }
        if let next = try peek(), next.indent > indent {
            throw YAMLError(line: next.number, message: "unexpected indentation")
        }
        return .mapping(entries)
    }

    mutating func sequence(indent: Int) throws(YAMLError) -> YAMLNode {
        var items: [YAMLNode] = []
        while let line = try peek(), line.indent == indent, line.isSequenceItem {
            index += 1
            let afterDash = line.text.dropFirst()
            let content = afterDash.drop { $0 == " " }
            let contentIndent = indent + 1 + (afterDash.count - content.count)
            if content.isEmpty || content.hasPrefix("#") {
                items.append(try nested(below: indent))
            } else if content.hasPrefix("- ") || content == "-" {
                throw YAMLError(line: line.number, message: "a sequence inside a sequence item is not supported")
            } else if try Self.splitEntry(content, line: line.number) != nil {
                let first = Line(number: line.number, indent: contentIndent, text: content)
                items.append(try mapping(indent: contentIndent, first: first))
            } else {
                items.append(try value(content, parentIndent: indent, line: line.number, allowSameIndentSequence: false))
            }
        }
        if let next = try peek(), next.indent > indent {
            throw YAMLError(line: next.number, message: "unexpected indentation")
        }
        return .sequence(items)
    }

    /// What follows a `key:` or `-` with nothing after it: a more indented block, or null.
    mutating func nested(below indent: Int) throws(YAMLError) -> YAMLNode {
        if let next = try peek(), next.indent > indent { return try block(indent: next.indent) }
        return .scalar("")
    }

    mutating func value(_ rest: Substring, parentIndent: Int, line: Int, allowSameIndentSequence: Bool) throws(YAMLError) -> YAMLNode {
        let text = rest.drop { $0 == " " }
        if text.isEmpty || text.hasPrefix("#") {
            // compose files often write a key's list at the key's own indentation.
            if allowSameIndentSequence, let next = try peek(), next.indent == parentIndent, next.isSequenceItem {
                return try sequence(indent: parentIndent)
            }
            return try nested(below: parentIndent)
        }
        if let indicator = text.first, indicator == "|" || indicator == ">" {
            return try blockScalar(header: Self.stripComment(text), parentIndent: parentIndent, line: line)
        }
        return try Self.inline(text, line: line)
    }

    mutating func blockScalar(header: Substring, parentIndent: Int, line: Int) throws(YAMLError) -> YAMLNode {
        let folded = header.first == ">"
        let chomping = header.dropFirst()
        guard ["", "-", "+"].contains(chomping) else {
            throw YAMLError(line: line, message: "block scalar header '\(header)' is not supported")
        }
        var lines: [Substring] = []
        var blockIndent: Int?
        while index < raw.count {
            let text = raw[index]
            let content = text.drop { $0 == " " }
            let indent = text.count - content.count
            if content.isEmpty {
                lines.append("")
                index += 1
                continue
            }
            if blockIndent == nil {
                guard indent > parentIndent else { break }
                blockIndent = indent
            }
            guard let blockIndent, indent >= blockIndent else { break }
            lines.append(text.dropFirst(blockIndent))
            index += 1
        }
        var trailing = 0
        while let last = lines.last, last.isEmpty {
            lines.removeLast()
            trailing += 1
        }
        var body: String
        if folded {
            body = ""
            for (offset, piece) in lines.enumerated() {
                if offset > 0 { body += piece.isEmpty || lines[offset - 1].isEmpty ? "\n" : " " }
                body += piece
            }
        } else {
            body = lines.joined(separator: "\n")
        }
        switch chomping {
        case "-": break
        case "+": body += String(repeating: "\n", count: lines.isEmpty ? trailing : trailing + 1)
        default: if !lines.isEmpty { body += "\n" }
        }
        return .scalar(body)
    }

    /// `key: rest` when the line is a mapping entry (a ':' followed by a space or the end, outside quotes).
    static func splitEntry(_ text: Substring, line: Int) throws(YAMLError) -> (String, Substring)? {
        var key: String
        var afterKey: Substring
        if let quote = text.first, quote == "\"" || quote == "'" {
            let (scalar, end) = try quoted(text, line: line)
            key = scalar
            afterKey = text[end...]
            guard afterKey.hasPrefix(":") else { return nil }
        } else {
            if let first = text.first, "[{&*!|>%@`".contains(first) { return nil }
            var cursor = text.startIndex
            var found: Substring.Index?
            while cursor < text.endIndex {
                if text[cursor] == "#", cursor > text.startIndex, text[text.index(before: cursor)] == " " { break }
                if text[cursor] == ":" {
                    let next = text.index(after: cursor)
                    if next == text.endIndex || text[next] == " " {
                        found = cursor
                        break
                    }
                }
                cursor = text.index(after: cursor)
            }
            guard let found else { return nil }
            key = String(text[..<found]).trimmingCharacters(in: .whitespaces)
            afterKey = text[found...]
            if key.isEmpty { throw YAMLError(line: line, message: "empty key") }
        }
        let rest = afterKey.dropFirst()
        guard rest.isEmpty || rest.first == " " else { return nil }
        return (key, rest.drop { $0 == " " })
    }

    /// A scalar or flow sequence written on one line.
    static func inline(_ text: Substring, line: Int) throws(YAMLError) -> YAMLNode {
        guard let first = text.first else { return .scalar("") }
        switch first {
        case "\"", "'":
            let (scalar, end) = try quoted(text, line: line)
            guard stripComment(text[end...]).isEmpty else {
                throw YAMLError(line: line, message: "unexpected text after a quoted scalar")
            }
            return .scalar(scalar)
        case "[":
            return try flowSequence(text, line: line)
        case "{":
            guard text.filter({ $0 != " " }) == "{}" else {
                throw YAMLError(line: line, message: "flow mappings other than {} are not supported")
            }
            return .mapping([:])
        case "&", "*", "!", "%", "@", "`":
            throw YAMLError(line: line, message: "'\(first)' (anchor, alias, tag or reserved indicator) is not supported")
        default:
            let plain = stripComment(text)
            if plain.contains(": ") || plain.hasSuffix(":") {
                throw YAMLError(line: line, message: "a mapping value is not allowed here: '\(plain)'")
            }
            return .scalar(String(plain))
        }
    }

    static func flowSequence(_ text: Substring, line: Int) throws(YAMLError) -> YAMLNode {
        var items: [YAMLNode] = []
        var cursor = text.index(after: text.startIndex)
        func skipSpaces() {
            while cursor < text.endIndex, text[cursor] == " " { cursor = text.index(after: cursor) }
        }
        skipSpaces()
        if cursor < text.endIndex, text[cursor] == "]" {
            cursor = text.index(after: cursor)
        } else {
            while true {
                skipSpaces()
                guard cursor < text.endIndex else { throw YAMLError(line: line, message: "unterminated flow sequence") }
                let item: String
                if text[cursor] == "\"" || text[cursor] == "'" {
                    let (scalar, end) = try quoted(text[cursor...], line: line)
                    item = scalar
                    cursor = end
                } else {
                    var end = cursor
                    while end < text.endIndex, text[end] != ",", text[end] != "]" {
                        if "[{\"'".contains(text[end]) {
                            throw YAMLError(line: line, message: "nested flow collections are not supported")
                        }
                        end = text.index(after: end)
                    }
                    item = text[cursor..<end].trimmingCharacters(in: .whitespaces)
                    if item.isEmpty { throw YAMLError(line: line, message: "empty item in a flow sequence") }
                    cursor = end
                }
                items.append(.scalar(item))
                skipSpaces()
                guard cursor < text.endIndex else { throw YAMLError(line: line, message: "unterminated flow sequence") }
                let separator = text[cursor]
                cursor = text.index(after: cursor)
                if separator == "]" { break }
                guard separator == "," else { throw YAMLError(line: line, message: "expected ',' or ']' in a flow sequence") }
            }
        }
        guard stripComment(text[cursor...]).isEmpty else {
            throw YAMLError(line: line, message: "unexpected text after a flow sequence")
        }
        return .sequence(items)
    }

    /// A single- or double-quoted scalar at the start of `text`, and where it ends.
    static func quoted(_ text: Substring, line: Int) throws(YAMLError) -> (String, Substring.Index) {
        let quote = text[text.startIndex]
        var result = ""
        var cursor = text.index(after: text.startIndex)
        while cursor < text.endIndex {
            let character = text[cursor]
            let next = text.index(after: cursor)
            if character == quote {
                if quote == "'", next < text.endIndex, text[next] == "'" {
                    result.append("'")
                    cursor = text.index(after: next)
                    continue
                }
                return (result, next)
            }
            if quote == "\"", character == "\\" {
                guard next < text.endIndex else { break }
                switch text[next] {
                case "\\": result.append("\\")
                case "\"": result.append("\"")
                case "/": result.append("/")
                case "n": result.append("\n")
                case "t": result.append("\t")
                case "r": result.append("\r")
                case "0": result.append("\0")
                case " ": result.append(" ")
                default: throw YAMLError(line: line, message: "unsupported escape '\\\(text[next])'")
                }
                cursor = text.index(after: next)
                continue
            }
            result.append(character)
            cursor = next
        }
        throw YAMLError(line: line, message: "unterminated quoted scalar")
    }

    /// The text before a comment (a '#' at the start or after a space), trimmed.
    static func stripComment(_ text: Substring) -> Substring {
        var cursor = text.startIndex
        while cursor < text.endIndex {
            if text[cursor] == "#", cursor == text.startIndex || text[text.index(before: cursor)] == " " { break }
            cursor = text.index(after: cursor)
        }
        var result = text[..<cursor]
        while result.last == " " { result = result.dropLast() }
        while result.first == " " { result = result.dropFirst() }
        return result
    }
}
