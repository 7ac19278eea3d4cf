import Glibc
import Testing

@testable import IntentAMQP

/// Several broker URLs, separated by commas, name the nodes of one cluster.
@Suite struct ClusterURLTests {
    @Test func commaSeparatedURLsAreOneClusterTriedInOrder() throws {
        let url = try BrokerURL("amqp://u:p@127.0.0.1:5701/%2f, amqp://u:p@127.0.0.1:5702/%2f,amqp://u:p@127.0.0.1:5703/%2f")
        #expect(url.port == 5701)
        #expect(url.endpoints.map(\.port) == [5701, 5702, 5703])
        #expect(url.endpoints.allSatisfy { $0.alternates.isEmpty && $0.user == "u" && $0.password == "p" })
        #expect(url.description == "amqp://u@127.0.0.1:5701/%2f,amqp://u@127.0.0.1:5702/%2f,amqp://u@127.0.0.1:5703/%2f")
        #expect(!url.description.contains("p@"))
    }

    @Test func aCommaInsideAPasswordDoesNotSplitTheURL() throws {
        let url = try BrokerURL("amqp://guest:pa,ss@127.0.0.1:5701/%2f,amqp://guest:pa,ss@127.0.0.1:5702/%2f")
        #expect(url.endpoints.map(\.password) == ["pa,ss", "pa,ss"])
        #expect(url.endpoints.map(\.port) == [5701, 5702])
        #expect(try BrokerURL("amqp://guest:a,b,c@h:1/").password == "a,b,c")
    }

    @Test func aSingleURLIsItsOwnOnlyEndpoint() throws {
        let url = try BrokerURL("amqp://guest:guest@localhost:5672/%2f")
        #expect(url.endpoints == [url])
    }

    @Test func anEmptyEntryOrABadNodeIsRefused() {
        #expect(throws: AMQPError.self) { try BrokerURL("amqp://a@h:1/,,amqp://b@h:2/") }
        #expect(throws: AMQPError.self) { try BrokerURL("amqp://a@h:1/,") }
        #expect(throws: AMQPError.self) { try BrokerURL("amqp://a@h:1/,http://b@h:2/") }
    }

    @Test func theCertificateAuthorityAppliesToEveryNode() throws {
        var url = try BrokerURL("amqps://a:b@one:5671/,amqps://a:b@two:5671/")
        url.certificateAuthority = "/etc/intentqueue/ca.pem"
        #expect(url.endpoints.map(\.certificateAuthority) == ["/etc/intentqueue/ca.pem", "/etc/intentqueue/ca.pem"])
    }

    @Test func anUnreachableNodeIsSkippedAndTheLastFailureReported() {
        // Nothing listens on ports 1 and 2 of loopback: both refuse at once.
        do {
            _ = try AMQPConnection(url: try BrokerURL("amqp://g:g@127.0.0.1:1/,amqp://g:g@127.0.0.1:2/"), connectTimeout: 1)
            Issue.record("connected to a port nothing listens on")
        } catch {
            #expect(error.kind == .connection)
            #expect(error.context.contains("127.0.0.1:1") || error.context.contains("127.0.0.1:2"))
        }
    }

    /// Nodes that take a connection and never answer (a frozen broker) share one budget, twice the connect
    /// timeout: the first two use it up, and the third is not tried, so a tool gives up in the same time whatever
    /// the number of nodes. Told by which listeners saw a connection, not by a clock.
    @Test func silentNodesShareOneBudgetAndALaterOneIsNotTried() throws {
        var listeners: [(socket: Int32, port: Int)] = []
        defer { for listener in listeners { Glibc.close(listener.socket) } }
        for _ in 0..<3 {
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            try #require(listener >= 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                    bind(listener, generic, length) == 0 && listen(listener, 8) == 0 && getsockname(listener, generic, &length) == 0
                }
            }
            try #require(bound)
            // Never accepted: the kernel completes each connection, and nothing ever answers the AMQP header.
            listeners.append((listener, Int(UInt16(bigEndian: address.sin_port))))
            _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        }
        let url = try BrokerURL(listeners.map { "amqp://g:g@127.0.0.1:\($0.port)/" }.joined(separator: ","))
        #expect(throws: AMQPError.self) { _ = try AMQPConnection(url: url, connectTimeout: 0.3) }
        let contacted = listeners.filter { listener in
            let accepted = accept(listener.socket, nil, nil)
            if accepted >= 0 { Glibc.close(accepted) }
            return accepted >= 0
        }
        #expect(contacted.count == 2, "nodes contacted: \(contacted.map(\.port)) of \(listeners.map(\.port))")
    }
}
