import Foundation
import IntentKit
import Testing

@testable import IntentGateway

@Suite struct GatewayTokensTests {
    static let file = """
        # token user role
        0123456789abcdef-alice alice producer
        fedcba9876543210-oper  ops   operator   # the on-call operator
        """

    @Test func aBearerTokenNamesItsUserAndRole() throws {
        let tokens = try GatewayTokens.parse(Self.file)
        #expect(tokens.count == 2)
        #expect(tokens.identity(authorization: "Bearer 0123456789abcdef-alice") == GatewayIdentity(user: "alice", role: .producer))
        #expect(tokens.identity(authorization: "bearer fedcba9876543210-oper") == GatewayIdentity(user: "ops", role: .operator))
    }

    @Test func aWrongMissingOrPartialTokenNamesNobody() throws {
        let tokens = try GatewayTokens.parse(Self.file)
        #expect(tokens.identity(authorization: nil) == nil)
        #expect(tokens.identity(authorization: "Bearer ") == nil)
        #expect(tokens.identity(authorization: "Bearer 0123456789abcdef-alic") == nil)
        #expect(tokens.identity(authorization: "Bearer 0123456789abcdef-alicex") == nil)
        #expect(tokens.identity(authorization: "Basic 0123456789abcdef-alice") == nil)
        #expect(tokens.identity(authorization: "0123456789abcdef-alice") == nil)
    }

    @Test func aMalformedFileIsRefusedWithItsLine() {
        #expect(throws: GatewayTokensError.self) { try GatewayTokens.parse("0123456789abcdef alice admin") }
        #expect(throws: GatewayTokensError.self) { try GatewayTokens.parse("short alice producer") }
        #expect(throws: GatewayTokensError.self) { try GatewayTokens.parse("# nothing\n") }
        do {
            _ = try GatewayTokens.parse("0123456789abcdef-alice alice producer\nbroken line")
            Issue.record("a broken line was accepted")
        } catch {
            #expect(error.description.contains("line 2"))
        }
    }

    @Test func aTokenFileOthersCanReadIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.file.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        #expect(throws: GatewayTokensError.self) { try GatewayTokens.load(path: path) }
        chmod(path, 0o600)
        #expect(try GatewayTokens.load(path: path).count == 2)
    }

    @Test func comparingTokensLooksAtEveryByte() {
        #expect(GatewayTokens.equal(Array("abc".utf8), Array("abc".utf8)))
        #expect(!GatewayTokens.equal(Array("abc".utf8), Array("abd".utf8)))
        #expect(!GatewayTokens.equal(Array("abc".utf8), Array("abcd".utf8)))
        #expect(!GatewayTokens.equal([], Array("a".utf8)))
        // Lengths that differ by a multiple of 256 still differ.
        #expect(!GatewayTokens.equal(Array(repeating: 0, count: 256), []))
        // The presented bytes are walked whatever the token's length: the token repeated, or cut short, is not it.
        #expect(!GatewayTokens.equal(Array("abc".utf8), Array("abcabc".utf8)))
        #expect(!GatewayTokens.equal(Array("abc".utf8), Array("ab".utf8)))
        #expect(!GatewayTokens.equal(Array("abc".utf8), []))
    }
}

@Suite struct GatewayIDTests {
    @Test func anIDIsAPathSegmentAsItIsOnlyWhenItNeedsNoEncoding() {
        let generated = IntentID.make()
        #expect(Handlers.pathSegment(generated) == generated)
        #expect(Handlers.pathSegment("order-1.B_~") == "order-1.B_~")
        #expect(Handlers.pathSegment("a b/c?d") == "a%20b%2Fc%3Fd")
        #expect(Handlers.pathSegment("café") == "caf%C3%A9")
    }
}

/// The gateway publishes as a token's user (its broker user has the `impersonator` tag): a token naming a user the
/// workers and the recorder trust would let its bearer send what only they may (a question's expiry, a retry naming
/// an owner), so a token file naming one is refused.
@Suite struct GatewayTokensTrustTests {
    @Test func aTokenNamingATrustedUserIsRefused() throws {
        let token = String(repeating: "t", count: 16)
        for trusted in ["intent-worker", "intent-recorder"] {
            let error = #expect(throws: GatewayTokensError.self) { try GatewayTokens.parse("\(token) \(trusted) producer") }
            #expect(error?.description.contains("line 1") == true && error?.description.contains("trusted") == true)
        }
        #expect(throws: GatewayTokensError.self) {
            try GatewayTokens.parse("\(token) alice producer\n\(token)x worker-b operator", refusing: ["worker-b"])
        }
        #expect(try GatewayTokens.parse("\(token) alice producer", refusing: ["worker-b"]).count == 1)
    }
}
