import Testing

@testable import IntentAMQP

/// `amqp://user:password@host:port/vhost` parsing, after RabbitMQ's URI spec.
@Suite struct BrokerURLTests {
    static func configurationError(_ text: String) -> AMQPError? {
        do {
            _ = try BrokerURL(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func theDefaultURLIsTheLocalGuestBroker() throws {
        let url = try BrokerURL(BrokerURL.defaultURL)

        #expect(!url.tls)
        #expect(url.host == "127.0.0.1")
        #expect(url.port == 5672)
        #expect(url.user == "guest")
        #expect(url.password == "guest")
        #expect(url.virtualHost == "/")
    }

    @Test func everyPartIsRead() throws {
        let url = try BrokerURL("amqp://worker:s3cret@rabbit.internal:5673/production")

        #expect(!url.tls)
        #expect(url.user == "worker")
        #expect(url.password == "s3cret")
        #expect(url.host == "rabbit.internal")
        #expect(url.port == 5673)
        #expect(url.virtualHost == "production")
    }

    @Test func missingPartsTakeTheDefaults() throws {
        let url = try BrokerURL("amqp://rabbit")

        #expect(url.host == "rabbit")
        #expect(url.port == 5672)
        #expect(url.user == "guest")
        #expect(url.password == "guest")
        #expect(url.virtualHost == "/")
    }

    @Test func anEmptyHostIsLocalhost() throws {
        #expect(try BrokerURL("amqp://").host == "localhost")
        #expect(try BrokerURL("amqp://ann:pw@:5673/").host == "localhost")
    }

    @Test func aUserWithoutPasswordKeepsTheDefaultPassword() throws {
        let url = try BrokerURL("amqp://ann@rabbit")
        #expect(url.user == "ann")
        #expect(url.password == "guest")
    }

    @Test func surroundingWhitespaceIsIgnored() throws {
        let url = try BrokerURL("  amqp://rabbit:5700/x \n")
        #expect(url.host == "rabbit")
        #expect(url.port == 5700)
        #expect(url.virtualHost == "x")
    }

    @Test func percent2FSpellsTheRootVirtualHost() throws {
        #expect(try BrokerURL("amqp://rabbit/%2f").virtualHost == "/")
        #expect(try BrokerURL("amqp://rabbit/%2F").virtualHost == "/")
    }

    @Test func anEmptyPathIsTheRootVirtualHost() throws {
        #expect(try BrokerURL("amqp://rabbit/").virtualHost == "/")
        #expect(try BrokerURL("amqp://rabbit").virtualHost == "/")
    }

    @Test func aNamedVirtualHostIsDecoded() throws {
        #expect(try BrokerURL("amqp://rabbit/staging").virtualHost == "staging")
        #expect(try BrokerURL("amqp://rabbit/team%2Fa").virtualHost == "team/a")
        #expect(try BrokerURL("amqp://rabbit/caf%C3%A9").virtualHost == "café")
    }

    @Test func aPercentEncodedPasswordMayHoldAtSignsAndColons() throws {
        let url = try BrokerURL("amqp://us%40er:p%40ss%3Aw%2Ford@rabbit:5672/%2f")

        #expect(url.user == "us@er")
        #expect(url.password == "p@ss:w/ord")
        #expect(url.host == "rabbit")
        #expect(url.virtualHost == "/")
    }

    @Test func anIPv6HostIsBracketed() throws {
        let url = try BrokerURL("amqp://ann:pw@[::1]:5673/%2f")

        #expect(url.host == "::1")
        #expect(url.port == 5673)
        #expect(url.user == "ann")
        #expect(url.password == "pw")

        let noPort = try BrokerURL("amqp://[fe80::1]")
        #expect(noPort.host == "fe80::1")
        #expect(noPort.port == 5672)
    }

    @Test func amqpsDefaultsToPort5671() throws {
        let url = try BrokerURL("amqps://secure.example.com/%2f")

        #expect(url.tls)
        #expect(url.port == 5671)
        #expect(try BrokerURL("amqps://secure.example.com:6000").port == 6000)
    }

    @Test(arguments: ["http://rabbit", "rabbit:5672", "AMQP-ish://x", "", "amqp:/rabbit"])
    func anotherSchemeIsAConfigurationError(_ text: String) throws {
        let error = try #require(Self.configurationError(text))
        #expect(error.kind == .configuration)
        #expect(error.detail.contains("amqp://"))
    }

    @Test(arguments: ["amqp://rabbit:0", "amqp://rabbit:70000", "amqp://rabbit:x", "amqp://rabbit:", "amqp://[::1]:99999", "amqp://rabbit:-1"])
    func aBadPortIsAConfigurationError(_ text: String) throws {
        let error = try #require(Self.configurationError(text))
        #expect(error.kind == .configuration)
        #expect(error.detail.contains("port"))
    }

    @Test func theHighestPortIsAccepted() throws {
        #expect(try BrokerURL("amqp://rabbit:65535").port == 65535)
        #expect(try BrokerURL("amqp://rabbit:1").port == 1)
    }

    @Test(arguments: [
        ("amqp://us%4:pw@rabbit", "user name"),
        ("amqp://ann:p%zzw@rabbit", "password"),
        ("amqp://ann:pw%@rabbit", "password"),
        ("amqp://rabbit/v%2", "virtual host"),
        ("amqp://rabbit/%ff%fe", "virtual host"),
    ])
    func badPercentEncodingIsAConfigurationError(_ text: String, _ part: String) throws {
        let error = try #require(Self.configurationError(text))
        #expect(error.kind == .configuration)
        #expect(error.detail.contains(part))
    }

    @Test func anUnclosedBracketIsAConfigurationError() throws {
        let error = try #require(Self.configurationError("amqp://[::1:5672"))
        #expect(error.kind == .configuration)
    }

    // MARK: Secrets

    @Test(arguments: [
        "amqp://worker:hunter2-secret@rabbit:5673/production",
        "amqps://worker:hunter2-secret@[::1]/%2f",
        "amqp://worker:hunter2%2Dsecret@rabbit",
    ])
    func theDescriptionNeverContainsThePassword(_ text: String) throws {
        let url = try BrokerURL(text)

        #expect(url.password == "hunter2-secret")
        #expect(!url.description.contains("hunter2"))
        #expect(!String(describing: url).contains("hunter2"))
        #expect(url.description.contains("worker@"))
    }

    @Test func theDescriptionNamesEveryOtherPart() throws {
        #expect(try BrokerURL("amqp://worker:pw@rabbit:5673/production").description == "amqp://worker@rabbit:5673/production")
        #expect(try BrokerURL("amqps://worker:pw@[::1]/%2f").description == "amqps://worker@[::1]:5671/%2f")
    }

    @Test(arguments: [
        "http://worker:hunter2@rabbit",
        "worker:hunter2@rabbit:5672",
        "amqp:worker:hunter2@rabbit",
        "me@host://worker:hunter2@rabbit",
        "worker:hunter2@rabbit://elsewhere",
    ])
    func aRefusedURLsErrorNeverContainsThePassword(_ text: String) throws {
        let error = try #require(Self.configurationError(text))
        #expect(error.kind == .configuration)
        #expect(!error.description.contains("hunter2"))
        #expect(error.description.contains("rabbit"))
    }

    // MARK: Environment

    @Test func fromEnvironmentReadsIntentBrokerURL() throws {
        let url = try BrokerURL.fromEnvironment(["INTENT_BROKER_URL": "amqp://ann:pw@elsewhere:5999/v", "OTHER": "x"])

        #expect(url == (try BrokerURL("amqp://ann:pw@elsewhere:5999/v")))
        #expect(url.host == "elsewhere")
        #expect(BrokerURL.environmentVariable == "INTENT_BROKER_URL")
    }

    @Test(arguments: [[:], ["INTENT_BROKER_URL": ""]] as [[String: String]])
    func fromEnvironmentFallsBackToTheDefault(_ environment: [String: String]) throws {
        #expect(try BrokerURL.fromEnvironment(environment) == (try BrokerURL(BrokerURL.defaultURL)))
    }

    @Test func fromEnvironmentReportsABadURL() throws {
        let error = #expect(throws: AMQPError.self) { try BrokerURL.fromEnvironment(["INTENT_BROKER_URL": "amqp://rabbit:0"]) }
        #expect(error?.kind == .configuration)
    }
}
