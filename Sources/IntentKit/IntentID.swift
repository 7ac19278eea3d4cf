import Foundation

/// New intent ids: UUIDs of version 7 (RFC 9562), in lower case.
///
/// A version 7 UUID starts with the time in milliseconds, so an id made in a
/// later millisecond sorts after every earlier one (ids of the same millisecond
/// are in no particular order): every index keyed by an intent's id (its
/// owner, its outcome, an app's rows by intent, the status store's primary key)
/// takes each new id at or near its last page, instead of at a random page of a
/// table that grows to millions of rows. A commit of many intents then writes a
/// few pages rather than one per intent and index, and the pages it writes are
/// the ones already in memory. The 74 bits after the time are random, from the
/// system's generator: fewer than a version 4 UUID's 122, and still far too
/// many to guess (ids are not secrets: who may act on an intent is checked
/// against its owner). An id tells when it was made, to the millisecond,
/// wherever it appears (logs, URLs, a message's `message_id`).
public enum IntentID {
    /// A new id, made now.
    public static func make() -> String {
        make(milliseconds: UInt64(max(0, Date().timeIntervalSince1970 * 1000)))
    }

    /// A new id whose time is `milliseconds` since 1970.
    static func make(milliseconds: UInt64) -> String {
        // Two 64-bit draws: one system call each (Foundation's `UUID()` reads /dev/urandom three times).
        var generator = SystemRandomNumberGenerator()
        let first = generator.next()
        let second = generator.next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
        bytes[6] = 0x70 | UInt8(truncatingIfNeeded: first & 0x0F)
        bytes[7] = UInt8(truncatingIfNeeded: first >> 8)
        bytes[8] = 0x80 | UInt8(truncatingIfNeeded: (first >> 16) & 0x3F)
        for index in 9..<16 { bytes[index] = UInt8(truncatingIfNeeded: second >> (8 * (index - 9))) }
        return format(bytes)
    }

    /// The 16 bytes as a UUID's text: 8-4-4-4-12 lower-case hexadecimal digits.
    static func format(_ bytes: [UInt8]) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { text in
            var position = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[position] = UInt8(ascii: "-")
                    position += 1
                }
                text[position] = digits.utf8Start[Int(byte >> 4)]
                text[position + 1] = digits.utf8Start[Int(byte & 0x0F)]
                position += 2
            }
            return position
        }
    }
}
