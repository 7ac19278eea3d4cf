import Foundation
import IntentKit
import IntentStore
import Testing

@testable import IntentCLI

/// The hand-rolled command-line parsing, exit codes, `--json` output and paths
/// shared by the three tools.
@Suite struct ArgumentsTests {
    static let flags: Set<String> = ["--json", "--help", "--follow"]
    static let options: Set<String> = ["--timeout", "--param", "--limit"]

    static func parse(_ words: [String], aliases: [String: String] = ["-h": "--help"]) throws(UsageError) -> Arguments {
        try Arguments(words, flags: flags, options: options, aliases: aliases)
    }

    static func usageError(_ words: [String]) -> UsageError? {
        do {
            _ = try parse(words)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Parsing

    @Test func flagsOptionsAndPositionalsAreSeparated() throws {
        let arguments = try Self.parse(["status", "--json", "abc-123", "--timeout", "5", "--param=content=hi"])

        #expect(arguments.positionals == ["status", "abc-123"])
        #expect(arguments.flags == ["--json"])
        #expect(arguments.has("--json"))
        #expect(!arguments.has("--follow"))
        #expect(try arguments.value("--timeout") == "5")
        #expect(try arguments.value("--param") == "content=hi")
        #expect(try arguments.value("--limit") == nil)
    }

    @Test func nothingParsesToNothing() throws {
        let arguments = try Self.parse([])
        #expect(arguments.positionals.isEmpty)
        #expect(arguments.flags.isEmpty)
        #expect(arguments.options.isEmpty)
    }

    @Test func anOptionsSeparateValueMayLookLikeAnOption() throws {
        let arguments = try Self.parse(["--param", "--json"])
        #expect(try arguments.value("--param") == "--json")
        #expect(!arguments.has("--json"))
    }

    @Test func anInlineValueMayBeEmptyOrContainEquals() throws {
        #expect(try Self.parse(["--param="]).value("--param") == "")
        #expect(try Self.parse(["--param=a=b=c"]).value("--param") == "a=b=c")
    }

    @Test func doubleDashEndsOptions() throws {
        let arguments = try Self.parse(["--json", "--", "--timeout", "-h", "--unknown", "-"])

        #expect(arguments.flags == ["--json"])
        #expect(arguments.positionals == ["--timeout", "-h", "--unknown", "-"])
        #expect(arguments.options.isEmpty)
    }

    @Test func aLoneDashIsAPositional() throws {
        #expect(try Self.parse(["-"]).positionals == ["-"])
    }

    @Test func anUnknownOptionIsAUsageError() throws {
        let error = try #require(Self.usageError(["--jsn"]))
        #expect(error.description == "unknown option '--jsn'")

        let inline = try #require(Self.usageError(["--nope=3"]))
        #expect(inline.description == "unknown option '--nope'")

        #expect(Self.usageError(["-x"]) != nil)
    }

    @Test func anOptionWithoutItsValueIsAUsageError() throws {
        let error = try #require(Self.usageError(["abc", "--timeout"]))
        #expect(error.description == "option --timeout needs a value")
    }

    @Test func aFlagWithAValueIsAUsageError() throws {
        let error = try #require(Self.usageError(["--json=yes"]))
        #expect(error.description == "option --json takes no value")
    }

    @Test func aRepeatedOptionKeepsEveryValueButHasNoSingleValue() throws {
        let arguments = try Self.parse(["--param", "a=1", "--param=b=2"])

        #expect(arguments.options["--param"] == ["a=1", "b=2"])
        let error = #expect(throws: UsageError.self) { try arguments.value("--param") }
        #expect(error?.description == "option --param is given more than once")
    }

    @Test func aRepeatedFlagIsHarmless() throws {
        #expect(try Self.parse(["--json", "--json"]).flags == ["--json"])
    }

    @Test func dashHIsAnAliasForHelp() throws {
        #expect(try Self.parse(["-h"]).has("--help"))
        #expect(try Self.parse(["--help"]).has("--help"))
        #expect(try Self.parse(["-t", "3"], aliases: ["-t": "--timeout"]).value("--timeout") == "3")
        // Without the alias, -h is unknown.
        #expect(throws: UsageError.self) { try Self.parse(["-h"], aliases: [:]) }
    }

    // MARK: Validated values

    @Test(arguments: [("5", 5.0), ("0.25", 0.25), ("1e2", 100.0)])
    func secondsAcceptsPositiveNumbers(_ text: String, _ expected: Double) throws {
        #expect(try Self.parse(["--timeout", text]).seconds("--timeout") == expected)
    }

    @Test func absentSecondsAreNil() throws {
        #expect(try Self.parse([]).seconds("--timeout") == nil)
    }

    @Test(arguments: ["0", "-1", "abc", "", "nan", "inf", "5s"])
    func secondsRefusesAnythingElse(_ text: String) throws {
        let arguments = try Self.parse(["--timeout=\(text)"])
        let error = #expect(throws: UsageError.self) { try arguments.seconds("--timeout") }
        #expect(error?.description == "--timeout must be a positive number of seconds, not '\(text)'")
    }

    @Test(arguments: [("90", 90.0), ("90s", 90.0), ("1.5m", 90.0), ("10m", 600.0), ("2h", 7_200.0), ("7d", 604_800.0)])
    func durationAcceptsSecondsAndUnits(_ text: String, _ expected: Double) throws {
        #expect(try Self.parse(["--timeout", text]).duration("--timeout") == expected)
    }

    @Test(arguments: ["0", "-5m", "10x", "m", "", "1e308d", "nan"])
    func durationRefusesAnythingElse(_ text: String) throws {
        let arguments = try Self.parse(["--timeout=\(text)"])
        let error = #expect(throws: UsageError.self) { try arguments.duration("--timeout") }
        #expect(error?.description == "--timeout must be a positive duration such as 90s, 10m, 2h or 7d, not '\(text)'")
    }

    @Test func instantReadsISO8601WithItsZone() throws {
        #expect(try Self.parse(["--timeout", "2026-12-24T18:00:00Z"]).instant("--timeout") == 1_798_135_200)
        #expect(try Self.parse(["--timeout", "2026-12-24T19:00:00+01:00"]).instant("--timeout") == 1_798_135_200)
        #expect(try Self.parse(["--timeout", "2026-12-24T18:00:00.250Z"]).instant("--timeout") == 1_798_135_200.25)
        #expect(try Self.parse(["--timeout", "2028-02-29T12:00:00Z"]).instant("--timeout") != nil, "a leap day")
        // Times that do not exist, which the formatter rolls over (30 February into March) or takes as given.
        for text in [
            "2026-12-24 18:00", "2026-12-24T18:00:00", "tomorrow", "2026-02-30T10:00:00Z", "2027-02-29T10:00:00Z", "2026-04-31T10:00:00Z",
            "2026-12-24T25:00:00Z", "2026-12-24T18:00:00+99:99", "2026-13-01T10:00:00Z",
        ] {
            let arguments = try Self.parse(["--timeout", text])
            let error = #expect(throws: UsageError.self) { try arguments.instant("--timeout") }
            #expect(error?.description == "--timeout must be a time in ISO 8601 with its zone, such as 2026-12-24T18:00:00Z, not '\(text)'")
        }
    }

    @Test func integerAcceptsNumbersInRange() throws {
        #expect(try Self.parse(["--limit", "1"]).integer("--limit", in: 1...500) == 1)
        #expect(try Self.parse(["--limit", "500"]).integer("--limit", in: 1...500) == 500)
        #expect(try Self.parse([]).integer("--limit", in: 1...500) == nil)
    }

    @Test(arguments: ["0", "501", "-3", "2.5", "ten", ""])
    func integerRefusesAnythingElse(_ text: String) throws {
        let arguments = try Self.parse(["--limit=\(text)"])
        let error = #expect(throws: UsageError.self) { try arguments.integer("--limit", in: 1...500) }
        #expect(error?.description == "--limit must be a whole number from 1 to 500, not '\(text)'")
    }

    @Test func validatedValuesRefuseRepetition() throws {
        let arguments = try Self.parse(["--timeout", "1", "--timeout", "2"])
        #expect(throws: UsageError.self) { try arguments.seconds("--timeout") }
    }

    // MARK: StatusReport

    /// A status as the store would return it (`IntentStatus` has no public memberwise init).
    static func status(_ state: IntentState, response: IntentResponse? = nil) throws -> IntentStatus {
        var object: [String: JSONValue] = [
            "id": "abc", "type": "OrderSoup", "state": .string(state.rawValue), "terminal": .bool(state.isTerminal),
            "parameters": ["soup": "tomato"], "attempts": 1, "submittedAt": 10, "queuedAt": 11, "updatedAt": 12,
        ]
        if let response {
            object["response"] = ["code": .string(response.code), "message": response.message.map(JSONValue.string) ?? .null]
        }
        return try JSONDecoder().decode(IntentStatus.self, from: Data(JSONValue.object(object).serialized()))
    }

    @Test(arguments: [
        (IntentState.success, ExitCode.success),
        (.failure, ExitCode.failed),
        (.canceled, ExitCode.failed),
        (.queued, ExitCode.notTerminal),
        (.inProgress, ExitCode.notTerminal),
        (.needsInput, ExitCode.notTerminal),
    ])
    func exitCodesFollowTheState(_ state: IntentState, _ code: Int32) throws {
        #expect(StatusReport.exitCode(for: try Self.status(state)) == code)
    }

    @Test func theExitCodesAreDistinct() {
        #expect(ExitCode.success == 0)
        #expect(ExitCode.failed == 1)
        #expect(ExitCode.notTerminal == 3)
        #expect(ExitCode.unknown == 4)
        #expect(ExitCode.usage == 64)
    }

    @Test func anUnknownIntentExitsWithUnknown() {
        #expect(StatusReport.exitCode(for: nil) == ExitCode.unknown)
    }

    @Test func theJSONOfAnUnknownIntentSaysUnknown() throws {
        let text = StatusReport.json(nil, id: "no-such-id \"quoted\"")

        let object = try JSONValue.parse(text)
        #expect(object == ["id": "no-such-id \"quoted\"", "state": "unknown", "terminal": false])
    }

    @Test func theJSONOfAKnownIntentIsItsStatus() throws {
        let status = try Self.status(.success, response: IntentResponse(code: "success", message: "Your order is confirmed!"))

        let text = StatusReport.json(status, id: "abc")

        let object = try JSONValue.parse(text)
        #expect(object["id"] == "abc")
        #expect(object["state"] == "success")
        #expect(object["terminal"] == true)
        #expect(object["response"]?["message"] == "Your order is confirmed!")
        #expect(object["parameters"] == ["soup": "tomato"])
        #expect(try JSONDecoder().decode(IntentStatus.self, from: Data(text.utf8)) == status)
    }

    // MARK: Environment

    @Test func intentStatusDBWins() {
        let path = Environment.statusStorePath([
            "INTENT_STATUS_DB": "/data/status.sqlite", "XDG_STATE_HOME": "/xdg", "HOME": "/home/ann",
        ])
        #expect(path == "/data/status.sqlite")
    }

    @Test func xdgStateHomeComesNext() {
        #expect(Environment.statusStorePath(["XDG_STATE_HOME": "/xdg", "HOME": "/home/ann"]) == "/xdg/intentqueue/status.sqlite")
        #expect(Environment.statusStorePath(["INTENT_STATUS_DB": "", "XDG_STATE_HOME": "/xdg"]) == "/xdg/intentqueue/status.sqlite")
    }

    @Test func homeIsTheFallback() {
        #expect(Environment.statusStorePath(["HOME": "/home/ann"]) == "/home/ann/.local/state/intentqueue/status.sqlite")
        #expect(Environment.statusStorePath(["XDG_STATE_HOME": "", "HOME": "/home/ann"]) == "/home/ann/.local/state/intentqueue/status.sqlite")
        #expect(Environment.stateDirectory(["HOME": "/home/bob"]) == "/home/bob/.local/state/intentqueue")
    }

    @Test func theBrokerURLComesFromTheEnvironment() throws {
        #expect(try Environment.brokerURL(["INTENT_BROKER_URL": "amqp://u:p@broker:5673/prod"]).host == "broker")
        #expect(try Environment.brokerURL([:]).port == 5672)
        let error = #expect(throws: UsageError.self) { try Environment.brokerURL(["INTENT_BROKER_URL": "http://broker"]) }
        #expect(error?.description.hasPrefix("INTENT_BROKER_URL: ") == true)
    }
}
