// libFuzzer's entry point for IntentQueue's wire decoders: the intent
// envelope, the status event and the JSON parser under both. Built with the
// IntentKit sources by deploy/fuzz.sh:
//   swiftc -sanitize=fuzzer,address -parse-as-library Sources/IntentKit/*.swift Fuzz/WireFuzzer.swift
// Any input must end as a value or a thrown error: a crash, a hang (over
// libFuzzer's -timeout) or a leak (AddressSanitizer's leak check) is a bug.
// Fuzz/corpus holds the seeds; Tests/IntentKitTests/FuzzCorpusTests runs them
// through the same decoders on every test run.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let envelope = try? IntentEnvelope.decode(bytes) {
        // What decodes must encode again, and decode to the same envelope.
        precondition((try? IntentEnvelope.decode(envelope.encoded())) == envelope, "an envelope did not survive a round trip")
    }
    if let event = try? StatusEvent.decode(bytes) {
        _ = event.encoded()
        _ = event.routingKey
    }
    if let value = try? JSONValue.parse(bytes) {
        precondition((try? JSONValue.parse(value.serialized())) == value, "a JSON value did not survive a round trip")
        _ = value.jsonString.escapingControlCharacters
    }
    return 0
}
