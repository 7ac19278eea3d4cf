import Foundation
import Testing

@testable import IntentCLI

/// `Terminal.timestamp` writes what Foundation's ISO 8601 style writes, without its calendar machinery.
@Suite struct TimestampTests {
    @Test(arguments: [
        0, 1.9996, 1_796_005_520.8819, 1_796_005_520.9999, -1.5, 1e9 + 0.0005, 1_733_000_000.123456, 951_782_400.25, 4_102_444_799.999,
        213_834_550.315,
    ])
    func matchesFoundationsISO8601Style(seconds: Double) {
        let foundation = Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date(timeIntervalSince1970: seconds))
        #expect(Terminal.timestamp(seconds: seconds) == foundation)
    }

    @Test func matchesFoundationOnRandomTimes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let seconds = Double.random(in: 0..<4_102_444_800, using: &generator)
            let foundation = Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(Date(timeIntervalSince1970: seconds))
            #expect(Terminal.timestamp(seconds: seconds) == foundation, "\(seconds)")
        }
    }

    @Test func aValueOutOfRangeIsWrittenAsANumber() {
        #expect(Terminal.timestamp(seconds: .infinity) == "inf")
        #expect(Terminal.timestamp(seconds: .nan) == "nan")
    }
}
