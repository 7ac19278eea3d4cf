import Foundation
import Testing

@testable import IntentKit

/// New intent ids: version 7 UUIDs, in the order they were made.
@Suite struct IntentIDTests {
    @Test func aNewIDIsAVersion7UUIDInLowerCaseAndNeverTheSameTwice() throws {
        var seen: Set<String> = []
        for _ in 0..<10_000 {
            let id = IntentID.make()
            let uuid = try #require(UUID(uuidString: id), "\(id) is not a UUID")
            #expect(id == uuid.uuidString.lowercased())
            #expect(Array(id)[14] == "7", "version 7: \(id)")
            #expect("89ab".contains(Array(id)[19]), "RFC 9562 variant: \(id)")
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }

    @Test func anIDStartsWithItsTimeInMilliseconds() {
        // 2026-12-04T19:00:00.123Z
        let milliseconds: UInt64 = 1_796_410_800_123
        let id = IntentID.make(milliseconds: milliseconds)
        let digits = id.replacingOccurrences(of: "-", with: "").prefix(12)
        #expect(UInt64(digits, radix: 16) == milliseconds, "\(id)")

        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        let made = IntentID.make().replacingOccurrences(of: "-", with: "").prefix(12)
        let stamped = UInt64(made, radix: 16) ?? 0
        #expect(stamped >= now && stamped <= UInt64(Date().timeIntervalSince1970 * 1000), "\(made) against \(now)")
    }

    @Test func idsOfLaterMillisecondsSortAfterEarlierOnes() {
        let base: UInt64 = 1_796_410_800_000
        // Over the byte boundaries of the time: each later millisecond's id sorts after every earlier one's.
        let times = [base, base + 1, base + 255, base + 256, base + 65_535, base + 65_536, base + 1 << 32]
        let ids = times.map { IntentID.make(milliseconds: $0) }
        #expect(ids == ids.sorted())
        #expect(Set(ids.map { $0.prefix(13) }).count == times.count)
    }

    @Test func theRandomPartDiffersWithinOneMillisecond() {
        let ids = (0..<1_000).map { _ in IntentID.make(milliseconds: 1_796_410_800_000) }
        #expect(Set(ids).count == 1_000)
        #expect(Set(ids.map { $0.prefix(13) }).count == 1)
    }
}
