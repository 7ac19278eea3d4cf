import Foundation
import Hairdressers
import IntentKit
import IntentStore
import Testing

/// The example app's handlers on a real database, run through the pipeline as a
/// worker runs them.
@Suite struct HairdressersTests {
    /// A fresh directory for one test, removed when the test's suite value goes.
    final class TemporaryDirectory: Sendable {
        let path: String

        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("HairdressersTests-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    let directory: TemporaryDirectory
    let databasePath: String
    let database: AppDatabase
    let registry: IntentRegistry

    init() throws {
        directory = try TemporaryDirectory()
        databasePath = directory.path + "/app/hairdressers.sqlite"
        database = try HairdressersDatabase.open(path: databasePath)
        var registry = IntentRegistry()
        try HairdressersApp.register(into: &registry, database: database)
        self.registry = registry
    }

    // MARK: Helpers

    func run(
        _ type: String, _ parameters: [String: JSONValue], id: String = UUID().uuidString, attempt: Int = 1,
        confirmed: [String]? = nil, lenient: Bool = false
    ) async -> PipelineOutcome {
        var envelope = IntentEnvelope(id: id, type: type, parameters: parameters, submittedAt: 1_700_000_000, confirmed: confirmed)
        envelope.lenientParameters = lenient
        let context = IntentContext(intentID: id, intentType: type, attempt: attempt, submittedAt: envelope.submittedAt)
        return await IntentPipeline.run(envelope, registry: registry, context: context)
    }

    func sendMessage(
        _ parameters: [String: JSONValue], id: String = UUID().uuidString, attempt: Int = 1, lenient: Bool = false
    ) async -> PipelineOutcome {
        await run(SendMessage.typeName, parameters, id: id, attempt: attempt, lenient: lenient)
    }

    func orderSoup(
        _ parameters: [String: JSONValue], id: String = UUID().uuidString, attempt: Int = 1, lenient: Bool = false
    ) async -> PipelineOutcome {
        await run(OrderSoup.typeName, parameters, id: id, attempt: attempt, lenient: lenient)
    }

    func question(_ outcome: PipelineOutcome, _ parameter: String, index: Int? = nil) -> ParameterResolution? {
        outcome.resolutions.first { $0.parameter == parameter && $0.index == index }
    }

    struct MessageRow: Equatable {
        var hairdresser: String
        var content: String
        var group: String?
    }

    func messages(for intentID: String? = nil) throws -> [MessageRow] {
        try database.queue.sync { db in
            try db.query(
                "SELECT hairdresser, content, group_name FROM message WHERE ?1 IS NULL OR intent_id = ?1 ORDER BY hairdresser",
                [.optional(intentID)]
            ) { MessageRow(hairdresser: $0.string(0), content: $0.string(1), group: $0.text(2)) }
        }
    }

    func count(_ sql: String, _ bindings: [SQLValue] = []) throws -> Int {
        try database.queue.sync { db in try db.queryFirst(sql, bindings) { $0.int(0) } ?? -1 }
    }

    func resolution(_ outcome: PipelineOutcome, _ parameter: String, index: Int? = nil) -> ResolutionResult? {
        outcome.resolutions.first { $0.parameter == parameter && $0.index == index }?.result
    }

    // MARK: Registration

    @Test func theAppServesItsFourIntents() {
        #expect(registry.typeNames == ["BookAppointment", "OrderSoup", "SendMessage", "SendPayment"])
    }

    // MARK: SendMessage

    @Test func twoNamedRecipientsGetAMessageEach() async throws {
        let outcome = await sendMessage(["recipients": ["Alice", "bob jones"], "content": "Running late"], id: "m-1")

        #expect(outcome.state == .success)
        #expect(outcome.response?.code == "success")
        #expect(outcome.response?.message == "Message sent to Alice Smith, Bob Jones")
        #expect(outcome.response?.payload == ["recipients": ["Alice Smith", "Bob Jones"], "content": "Running late"])
        #expect(resolution(outcome, "recipients", index: 0) == .success("Alice Smith"))
        #expect(resolution(outcome, "recipients", index: 1) == .success("Bob Jones"))
        #expect(
            try messages(for: "m-1") == [
                MessageRow(hairdresser: "Alice Smith", content: "Running late"),
                MessageRow(hairdresser: "Bob Jones", content: "Running late"),
            ])
    }

    @Test func commaSeparatedRecipientsFromTheCommandLineWork() async throws {
        let outcome = await sendMessage(["recipients": "Alice, Bob", "content": "Hi"], id: "m-cli", lenient: true)

        #expect(outcome.state == .success)
        #expect(try messages(for: "m-cli").map(\.hairdresser) == ["Alice Smith", "Bob Jones"])
    }

    @Test func anAmbiguousNameNeedsADisambiguation() async throws {
        let outcome = await sendMessage(["recipients": ["Jeff"], "content": "Hi"], id: "m-jeff")

        #expect(outcome.state == .needsInput)
        #expect(outcome.response == nil)
        #expect(resolution(outcome, "recipients", index: 0) == .disambiguation(["Jeff Baker", "Jeff Chen"]))
        let asked = try #require(question(outcome, "recipients", index: 0))
        #expect(asked.prompt?.full == "Which Jeff do you mean: Jeff Baker or Jeff Chen?")
        #expect(asked.optionTitles == ["Jeff Baker", "Jeff Chen"])
        #expect(try messages(for: "m-jeff").isEmpty)
    }

    @Test func anExactNameWinsOverPrefixMatches() async throws {
        let outcome = await sendMessage(["recipients": ["jeff chen"], "content": "Hi"])

        #expect(outcome.state == .success)
        #expect(resolution(outcome, "recipients", index: 0) == .success("Jeff Chen"))
    }

    @Test func anUnknownRecipientIsUnsupported() async throws {
        let outcome = await sendMessage(["recipients": ["Alice", "Zed"], "content": "Hi"], id: "m-zed")

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.unsupportedParameter)
        #expect(outcome.response?.message?.contains("Zed") == true)
        #expect(resolution(outcome, "recipients", index: 1) == .unsupported(reason: "no hairdresser is called 'Zed'"))
        #expect(try messages(for: "m-zed").isEmpty)
    }

    @Test(arguments: [[:], ["recipients": []], ["recipients": "  "]] as [[String: JSONValue]])
    func noRecipientsAndNoGroupNeedsRecipients(_ recipients: [String: JSONValue]) async throws {
        let outcome = await sendMessage(recipients.merging(["content": "Hi"]) { a, _ in a }, id: "m-none", lenient: true)

        #expect(outcome.state == .needsInput)
        #expect(resolution(outcome, "recipients") == .needsValue)
        #expect(question(outcome, "recipients")?.prompt == "Who should get the message?")
        #expect(resolution(outcome, "groupName") == .notRequired)
        #expect(try messages(for: "m-none").isEmpty)
    }

    @Test func aGroupSendsToEachMember() async throws {
        let outcome = await sendMessage(["groupName": "co", "content": "Team meeting"], id: "m-group")

        #expect(outcome.state == .success)
        #expect(resolution(outcome, "groupName") == .success("coworkers"))
        #expect(resolution(outcome, "recipients") == .notRequired)
        #expect(
            try messages(for: "m-group") == [
                MessageRow(hairdresser: "Carol White", content: "Team meeting", group: "coworkers"),
                MessageRow(hairdresser: "Dan Brown", content: "Team meeting", group: "coworkers"),
                MessageRow(hairdresser: "Jeff Baker", content: "Team meeting", group: "coworkers"),
            ])
    }

    @Test func aGroupAndANamedRecipientAreCombinedWithoutDuplicates() async throws {
        let outcome = await sendMessage(["recipients": ["Jeff Baker", "Alice"], "groupName": "coworkers", "content": "Hi"], id: "m-both")

        #expect(outcome.state == .success)
        #expect(try messages(for: "m-both").map(\.hairdresser) == ["Alice Smith", "Carol White", "Dan Brown", "Jeff Baker"])
    }

    /// Two names of one hairdresser are one recipient: one message, not two.
    @Test func oneHairdresserNamedTwiceGetsOneMessage() async throws {
        let outcome = await sendMessage(["recipients": ["Alice", "Alice Smith"], "content": "Hi"], id: "m-twice")
        #expect(outcome.state == .success)
        #expect(try messages(for: "m-twice").map(\.hairdresser) == ["Alice Smith"])
        #expect(outcome.response?.message == "Message sent to Alice Smith")
    }

    /// A group whose name is inside another's ("neighbors", "old neighbors") used to be asked about for ever: the
    /// exact name wins.
    @Test func aGroupsExactNameWinsOverOneContainingIt() async throws {
        try await database.write { db in try db.run(#"INSERT INTO "group"(name) VALUES ('old neighbors')"#) }
        let outcome = await sendMessage(["groupName": "neighbors", "content": "Hi"], id: "m-exact-group")
        #expect(outcome.state == .success, "\(outcome)")
        #expect(resolution(outcome, "groupName") == .success("neighbors"))
    }

    @Test func anUnknownGroupNeedsAValue() async throws {
        let outcome = await sendMessage(["groupName": "xyz", "content": "Hi"], id: "m-xyz")

        #expect(outcome.state == .needsInput)
        #expect(resolution(outcome, "groupName") == .needsValue)
        #expect(question(outcome, "groupName")?.prompt?.full == "Which group? There are coworkers, developers or neighbors.")
        #expect(try messages(for: "m-xyz").isEmpty)
    }

    @Test func aGroupMatchingSeveralNeedsADisambiguation() async throws {
        let outcome = await sendMessage(["groupName": "er", "content": "Hi"])

        #expect(outcome.state == .needsInput)
        #expect(resolution(outcome, "groupName") == .disambiguation(["coworkers", "developers"]))
    }

    @Test(arguments: [nil, "", "   "] as [JSONValue?])
    func missingContentNeedsAValue(_ content: JSONValue?) async throws {
        var parameters: [String: JSONValue] = ["recipients": ["Alice"]]
        parameters["content"] = content
        let outcome = await sendMessage(parameters, id: "m-empty")

        #expect(outcome.state == .needsInput)
        #expect(resolution(outcome, "content") == .needsValue)
        #expect(resolution(outcome, "recipients", index: 0) == .success("Alice Smith"))
        #expect(try messages(for: "m-empty").isEmpty)
    }

    @Test func theSameMessageIntentHandledTwiceSendsOnce() async throws {
        let parameters: [String: JSONValue] = ["recipients": ["Alice", "Bob"], "content": "Once only"]

        let first = await sendMessage(parameters, id: "m-twice", attempt: 1)
        let second = await sendMessage(parameters, id: "m-twice", attempt: 2)

        #expect(first.state == .success)
        #expect(second == first)
        #expect(try messages(for: "m-twice").count == 2)
        #expect(try count("SELECT count(*) FROM intent_effect WHERE intent_id = 'm-twice'") == 1)
    }

    // MARK: OrderSoup

    @Test func orderingTwoTomatoSoupsSucceeds() async throws {
        let outcome = await orderSoup(["soup": "tomato", "quantity": 2], id: "s-1")

        #expect(outcome.state == .success)
        #expect(outcome.response?.code == "success")
        #expect(outcome.response?.message == "Your order is confirmed!")
        #expect(outcome.response?.payload == ["soup": "Tomato Soup", "quantity": 2, "totalCents": 900])
        #expect(resolution(outcome, "soup") == .success("Tomato Soup"))
        #expect(resolution(outcome, "quantity") == .success(2))

        let rows = try database.queue.sync { db in
            try db.query("SELECT soup, quantity, total_cents FROM soup_order WHERE intent_id = 's-1'") {
                "\($0.string(0)) x\($0.int(1)) = \($0.int(2))"
            }
        }
        #expect(rows == ["Tomato Soup x2 = 900"])
    }

    @Test func aQuantityGivenAsTextIsRefusedOnTheWire() async throws {
        let outcome = await orderSoup(["soup": "Clam Chowder", "quantity": "3"], id: "s-wire")

        #expect(outcome.response?.code == FailureCode.invalidIntent)
        #expect(try count("SELECT count(*) FROM soup_order") == 0)
    }

    @Test func aQuantityGivenAsTextOnTheCommandLineIsAccepted() async throws {
        let outcome = await orderSoup(["soup": "Clam Chowder", "quantity": "3"], id: "s-text", lenient: true)

        #expect(outcome.state == .success)
        #expect(outcome.response?.payload?["totalCents"] == 1950)
    }

    @Test(arguments: [0, 21, -1])
    func aQuantityOutsideOneToTwentyIsUnsupported(_ quantity: Int) async throws {
        let outcome = await orderSoup(["soup": "tomato", "quantity": .number(Double(quantity))], id: "s-bad")

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.unsupportedParameter)
        #expect(outcome.response?.message?.contains("not \(quantity)") == true)
        guard case .unsupported? = resolution(outcome, "quantity") else {
            Issue.record("quantity resolved to \(String(describing: resolution(outcome, "quantity")))")
            return
        }
        #expect(try count("SELECT count(*) FROM soup_order") == 0)
    }

    @Test(arguments: [1, 20])
    func theQuantityBoundsAreAccepted(_ quantity: Int) async throws {
        let outcome = await run(OrderSoup.typeName, ["soup": "tomato", "quantity": .number(Double(quantity))], confirmed: ["intent"])
        #expect(outcome.state == .success)
    }

    @Test func anOrderOfMoreThanTenSoupsAsksForConfirmationFirst() async throws {
        let asked = await orderSoup(["soup": "tomato", "quantity": 11])
        #expect(asked.state == .needsInput)
        #expect(resolution(asked, "intent") == .confirmationRequired("Order 11 × Tomato Soup?"))
        #expect(try count("SELECT count(*) FROM soup_order") == 0)
        let ten = await orderSoup(["soup": "tomato", "quantity": 10])
        #expect(ten.state == .success, "ten soups need no confirmation")
        let confirmed = await run(OrderSoup.typeName, ["soup": "tomato", "quantity": 11], confirmed: ["intent"])
        #expect(confirmed.state == .success)
    }

    @Test func aMissingSoupNeedsAValue() async throws {
        let outcome = await orderSoup(["quantity": 2])

        #expect(outcome.state == .needsInput)
        #expect(resolution(outcome, "soup") == .needsValue)
        #expect(resolution(outcome, "quantity") == .success(2))
        #expect(try count("SELECT count(*) FROM soup_order") == 0)
    }

    @Test func aMissingQuantityNeedsAValue() async throws {
        let outcome = await orderSoup(["soup": "tomato"])

        #expect(outcome.state == .needsInput)
        #expect(resolution(outcome, "soup") == .success("Tomato Soup"))
        #expect(resolution(outcome, "quantity") == .needsValue)
        #expect(question(outcome, "quantity")?.prompt == "How many would you like?")
        #expect(try count("SELECT count(*) FROM soup_order") == 0)
    }

    @Test func anAmbiguousSoupNeedsADisambiguation() async throws {
        let outcome = await orderSoup(["soup": "soup", "quantity": 1])

        #expect(outcome.state == .needsInput)
        #expect(resolution(outcome, "soup") == .disambiguation(["Chicken Noodle Soup", "Tomato Soup"]))
    }

    @Test func aSoldOutSoupFailsWithItsOwnCode() async throws {
        let outcome = await orderSoup(["soup": "Minestrone", "quantity": 1], id: "s-sold-out")

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == OrderSoupHandler.soldOut)
        #expect(outcome.response?.code == "soupSoldOut")
        #expect(outcome.response?.message == "Minestrone is sold out today")
        #expect(resolution(outcome, "soup") == .success("Minestrone"))
        #expect(try count("SELECT count(*) FROM soup_order") == 0)
        #expect(try count("SELECT count(*) FROM intent_effect") == 0)
    }

    @Test func aSoupNotOnTheMenuIsUnsupported() async throws {
        let outcome = await orderSoup(["soup": "Gazpacho", "quantity": 1])

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.unsupportedParameter)
        #expect(outcome.response?.message?.contains("Gazpacho") == true)
        #expect(resolution(outcome, "soup") == .unsupported(reason: "'Gazpacho' is not on the menu"))
    }

    @Test func aQuantityThatIsNotANumberIsAnInvalidIntent() async throws {
        let outcome = await orderSoup(["soup": "tomato", "quantity": "lots"])

        #expect(outcome.state == .failure)
        #expect(outcome.response?.code == FailureCode.invalidIntent)
        #expect(outcome.response?.message?.contains("quantity") == true)
    }

    @Test func theSameOrderHandledTwiceIsStoredOnce() async throws {
        let first = await orderSoup(["soup": "chowder", "quantity": 2], id: "s-twice", attempt: 1)
        let second = await orderSoup(["soup": "chowder", "quantity": 2], id: "s-twice", attempt: 2)

        #expect(first.state == .success)
        #expect(first.response?.payload?["totalCents"] == 1300)
        #expect(second == first)
        #expect(try count("SELECT count(*) FROM soup_order WHERE intent_id = 's-twice'") == 1)
        #expect(try count("SELECT count(*) FROM intent_effect WHERE intent_id = 's-twice'") == 1)
    }

    @Test func twoDifferentOrdersAreBothStored() async throws {
        _ = await orderSoup(["soup": "tomato", "quantity": 1], id: "s-a")
        _ = await orderSoup(["soup": "tomato", "quantity": 1], id: "s-b")

        #expect(try count("SELECT count(*) FROM soup_order") == 2)
    }

    // MARK: Names and terms kept between resolutions

    /// What the first recipient named `said` resolves to, through the whole pipeline.
    func recipient(_ said: String) async -> ResolutionResult? {
        resolution(await sendMessage(["recipients": [.string(said)], "content": "Hi"]), "recipients", index: 0)
    }

    @Test func aTermOrANameAddedThroughAnotherConnectionIsReadAtTheNextResolution() async throws {
        #expect(await recipient("Jeffy") == .unsupported(reason: "no hairdresser is called 'Jeffy'"), "read once, and kept")
        #expect(await recipient("Zoe") == .unsupported(reason: "no hairdresser is called 'Zoe'"))
        let other = try Database(path: databasePath)
        try Vocabulary.set(.hairdresser, term: "Jeffy", value: "jeff baker", in: other)
        #expect(await recipient("Jeffy") == .success("Jeff Baker"), "a term set elsewhere")
        try other.run("INSERT INTO hairdresser(name) VALUES ('Zoe Quinn')")
        #expect(await recipient("Zoe") == .success("Zoe Quinn"), "a name added by plain SQL")
        try other.run("DELETE FROM vocabulary")
        #expect(await recipient("Jeffy") == .unsupported(reason: "no hairdresser is called 'Jeffy'"), "a term taken away")
        try other.run("UPDATE hairdresser SET name = 'Zoe Rivera' WHERE name = 'Zoe Quinn'")
        #expect(await recipient("Zoe") == .success("Zoe Rivera"), "a name changed")
    }

    @Test func lookupsRacingAChangeNeverKeepNamesOlderThanItOnceItIsCommitted() async throws {
        let other = try HairdressersDatabase.open(path: databasePath)  // a connection of its own
        for round in 0..<5 {
            let name = "Racer\(round) Quinn"
            // Lookups at once, while another connection adds the name: each sees it or not, and keeps what it read.
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<20 { group.addTask { _ = await self.recipient("Racer\(round)") } }
                group.addTask { _ = try? await other.write { db in try db.run("INSERT INTO hairdresser(name) VALUES (?)", [.text(name)]) } }
            }
            // Once the change is committed, every lookup sees it, whatever the racing ones kept.
            for _ in 0..<3 {
                #expect(await recipient("Racer\(round)") == .success(.string(name)), "round \(round)")
            }
        }
    }

    @Test func theNamesReadAreKeptForAsLongAsTheirRevisionStands() async throws {
        #expect(await recipient("Yann") == .unsupported(reason: "no hairdresser is called 'Yann'"))
        // A change the revision does not see (its trigger dropped) is not read: the names were kept, not read again.
        let other = try Database(path: databasePath)
        try other.run("DROP TRIGGER names_revision_hairdresser_insert")
        try other.run("INSERT INTO hairdresser(name) VALUES ('Yann Tiersen')")
        #expect(await recipient("Yann") == .unsupported(reason: "no hairdresser is called 'Yann'"))
        try other.run("UPDATE names_revision SET revision = revision + 1")
        #expect(await recipient("Yann") == .success("Yann Tiersen"))
        // Another database, at the same revision, keeps names of its own.
        let second = try HairdressersDatabase.open(path: directory.path + "/second/hairdressers.sqlite")
        let revision = try count("SELECT revision FROM names_revision")
        try second.queue.sync { db in try db.run("UPDATE names_revision SET revision = ?", [.integer(Int64(revision))]) }
        var registry = IntentRegistry()
        try HairdressersApp.register(into: &registry, database: second)
        let envelope = IntentEnvelope(
            id: "second", type: SendMessage.typeName, parameters: ["recipients": ["Yann"], "content": "Hi"], submittedAt: 1)
        let outcome = await IntentPipeline.run(
            envelope, registry: registry, context: IntentContext(intentID: "second", intentType: SendMessage.typeName, attempt: 1, submittedAt: 1))
        #expect(resolution(outcome, "recipients", index: 0) == .unsupported(reason: "no hairdresser is called 'Yann'"))
    }

    // MARK: Seed data

    @Test func theSeedDataIsCreatedOnce() throws {
        #expect(try count("SELECT count(*) FROM hairdresser") == 7)
        #expect(try count(#"SELECT count(*) FROM "group""#) == 3)
        #expect(try count("SELECT count(*) FROM group_member") == 7)
        #expect(try count("SELECT count(*) FROM soup") == 4)

        let reopened = try HairdressersDatabase.open(path: databasePath)
        let again = try HairdressersDatabase.open(path: databasePath)

        for db in [reopened, again] {
            let counts = try db.queue.sync { db in
                try ["hairdresser", #""group""#, "group_member", "soup"].map { table in
                    try db.queryFirst("SELECT count(*) FROM \(table)") { $0.int(0) } ?? -1
                }
            }
            #expect(counts == [7, 3, 7, 4])
        }
    }

    @Test func reopeningKeepsWhatWasHandled() async throws {
        _ = await orderSoup(["soup": "tomato", "quantity": 2], id: "s-persist")

        let reopened = try HairdressersDatabase.open(path: databasePath)
        let orders = try reopened.queue.sync { db in
            try db.queryFirst("SELECT count(*) FROM soup_order WHERE intent_id = 's-persist'") { $0.int(0) }
        }
        #expect(orders == 1)
    }
}
