import Foundation
import Testing

/// amqps:// with the broker's certificate and host name verified, on loopback,
/// against a certificate authority the test creates.
@Suite(.timeLimit(.minutes(10)))
struct TLSTests {
    static let node = "iqtest-tls"
    static let port = 5695
    static let tlsPort = 5696

    /// Makes a CA and a server certificate for `localhost` (no IP address in it).
    static func makeCertificates(in directory: URL) async throws {
        func openssl(_ arguments: [String]) async throws {
            let result = try await run("/usr/bin/openssl", arguments, timeout: 60)
            guard result.exitCode == 0 else { throw BrokerFailure(message: "openssl \(arguments.first ?? ""): \(result)") }
        }
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        for authority in ["ca", "other-ca"] {
            try await openssl([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=IntentQueue test \(authority)",
                "-keyout", path("\(authority).key"), "-out", path("\(authority).pem"),
            ])
        }
        try await openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", path("server.key"), "-out", path("server.csr"),
        ])
        try "subjectAltName=DNS:localhost\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try await openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"), "-CAcreateserial",
            "-days", "2", "-extfile", path("server.ext"), "-out", path("server.pem"),
        ])
        // The broker runs as this user and must read its key.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path("server.key"))
    }

    @Test func submissionsOverTLSAreVerified() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iq-tls-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try await Self.makeCertificates(in: directory)
        let conf = directory.appendingPathComponent("tls.conf")
        try """
        listeners.ssl.default = 127.0.0.1:\(Self.tlsPort)
        ssl_options.cacertfile = \(directory.path)/ca.pem
        ssl_options.certfile = \(directory.path)/server.pem
        ssl_options.keyfile = \(directory.path)/server.key
        ssl_options.verify = verify_none
        ssl_options.fail_if_no_peer_cert = false

        """.write(to: conf, atomically: true, encoding: .utf8)

        _ = try await run(Paths.brokerScript, ["stop", Self.node], timeout: 60)
        let started = try await run(
            Paths.brokerScript, ["start", Self.node, "\(Self.port)"],
            environment: ["INTENTQUEUE_BROKER_CONF": conf.path], timeout: 120)
        try #require(started.exitCode == 0, "\(started)")
        defer { Task { _ = try? await run(Paths.brokerScript, ["stop", Self.node], timeout: 60) } }

        let ca = directory.appendingPathComponent("ca.pem").path
        let trusted = "amqps://guest:guest@localhost:\(Self.tlsPort)/%2f?cacertfile=\(ca)"
        let store = directory.appendingPathComponent("status.sqlite").path
        let environment = [
            "INTENT_BROKER_URL": trusted, "INTENT_STATUS_DB": store,
            "HAIRDRESSERS_DB": directory.appendingPathComponent("app.sqlite").path,
        ]
        let worker = try WorkerProcess(
            arguments: ["--with-recorder"], environment: environment,
            logPath: directory.appendingPathComponent("worker.log").path)
        defer { Task { _ = try? await worker.stop() } }
        try await worker.waitForConnections(2)

        let submit = Paths.tool("intent-submit")
        let ok = try await run(submit, ["SendMessage", "recipients=Alice", "content=over TLS", "--wait"], environment: environment, timeout: 30)
        #expect(ok.exitCode == 0, "\(ok)\n\(worker.log)")

        // Another CA does not vouch for the broker's certificate.
        let otherCA = directory.appendingPathComponent("other-ca.pem").path
        var untrusted = environment
        untrusted["INTENT_BROKER_URL"] = "amqps://guest:guest@localhost:\(Self.tlsPort)/%2f?cacertfile=\(otherCA)"
        let refused = try await run(submit, ["SendMessage", "recipients=Alice", "content=x"], environment: untrusted, timeout: 20)
        #expect(refused.exitCode == 69, "\(refused)")
        #expect(refused.stderr.contains("SSL"), "\(refused.stderr)")

        // The certificate names localhost, not 127.0.0.1: the host name check refuses it.
        var wrongName = environment
        wrongName["INTENT_BROKER_URL"] = "amqps://guest:guest@127.0.0.1:\(Self.tlsPort)/%2f?cacertfile=\(ca)"
        let mismatch = try await run(submit, ["SendMessage", "recipients=Alice", "content=x"], environment: wrongName, timeout: 20)
        #expect(mismatch.exitCode == 69, "\(mismatch)")
        #expect(mismatch.stderr.contains("SSL"), "\(mismatch.stderr)")
    }

    @Test func aWorldReadableURLFileIsRefused() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("iq-url-\(UUID().uuidString.prefix(8))")
        try "amqp://guest:secret@127.0.0.1:1/%2f\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: file.path)
        let open = try await run(
            Paths.tool("intent-submit"), ["SendMessage", "content=x"], environment: ["INTENT_BROKER_URL_FILE": file.path])
        #expect(open.exitCode == 64, "\(open)")
        #expect(open.stderr.contains("chmod 600"))
        #expect(!open.stderr.contains("secret"))

        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let closed = try await run(
            Paths.tool("intent-submit"), ["SendMessage", "content=x"], environment: ["INTENT_BROKER_URL_FILE": file.path])
        #expect(closed.exitCode == 69, "the URL in the file is used (nothing listens on port 1): \(closed)")
        #expect(!closed.stderr.contains("secret"))
    }
}
