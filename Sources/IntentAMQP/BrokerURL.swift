/// Where the broker is: `amqp://user:password@host:port/vhost` (or `amqps://`).
///
/// Parts follow RabbitMQ's URI spec: user, password and vhost are
/// percent-decoded, an empty path means vhost `/`, and `%2f` spells `/`.
///
/// The nodes of a cluster are given as several URLs separated by commas: the
/// first is this value, the others its `alternates`, and a connection goes
/// to the next one when a node cannot be reached.
public struct BrokerURL: Sendable, Hashable, CustomStringConvertible {
    /// The environment variable the tools read the broker URL from.
    public static let environmentVariable = "INTENT_BROKER_URL"
    /// The broker used when `INTENT_BROKER_URL` is unset or empty: RabbitMQ on this machine, as `guest`.
    public static let defaultURL = "amqp://guest:guest@127.0.0.1:5672/%2f"

    /// True for `amqps://`: the connection uses TLS and verifies the broker's certificate and host name.
    public var tls: Bool
    /// The node's host name or address (an IPv6 address without its brackets); `localhost` when the URL names none.
    public var host: String
    /// The TCP port: the URL's, or 5672 (5671 for `amqps://`).
    public var port: Int
    /// The broker user to log in as (`guest` when the URL names none); IntentQueue signs its messages' `user_id` with it.
    public var user: String
    /// The user's password (`guest` when the URL names none); `description` never shows it.
    public var password: String
    /// The virtual host: `/` for an empty path or `%2f`.
    public var virtualHost: String
    /// For `amqps://`: a PEM file of the certificate authorities to trust
    /// (`?cacertfile=` in the URL, or `INTENT_BROKER_CA`). The broker's
    /// certificate and host name are always verified.
    public var certificateAuthority: String? {
        didSet {
            alternates = alternates.map {
                var url = $0
                url.certificateAuthority = certificateAuthority
                return url
            }
        }
    }
    /// The cluster's other nodes, tried in turn when this one does not answer.
    public var alternates: [BrokerURL] = []

    /// The users this URL logs in as, on any of its nodes.
    public var users: Set<String> { Set([user] + alternates.map(\.user)) }

    /// This node, then the alternates.
    public var endpoints: [BrokerURL] {
        var first = self
        first.alternates = []
        return [first]
            + alternates.map {
                var url = $0
                url.alternates = []
                return url
            }
    }

    /// One URL, or several separated by commas (a cluster's nodes). A comma
    /// starts a new URL only when `amqp://` or `amqps://` follows it, so a
    /// password may hold a comma of its own.
    public init(_ text: String) throws(AMQPError) {
        var parts: [String] = []
        for piece in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = String(String(piece).trimmingWhitespace())
            let startsURL = trimmed.hasPrefix("amqp://") || trimmed.hasPrefix("amqps://")
            if parts.isEmpty || startsURL || trimmed.isEmpty {
                parts.append(trimmed)
            } else if trimmed.contains("://") {
                throw AMQPError(
                    .configuration, context: "broker URL",
                    detail: "each URL of a comma-separated list starts with amqp:// or amqps://, not '\(BrokerURL.redacted(trimmed))'")
            } else {
                parts[parts.count - 1] += "," + String(piece)
            }
        }
        guard parts.count > 1 else {
            try self.init(single: text)
            return
        }
        guard !parts.contains(where: { $0.isEmpty }) else {
            throw AMQPError(.configuration, context: "broker URL", detail: "an empty URL in the comma-separated list")
        }
        try self.init(single: parts[0])
        for part in parts.dropFirst() {
            alternates.append(try BrokerURL(single: part))
        }
    }

    private init(single text: String) throws(AMQPError) {
        func invalid(_ why: String) -> AMQPError {
            AMQPError(.configuration, context: "broker URL", detail: why)
        }
        certificateAuthority = nil
        var rest = Substring(text.trimmingWhitespace())
        if rest.hasPrefix("amqps://") {
            tls = true
            rest = rest.dropFirst(8)
        } else if rest.hasPrefix("amqp://") {
            tls = false
            rest = rest.dropFirst(7)
        } else {
            throw invalid("'\(Self.redacted(text))' does not start with amqp:// or amqps://")
        }
        if let question = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0] == "cacertfile" {
                    certificateAuthority = Self.percentDecoded(parts[1])
                }
            }
            rest = rest[..<question]
        }
        var path = Substring("")
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var userInfo: Substring?
        if let at = rest.lastIndex(of: "@") {
            userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
        }
        user = "guest"
        password = "guest"
        if let userInfo {
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.percentDecoded(parts[0]) else { throw invalid("the user name is badly percent-encoded") }
            user = name
            if parts.count > 1 {
                guard let secret = Self.percentDecoded(parts[1]) else { throw invalid("the password is badly percent-encoded") }
                password = secret
            }
        }
        port = tls ? 5671 : 5672
        var hostPart = rest
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else { throw invalid("unclosed '[' in the host") }
            host = String(hostPart[hostPart.index(after: hostPart.startIndex)..<close])
            hostPart = hostPart[hostPart.index(after: close)...]
            if hostPart.hasPrefix(":") {
                guard let number = Int(hostPart.dropFirst()), (1...65535).contains(number) else {
                    throw invalid("the port is not a number from 1 to 65535")
                }
                port = number
            }
        } else if let colon = hostPart.lastIndex(of: ":") {
            host = String(hostPart[..<colon])
            guard let number = Int(hostPart[hostPart.index(after: colon)...]), (1...65535).contains(number) else {
                throw invalid("the port is not a number from 1 to 65535")
            }
            port = number
        } else {
            host = String(hostPart)
        }
        if host.isEmpty { host = "localhost" }
        if path.isEmpty {
            virtualHost = "/"
        } else {
            guard let vhost = Self.percentDecoded(path) else { throw invalid("the virtual host is badly percent-encoded") }
            virtualHost = vhost
        }
    }

    /// The URL from `INTENT_BROKER_URL`, or the local default.
    public static func fromEnvironment(_ environment: [String: String]) throws(AMQPError) -> BrokerURL {
        var url = try BrokerURL(environment[environmentVariable].flatMap { $0.isEmpty ? nil : $0 } ?? defaultURL)
        if url.certificateAuthority == nil, let authority = environment["INTENT_BROKER_CA"], !authority.isEmpty {
            url.certificateAuthority = authority
        }
        return url
    }

    /// The URL without its password, for logs and error messages (every node of a cluster).
    public var description: String {
        let vhost = virtualHost == "/" ? "%2f" : virtualHost
        let this = "\(tls ? "amqps" : "amqp")://\(user)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(vhost)"
        return ([this] + alternates.map(\.description)).joined(separator: ",")
    }

    static func redacted(_ text: String) -> String {
        // The credentials end at the last '@' and start after "://" when there is one
        // before it, else at the start: "user:secret@host" (no scheme) hides its secret
        // too, and "a:b@host://x" cannot make an inverted range.
        guard let at = text.lastIndex(of: "@") else { return text }
        var start = text.startIndex
        if let scheme = text.range(of: "://"), scheme.upperBound <= at { start = scheme.upperBound }
        guard let colon = text[start..<at].firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension String {
    func trimmingWhitespace() -> Substring {
        var slice = Substring(self)
        while slice.first?.isWhitespace == true { slice.removeFirst() }
        while slice.last?.isWhitespace == true { slice.removeLast() }
        return slice
    }
}

extension Substring {
    fileprivate func range(of needle: String) -> Range<Index>? {
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(needle) { return index..<self.index(index, offsetBy: needle.count) }
            index = self.index(after: index)
        }
        return nil
    }
}

extension String {
    fileprivate func range(of needle: String) -> Range<Index>? {
        Substring(self).range(of: needle)
    }
}
