import Foundation
import Testing

@testable import IntentKit

/// The fuzzer's seeds (Fuzz/corpus), and every input a fuzz run found worth
/// keeping there, through the same decoders as Fuzz/WireFuzzer.swift: each
/// ends as a value that survives a round trip, or as a thrown error.
@Suite struct FuzzCorpusTests {
    static let corpus: [URL] = {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("Package.swift").path) {
            directory.deleteLastPathComponent()
        }
        let folder = directory.appendingPathComponent("Fuzz/corpus")
        return ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }()

    @Test func theCorpusIsThere() {
        #expect(Self.corpus.count >= 10)
    }

    @Test(arguments: corpus)
    func eachCaseDecodesOrIsRefusedAndRoundTrips(_ file: URL) throws {
        let bytes = Array(try Data(contentsOf: file))
        if let envelope = try? IntentEnvelope.decode(bytes) {
            #expect(try IntentEnvelope.decode(envelope.encoded()) == envelope, "\(file.lastPathComponent)")
        }
        if let event = try? StatusEvent.decode(bytes) {
            #expect(!event.routingKey.isEmpty)
            #expect(try StatusEvent.decode(event.encoded()) == event, "\(file.lastPathComponent)")
        }
        if let value = try? JSONValue.parse(bytes) {
            #expect(try JSONValue.parse(value.serialized()) == value, "\(file.lastPathComponent)")
        }
    }
}
