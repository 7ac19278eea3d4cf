import Foundation
import IntentAMQP
import IntentKit
import IntentStore
import Testing

/// Each way a producer account could act on what is not its own, tried
/// against a broker set up as deploy/definitions.json says, with two producers
/// (alice, whose intents are the victims, and bob): each attack is refused —
/// by the broker, or by the worker with a clear error on bob's side — and
/// alice's intent, its status and its effects stay as they were.
@Suite(.timeLimit(.minutes(10)))
struct SecurityTests {
    func rows(_ secure: SecureSandbox, _ table: String, _ id: String) throws -> Int {
        try Database(path: secure.sandbox.appDatabasePath, mode: .readOnly)
            .queryFirst("SELECT count(*) FROM \(table) WHERE intent_id = ?", [.text(id)]) { $0.int(0) } ?? -1
    }

    func stored(_ secure: SecureSandbox, _ id: String) throws -> IntentStatus? {
        try secure.sandbox.statusStore().status(id: id)
    }

    /// The recorder answers remote queries on the thread that records every event: one user's costly queries may take
    /// only their share of its time (`--query-share`). Past it, that user is told at once to try again later, while
    /// their lookups of one intent, another user's queries and an operator's are answered as before.
    @Test func oneUsersQueriesTakeNoMoreThanTheirShareOfTheRecorder() async throws {
        let secure = try await SecureSandbox("query-share")
        defer { Task { await secure.tearDown() } }
        // So small a share that one answer uses it up for many minutes.
        try await secure.startServices(recorderArguments: ["--query-share", "0.000000001"])
        let first = try await secure.status(as: secure.alice, ["list", "--remote", "--json"])
        #expect(first.exitCode == 0, "\(first)")
        let second = try await secure.status(as: secure.alice, ["list", "--remote", "--json"])
        #expect(second.exitCode != 0 && second.stderr.contains("busy with \(secure.alice)'s status queries"), "\(second)")
        // A lookup of one intent (what --wait reads) is never refused.
        let lookup = try await secure.status(as: secure.alice, ["never-submitted", "--remote", "--json"])
        #expect(lookup.exitCode != 69 && !lookup.stderr.contains("busy"), "\(lookup)")
        let other = try await secure.status(as: secure.bob, ["list", "--remote", "--json"])
        #expect(other.exitCode == 0, "another user has a share of their own: \(other)")
        for _ in 0..<3 {
            let operatorRead = try await secure.status(as: secure.operatorUser, ["list", "--remote", "--json"])
            #expect(operatorRead.exitCode == 0, "an operator is not counted: \(operatorRead)")
        }
    }

    @Test func aConfirmationCountsOnlyAsTheAnswerToOneTheIntentAsked() async throws {
        let secure = try await SecureSandbox("confirm-skip")
        defer { Task { await secure.tearDown() } }
        try await secure.startServices()
        // Fifteen soups must be confirmed; "confirmed" on the first turn asks nothing of anyone.
        let sneaky = IntentEnvelope(
            id: "soup-15", type: "OrderSoup", parameters: ["soup": "Tomato Soup", "quantity": 15], submittedAt: 0,
            confirmed: [IntentPipeline.wholeIntent])
        try await publishRaw(
            url: secure.url(secure.alice), routingKey: "OrderSoup", body: sneaky.encoded(), messageID: "soup-15", userID: secure.alice)
        try await eventually(timeout: 20, "the order to ask") { try stored(secure, "soup-15")?.state == .needsInput }
        #expect(try rows(secure, "soup_order", "soup-15") == 0)
        // A second turn that "confirms" the quantity, which was never asked, still asks for the order.
        let wrongAnswer = IntentEnvelope(
            id: "soup-15", type: "OrderSoup", parameters: ["soup": "Tomato Soup", "quantity": 15], submittedAt: 0, turn: 1,
            answers: [:], confirmed: ["quantity"])
        try await publishRaw(
            url: secure.url(secure.alice), routingKey: "OrderSoup", body: wrongAnswer.encoded(), messageID: "soup-15", userID: secure.alice)
        try await eventually(timeout: 20, "the second question") {
            let status = try stored(secure, "soup-15")
            return status?.state == .needsInput && status?.turn == 1
        }
        #expect(try rows(secure, "soup_order", "soup-15") == 0)
        // The real confirmation of what was asked goes through.
        let confirmed = try await secure.submit(as: secure.alice, ["--confirm", "soup-15", "--wait"])
        #expect(confirmed.exitCode == 0, "\(confirmed)")
        #expect(try rows(secure, "soup_order", "soup-15") == 1)
    }

    @Test func aProducerCanNeitherPublishOutcomesNorTouchTheSharedQueues() async throws {
        let secure = try await SecureSandbox("outcomes")
        defer { Task { await secure.tearDown() } }
        try await secure.startServices()
        #expect(
            try await secure.submit(as: secure.alice, ["SendMessage", "recipients=Jeff", "content=hi", "--id", "victim", "--wait"]).exitCode == 3)
        let forged = StatusEvent(
            id: "victim", type: "SendMessage", state: .success, attempt: 1, response: .success("done"), owner: secure.alice)
        await #expect(throws: (any Error).self, "the broker refuses bob's publish to intents.status") {
            try await publishRaw(
                url: secure.url(secure.bob), routingKey: forged.routingKey, body: forged.encoded(), messageID: "victim",
                exchange: "intents.status", userID: secure.bob)
        }
        await #expect(throws: (any Error).self, "and one claiming to be the worker") {
            try await publishRaw(
                url: secure.url(secure.bob), routingKey: forged.routingKey, body: forged.encoded(), messageID: "victim",
                exchange: "intents.status", userID: secure.workerUser)
        }
        let bob = try BrokerURL(secure.url(secure.bob))
        for (what, attempt) in [
            ("delete intents.dead", { (connection: AMQPConnection) throws in try connection.deleteQueue("intents.dead") }),
            ("delete intents.status", { (connection: AMQPConnection) throws in try connection.deleteExchange("intents.status") }),
            ("declare a queue named intents.status", { (connection: AMQPConnection) throws in _ = try connection.declareQueue("intents.status") }),
            ("redeclare intents", { (connection: AMQPConnection) throws in try connection.declareExchange("intents", type: "topic") }),
            ("consume the work queue", { (connection: AMQPConnection) throws in _ = try connection.consume("intents.work") }),
        ] {
            let outcome = Result { () throws -> Void in
                let connection = try AMQPConnection(url: bob)
                defer { connection.close() }
                try attempt(connection)
            }
            guard case .failure(let error as AMQPError) = outcome else {
                Issue.record("bob could \(what)")
                continue
            }
            #expect(error.replyCode == 403, "\(what): \(error)")
        }
        #expect(try stored(secure, "victim")?.state == .needsInput, "alice's intent is as it was")
        // The dead letters are still there (a rabbitmqctl that fails on a busy machine is asked again).
        try await eventually(timeout: 60, "the dead-letter queue to be listed") {
            (try? await queueDepth("intents.dead", sandbox: secure.sandbox)) != nil
        }
    }

    @Test func anotherProducerCannotAnswerConfirmDenyCancelReadOrWatchAnIntent() async throws {
        let secure = try await SecureSandbox("ownership")
        defer { Task { await secure.tearDown() } }
        try await secure.startServices()
        #expect(try await secure.submit(as: secure.alice, ["SendMessage", "recipients=Jeff", "content=hi", "--id", "jeff", "--wait"]).exitCode == 3)
        #expect(try await secure.submit(as: secure.alice, ["OrderSoup", "soup=tomato", "quantity=12", "--id", "big", "--wait"]).exitCode == 3)
        #expect(
            try await secure.submit(as: secure.alice, ["SendMessage", "recipients=Alice", "content=private", "--id", "private", "--wait"]).exitCode
                == 0)

        // Through the tools: refused at once (77), or by the worker and said to bob (77).
        let answered = try await secure.submit(as: secure.bob, ["--answer", "jeff", "recipients=Jeff Baker", "--wait"])
        #expect(answered.exitCode == 77, "\(answered)")
        for arguments in [["--answer", "jeff", "recipients=Jeff Baker"], ["--confirm", "big"], ["--deny", "big"]] {
            let result = try await secure.submit(as: secure.bob, arguments + ["--as-operator", "--wait"])
            #expect(result.exitCode == 77 && result.stderr.contains("not \(secure.bob)'s intent"), "\(arguments): \(result)")
        }
        let canceled = try await secure.status(as: secure.bob, ["cancel", "big"])
        #expect(canceled.exitCode == 77 && canceled.stderr.contains("refused"), "\(canceled)")
        // A cancel hint is bob's too, and counts for nothing: alice's confirmation of this order goes through.
        #expect(try await secure.submit(as: secure.alice, ["OrderSoup", "soup=tomato", "quantity=11", "--id", "hinted", "--wait"]).exitCode == 3)
        try await publishRaw(
            url: secure.url(secure.bob), routingKey: "",
            body: JSONValue.object(["id": "hinted", "at": .number(Date().timeIntervalSince1970)]).serialized(), exchange: "intents.cancel",
            userID: secure.bob)
        let confirmedByAlice = try await secure.submit(as: secure.alice, ["--confirm", "hinted", "--wait"])
        #expect(confirmedByAlice.exitCode == 0, "bob's hint canceled alice's order: \(confirmedByAlice)")
        #expect(try rows(secure, "soup_order", "hinted") == 1)
        // Raw, without the tools: the worker refuses them all the same.
        let answer = IntentEnvelope(
            id: "jeff", type: "SendMessage", parameters: ["recipients": ["Jeff Baker"], "content": "hi"], submittedAt: 0, turn: 1,
            answers: ["recipients": ["Jeff Baker"]])
        try await publishRaw(url: secure.url(secure.bob), routingKey: "SendMessage", body: answer.encoded(), messageID: "jeff", userID: secure.bob)
        try await publishRaw(url: secure.url(secure.bob), routingKey: "SendMessage", body: answer.encoded(), messageID: "jeff")  // no user_id at all
        // One that claims to be an operator's requeue is just bob's answer, to the recorder as to the worker.
        try await publishRaw(
            url: secure.url(secure.bob), routingKey: "SendMessage", body: answer.encoded(), messageID: "jeff",
            headers: [DeadLetters.requeuedHeader: .integer(1), DeadLetters.publisherHeader: .string(secure.alice)], userID: secure.bob)
        // A body too large to read that names jeff, with no message id: dead-lettered under an id of its own.
        let oversized = IntentEnvelope(
            id: "jeff", type: "SendMessage", parameters: ["content": .string(String(repeating: "x", count: 1_200_000))], submittedAt: 0)
        try await publishRaw(url: secure.url(secure.bob), routingKey: "SendMessage", body: oversized.encoded(), userID: secure.bob)
        try await eventually(timeout: 20, "the worker to refuse the raw answers") {
            secure.workerLog.components(separatedBy: "refused: 'jeff' is not").count - 1 >= 4
        }
        try await eventually(timeout: 20, "the oversized body to be dead-lettered") {
            try secure.sandbox.statusStore().status(id: DeadLetters.syntheticID(for: oversized.encoded()))?.response?.code == FailureCode.deadLettered
        }
        #expect(try stored(secure, "jeff")?.state == .needsInput && stored(secure, "jeff")?.turn == 0, "alice's question is untouched")
        #expect(try stored(secure, "big")?.state == .needsInput)
        #expect(try rows(secure, "message", "jeff") == 0 && rows(secure, "soup_order", "big") == 0)

        // Reading: bob's remote read of alice's intent is unknown, or shows only his own refused message.
        let read = try await secure.status(as: secure.bob, ["private", "--remote", "--json"])
        #expect(read.exitCode == 4 && read.stdout.contains("\"state\":\"unknown\""), "\(read)")
        let refusedRead = try await secure.status(as: secure.bob, ["jeff", "--remote", "--json"])
        #expect(refusedRead.stdout.contains(FailureCode.notOwner) && !refusedRead.stdout.contains("needsInput"), "\(refusedRead)")
        let listed = try await secure.status(as: secure.bob, ["list", "--remote", "--json"])
        #expect(
            listed.exitCode == 0 && !listed.stdout.contains("jeff") && !listed.stdout.contains("\"big\"")
                && !listed.stdout.contains("private"), "\(listed)")
        let dead = try await secure.status(as: secure.bob, ["dead", "--remote"])
        #expect(dead.exitCode == 77 && dead.stderr.contains("operators"), "\(dead)")
        #expect(try await secure.status(as: secure.alice, ["jeff", "--remote"]).exitCode == 3, "alice reads her own")
        #expect(try await secure.status(as: secure.operatorUser, ["jeff", "--remote"]).exitCode == 3, "so does an operator")
        // Watching: bob may not bind to alice's events, nor to everyone's.
        let watched = try await secure.status(as: secure.bob, ["watch", "--all"], timeout: 20)
        #expect(watched.exitCode == 77, "\(watched)")
        #expect(!watched.stderr.contains("watching"), "a refused watch never says it watches: \(watched)")
        #expect(throws: (any Error).self, "binding to alice's events") {
            let feed = try StatusFeed(url: try BrokerURL(secure.url(secure.bob)), bindings: [("intents.status", "\(secure.alice).#")])
            _ = try feed.next(timeout: 0.5)
            feed.close()
        }

        // Alice, and an operator, may still act: the operator cancels the big order.
        let answeredByAlice = try await secure.submit(as: secure.alice, ["--answer", "jeff", "recipients=Jeff Baker", "--wait"])
        #expect(answeredByAlice.exitCode == 0, "\(answeredByAlice)")
        let canceledByOperator = try await secure.status(as: secure.operatorUser, ["cancel", "big"])
        #expect(canceledByOperator.exitCode == 0, "\(canceledByOperator)")
        #expect(try rows(secure, "message", "jeff") == 1 && rows(secure, "soup_order", "big") == 0)
    }

    @Test func anIDInUseByAnotherOwnerOrTypeIsRefusedWithoutTouchingTheFirstIntent() async throws {
        let secure = try await SecureSandbox("id-in-use")
        defer { Task { await secure.tearDown() } }
        try await secure.startServices()
        #expect(
            try await secure.submit(as: secure.alice, ["SendMessage", "recipients=Alice", "content=mine", "--id", "order-17", "--wait"]).exitCode == 0
        )
        let otherType = try await secure.submit(as: secure.alice, ["OrderSoup", "soup=tomato", "quantity=1", "--id", "order-17", "--wait"])
        #expect(otherType.exitCode == 77 && otherType.stderr.contains("taken by a SendMessage intent"), "\(otherType)")
        let otherOwner = try await secure.submit(as: secure.bob, ["SendMessage", "recipients=Bob", "content=theirs", "--id", "order-17", "--wait"])
        #expect(otherOwner.exitCode == 77 && otherOwner.stderr.contains("another submitter"), "\(otherOwner)")
        let otherOwnerAndType = try await secure.submit(as: secure.bob, ["OrderSoup", "soup=tomato", "quantity=1", "--id", "order-17", "--wait"])
        #expect(
            otherOwnerAndType.exitCode == 77 && otherOwnerAndType.stderr.contains("another submitter")
                && !otherOwnerAndType.stderr.contains("SendMessage"), "a refusal tells bob nothing of alice's intent: \(otherOwnerAndType)")
        let status = try #require(try stored(secure, "order-17"))
        #expect(status.state == .success && status.owner == secure.alice && status.response?.message == "Message sent to Alice Smith")
        #expect(try rows(secure, "message", "order-17") == 1 && rows(secure, "soup_order", "order-17") == 0)
        #expect(try secure.sandbox.statusStore().conflictCount() == 0)
    }

    @Test func aRestrictedIntentKeepsItsVerifiedSubmitterThroughARetryAndARequeue() async throws {
        let secure = try await SecureSandbox("restricted")
        defer { Task { await secure.tearDown() } }
        try await secure.startServices()
        // The bank is busy once: the intent is retried, republished by the worker, and still alice's.
        let retried = try await secure.submit(
            as: secure.alice, ["SendPayment", "hairdresser=Alice", "amount=20", "busyAttempts=1", "--id", "pay-retry", "--wait"])
        #expect(retried.exitCode == 0, "\(retried)")
        #expect(try stored(secure, "pay-retry")?.attempts == 2, "it was retried")
        // Dead-lettered (a worker that dies on it every time), then requeued by the operator: still alice's.
        secure.stopWorker()
        try await eventually(timeout: 20, "the worker to stop") { !secure.workerIsRunning }
        #expect(try await secure.submit(as: secure.alice, ["SendPayment", "hairdresser=Alice", "amount=5", "--id", "pay-dead"]).exitCode == 0)
        func deadLetter() async throws {
            var deaths = 0
            while try stored(secure, "pay-dead")?.response?.code != FailureCode.deadLettered {
                guard deaths < 10 else {
                    Issue.record("pay-dead was never dead-lettered")
                    break
                }
                let poisoned = try await secure.startWorker(environment: ["INTENTQUEUE_FAULT": "afterReceive@pay-dead"], waiting: false)
                try await eventually(timeout: 30, "the poisoned worker to die") {
                    if !poisoned.isRunning { return true }
                    return try stored(secure, "pay-dead")?.response?.code == FailureCode.deadLettered
                }
                deaths += 1
            }
        }
        try await deadLetter()
        // Requeued, it dies again, and is requeued a second time (its dead letter now published by the operator):
        // still alice's, the first publisher carried through both requeues.
        let first = try await secure.status(as: secure.operatorUser, ["requeue", "pay-dead"])
        #expect(first.exitCode == 0, "\(first)")
        try await eventually(timeout: 30, "the requeue to be recorded") { try stored(secure, "pay-dead")?.state == .queued }
        try await deadLetter()
        try await secure.startWorker()
        let requeued = try await secure.status(as: secure.operatorUser, ["requeue", "pay-dead"])
        #expect(requeued.exitCode == 0, "\(requeued)")
        try await eventually(timeout: 30, "the requeued payment to end") { try stored(secure, "pay-dead")?.state == .success }
        let payments = try Database(path: secure.sandbox.appDatabasePath, mode: .readOnly)
            .query("SELECT intent_id, payer FROM payment ORDER BY intent_id") { [$0.string(0), $0.string(1)] }
        #expect(payments == [["pay-dead", secure.alice], ["pay-retry", secure.alice]], "paid once each, by alice")
    }
}
