import IntentKit
import Testing

@testable import IntentAMQP

@Suite struct FaultInjectionTests {
    @Test func faultSettingsParseAndRefuseNonsense() throws {
        let parsed = try FaultInjection.parse("afterHandle:0.5,beforeAck@poison-").get()
        #expect(parsed.isEnabled)
        #expect(try FaultInjection.parse("").get().isEnabled == false)
        #expect(throws: IntentFailure.self) { try FaultInjection.parse("sometimes").get() }
        #expect(throws: IntentFailure.self) { try FaultInjection.parse("afterHandle:2").get() }
        // A rule for another intent, or another point, does not fire (the test process survives).
        parsed.hit(.beforeAck, intentID: "healthy-1")
        try FaultInjection.parse("afterHandle:0").get().hit(.afterHandle, intentID: "x")
    }
}
