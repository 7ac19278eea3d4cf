import Foundation

// The harness of deploy/json-cost.sh. The worker's real envelopes: what intent-submit and the benchmark publish.
let bodies: [[UInt8]] = (0..<1000).map { index in
    IntentEnvelope(
        id: "bench-\(index)-8c6f2a4e-1b3d", type: "SendMessage",
        parameters: ["recipients": ["Alice Smith"], "content": .string("message number \(index) for the salon")],
        submittedAt: 1796005520.94 + Double(index)).encoded()
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
        case "serialization":
            let object = try! JSONSerialization.jsonObject(with: Data(body)) as! [String: Any]
            checksum &+= (object["id"] as! String).utf8.count
        default: fatalError()
        }
    }
}
print(mode, checksum)

