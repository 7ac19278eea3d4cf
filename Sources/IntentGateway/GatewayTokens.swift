import Foundation

/// Who a request acts for: the broker user its token names, and that user's role.
public struct GatewayIdentity: Sendable, Hashable {
    /// What a token's holder may do.
    public enum Role: String, Sendable, Hashable {
        /// Submits, reads and answers its own intents.
        case producer
        /// Reads every intent, answers any, lists and requeues dead letters.
        case `operator`
    }

    /// The broker user the gateway publishes as (`user_id`): the owner of what it submits.
    public var user: String
    /// The role.
    public var role: Role

    /// An identity.
    public init(user: String, role: Role) {
        self.user = user
        self.role = role
    }

    /// Whether it may act on everyone's intents.
    public var isOperator: Bool { role == .operator }
}

/// The bearer tokens the gateway accepts, read from a file only its owner can
/// read: one `token user role` per line (`#` starts a comment). Tokens are
/// compared in constant time and never logged.
public struct GatewayTokens: Sendable {
    private var entries: [(token: [UInt8], identity: GatewayIdentity)]

    /// Tokens as given (for tests).
    public init(_ entries: [(token: String, identity: GatewayIdentity)]) {
        self.entries = entries.map { (Array($0.token.utf8), $0.identity) }
    }

    /// How many tokens there are.
    public var count: Int { entries.count }

    /// The broker users a token may never name: the workers' and the recorder's (the deploy files' names), whose
    /// messages the others believe. The gateway publishes as a token's user (it has the `impersonator` tag), so a
    /// token naming one would let its bearer send what only they may: a question's expiry, a retry naming an owner.
    public static let defaultTrustedUsers: Set<String> = ["intent-worker", "intent-recorder"]

    /// Reads the token file at `path`: it must exist, be readable by its owner
    /// only (mode 600 or 400), hold at least one well-formed line, and name none of `refusing` (trusted users).
    public static func load(path: String, refusing: Set<String> = defaultTrustedUsers) throws(GatewayTokensError) -> GatewayTokens {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw GatewayTokensError(description: "cannot read the token file \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw GatewayTokensError(
                description: "the token file \(path) is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 it")
        }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw GatewayTokensError(description: "cannot read the token file \(path) as UTF-8 text")
        }
        return try parse(text, source: path, refusing: refusing)
    }

    /// Reads a token file's text; a line naming one of `refusing` is refused.
    public static func parse(
        _ text: String, source: String = "the token file", refusing: Set<String> = defaultTrustedUsers
    ) throws(GatewayTokensError) -> GatewayTokens {
        var entries: [(String, GatewayIdentity)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if words.isEmpty { continue }
            guard words.count == 3, let role = GatewayIdentity.Role(rawValue: String(words[2])) else {
                throw GatewayTokensError(description: "\(source) line \(number + 1): expected 'token user role' with role producer or operator")
            }
            guard words[0].utf8.count >= 16 else {
                throw GatewayTokensError(description: "\(source) line \(number + 1): a token must be at least 16 characters")
            }
            guard !refusing.contains(String(words[1])) else {
                throw GatewayTokensError(
                    description:
                        "\(source) line \(number + 1): '\(words[1])' is a trusted user (a worker's or the recorder's): a token may not act as it"
                )
            }
            entries.append((String(words[0]), GatewayIdentity(user: String(words[1]), role: role)))
        }
        guard !entries.isEmpty else { throw GatewayTokensError(description: "\(source) holds no token") }
        return GatewayTokens(entries)
    }

    /// The identity of the `Authorization` header's bearer token; nil when
    /// there is none or it is not one of these. Every token is compared, each
    /// in time independent of where the bytes differ.
    public func identity(authorization: String?) -> GatewayIdentity? {
        guard let authorization else { return nil }
        let scheme = "bearer "
        guard authorization.utf8.count > scheme.utf8.count, authorization.prefix(scheme.count).lowercased() == scheme else { return nil }
        let presented = Array(authorization.utf8.dropFirst(scheme.utf8.count))
        var found: GatewayIdentity?
        for entry in entries where Self.equal(entry.token, presented) && found == nil {
            found = entry.identity
        }
        return found
    }

    /// Compares a token with the bytes presented, without an early exit and in time that depends on the presented
    /// bytes alone: a loop as long as the longer of the two told a caller, by where the time began to grow, how long
    /// the token was.
    static func equal(_ token: [UInt8], _ presented: [UInt8]) -> Bool {
        guard !token.isEmpty else { return false }
        var difference: UInt8 = token.count == presented.count ? 0 : 1
        for index in presented.indices {
            difference |= token[index % token.count] ^ presented[index]
        }
        return difference == 0
    }
}

/// Why the token file cannot be used.
public struct GatewayTokensError: Error, CustomStringConvertible {
    /// What is wrong, with the file's name.
    public var description: String
}
