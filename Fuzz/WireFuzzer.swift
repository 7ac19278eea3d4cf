// libFuzzer's entry point for IntentQueue's wire decoders: the intent
// envelope, the status event and the JSON parser under both. Built with the
// IntentKit sources by deploy/fuzz.sh:
//   swiftc -sanitize=fuzzer,address -parse-as-library Sources/IntentKit/*.swift Fuzz/WireFuzzer.swift
// Any input must end as a value or a thrown error: a crash, a hang (over
// libFuzzer's -timeout) or a leak (AddressSanitizer's leak check) is a bug; so
// is an envelope or a status event the member-by-member reading takes and the
// tree reads otherwise.
// Fuzz/corpus holds the seeds; Tests/IntentKitTests/FuzzCorpusTests runs them
// through the same decoders on every test run.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let envelope = try? IntentEnvelope.decode(bytes) {
        // What decodes must encode again, and decode to the same envelope.
        precondition((try? IntentEnvelope.decode(envelope.encoded())) == envelope, "an envelope did not survive a round trip")
    }
    if bytes.withUnsafeBytes({ IntentEnvelope.members($0) }) != nil {
        // An envelope read member by member must be what the tree reads, or fail as it fails.
        // (Compared as values, and errors as text: a dictionary's description has no fixed order.)
        func answer(_ decode: () throws -> IntentEnvelope) -> Result<IntentEnvelope, EnvelopeError> {
            do { return .success(try decode()) } catch { return .failure(error as! EnvelopeError) }
        }
        let members = answer { try IntentEnvelope.decode(bytes) }
        let tree = answer { try IntentEnvelope.decodeTree(bytes) }
        switch (members, tree) {
        case (.success(let read), .success(let expected)): precondition(read == expected, "an envelope read member by member is not the tree's")
        case (.failure(let read), .failure(let expected)): precondition(read.description == expected.description, "an envelope's error differs")
        default: preconditionFailure("an envelope read member by member is not the tree's")
        }
    }
    if let event = try? StatusEvent.decode(bytes) {
        _ = event.encoded()
        _ = event.routingKey
    }
    if let members = bytes.withUnsafeBytes({ StatusEvent.readMembers($0) }) {
        // What the recorder's member-by-member reading takes must be what the tree reads (parse, read, `Decodable`).
        let tree = (try? JSONValue.parse(bytes)).flatMap { value in
            StatusEvent.read(value) ?? (try? JSONValueDecoder().decode(StatusEvent.self, from: value))
        }
        precondition(members == tree, "an event read member by member is not the tree's")
    }
    if let value = try? JSONValue.parse(bytes) {
        precondition((try? JSONValue.parse(value.serialized())) == value, "a JSON value did not survive a round trip")
        _ = value.jsonString.escapingControlCharacters
    }
    return 0
}
