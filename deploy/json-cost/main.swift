import Foundation

// The harness of deploy/json-cost.sh. The worker's real envelopes: what intent-submit and the benchmark publish.
let bodies: [[UInt8]] = (0..<1000).map { index in
    IntentEnvelope(
        id: "bench-\(index)-8c6f2a4e-1b3d", type: "SendMessage",
        parameters: ["recipients": ["Alice Smith"], "content": .string("message number \(index) for the salon")],
        submittedAt: 1796005520.94 + Double(index)).encoded()
}

/// Their outcomes as a worker publishes them and the recorder reads them: a SendMessage's `success`, with its
/// response, its resolutions and the app's view.
let events: [[UInt8]] = (0..<1000).map { index in
    StatusEvent(
        id: "bench-\(index)-8c6f2a4e-1b3d", type: "SendMessage", state: .success, at: 1796005521.02 + Double(index), attempt: 1,
        response: IntentResponse(code: "success", message: "sent to Alice Smith", payload: ["messageID": .number(Double(index))]),
        resolutions: [
            ParameterResolution("recipients", index: 0, .success(.string("Alice Smith"))),
            ParameterResolution("content", .success(.string("message number \(index) for the salon"))),
            ParameterResolution("groupName", .notRequired),
        ],
        worker: "worker-1", owner: "bench", view: "To Alice Smith: message number \(index) for the salon",
        startedAt: 1796005521.01 + Double(index)
    ).encoded()
}

struct SendMessage: Codable { var recipients: [String]?; var content: String?; var groupName: String? }
/// The intent as a handler declares it now: @Parameter properties.
struct TypedSendMessage: Intent {
    static let typeName = "SendMessage"
    @Parameter("Who?") var recipients: [String]?
    @Parameter("What?") var content: String
    @Parameter("Which group?") var groupName: String?
}
struct WireEnvelope: Decodable {
    var version: Int; var id: String; var type: String; var submittedAt: Double?
    var parameters: SendMessage
}


let mode = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "hand"
let rounds = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2])! : 10
var checksum = 0
var nextEvent = 0
for _ in 0..<rounds {
    for body in bodies {
        switch mode {
        case "hand":
            // What the worker does: parse, read the envelope, decode the typed intent.
            let envelope = try! IntentEnvelope.decode(body)
            let intent = try! JSONValueDecoder().decode(SendMessage.self, from: .object(envelope.parameters))
            checksum &+= intent.content!.utf8.count + envelope.id.utf8.count
        case "typed":
            let envelope = try! IntentEnvelope.decode(body)
            let (said, _) = try! ParameterReading.decode(TypedSendMessage.self, from: envelope.parameters, lenient: false)
            checksum &+= said.$content.spokenValue!.utf8.count + envelope.id.utf8.count
        case "foundation":
            let envelope = try! JSONDecoder().decode(WireEnvelope.self, from: Data(body))
            checksum &+= envelope.parameters.content!.utf8.count + envelope.id.utf8.count
        case "parse":
            let value = try! JSONValue.parse(body)
            checksum &+= value["id"]!.stringValue!.utf8.count
        case "event":
            // What the recorder does with each outcome: parse it and read the event.
            let event = try! StatusEvent.decode(events[nextEvent])
            nextEvent = (nextEvent + 1) % events.count
            checksum &+= event.id.utf8.count
        case "envelope":
            // The envelope alone: its members read, the parameters kept as their tree.
            let envelope = try! IntentEnvelope.decode(body)
            checksum &+= envelope.id.utf8.count
        case "ledger":
            // What the recorder does with each submission's copy: read the envelope, write its parameters for the store.
            let envelope = try! IntentEnvelope.decode(body)
            checksum &+= envelope.id.utf8.count + JSONValue.object(envelope.parameters).jsonString.utf8.count
        case "serialization":
            let object = try! JSONSerialization.jsonObject(with: Data(body)) as! [String: Any]
            checksum &+= (object["id"] as! String).utf8.count
        default: fatalError()
        }
    }
}
print(mode, checksum)

