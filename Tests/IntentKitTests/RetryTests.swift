import Testing

@testable import IntentKit

@Suite struct RetryTests {
    @Test func delaysDoubleUpToTheMaximumAndJitterShortensThem() {
        let policy = RetryPolicy(maxRetries: 5, initialDelay: 1, maxDelay: 10)
        #expect(policy.delay(beforeRetry: 0, jitter: 1) == 1)
        #expect(policy.delay(beforeRetry: 1, jitter: 1) == 2)
        #expect(policy.delay(beforeRetry: 3, jitter: 1) == 8)
        #expect(policy.delay(beforeRetry: 4, jitter: 1) == 10)
        #expect(policy.delay(beforeRetry: 60, jitter: 1) == 10)
        #expect(policy.delay(beforeRetry: 2, jitter: 0.5) == 2)
        for _ in 0..<100 {
            let delay = policy.delay(beforeRetry: 2)
            #expect(delay >= 2 && delay <= 4)
        }
    }

    @Test func aTransientFailureAsksForARetryAndOthersFail() async throws {
        struct Flaky: Intent {
            static let typeName = "Flaky"
            @Parameter var transient: Bool
        }
        struct FlakyHandler: IntentHandler {
            func handle(_ intent: Flaky, context: IntentContext) async throws -> IntentResponse {
                if intent.transient { throw TransientFailure("the line is busy") }
                throw IntentFailure(code: "broken", message: "no")
            }
            var retryPolicy: RetryPolicy { RetryPolicy(maxRetries: 2) }
        }
        var registry = IntentRegistry()
        try registry.register(FlakyHandler())
        #expect(registry.retryPolicy(for: "Flaky").maxRetries == 2)
        #expect(registry.retryPolicy(for: "Other") == .standard)
        let context = IntentContext(intentID: "x", intentType: "Flaky")
        let transient = await IntentPipeline.run(
            IntentEnvelope(id: "x", type: "Flaky", parameters: ["transient": true], submittedAt: 0), registry: registry, context: context)
        #expect(transient.retryReason == "the line is busy")
        #expect(transient.state == .inProgress)
        let permanent = await IntentPipeline.run(
            IntentEnvelope(id: "x", type: "Flaky", parameters: ["transient": false], submittedAt: 0), registry: registry, context: context)
        #expect(permanent.retryReason == nil)
        #expect(permanent.response?.code == "broken")
    }
}
