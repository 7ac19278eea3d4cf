import Foundation
import IntentKit

/// A question about the status store that a client without the database file
/// asks the recorder (over RabbitMQ's direct reply-to), and the answer.
///
/// Request: `{"query":"show","id":"…"}`, `{"query":"list","state":…,"type":…,"limit":…}`
/// or `{"query":"dead","limit":…}`. Answer: `{"status":{…}|null}`,
/// `{"statuses":[…]}`, or `{"error":"…"}`. Statuses are `IntentStatus` in
/// the JSON `intent-status --json` prints, so a remote read decodes to the same value.
public enum StatusQuery: Sendable, Hashable {
    case show(id: String)
    case list(state: IntentState?, type: String?, limit: Int)
    case dead(limit: Int)

    public enum Answer: Sendable, Hashable {
        case status(IntentStatus?)
        case statuses([IntentStatus])
    }

    /// The largest `limit` a request may ask for: an answer travels as one
    /// message, which the broker caps (16 MiB in deploy/rabbitmq.conf).
    public static let maximumLimit = 10_000

    /// The largest answer the recorder sends; a larger one is refused with an error.
    public static let maximumReplyBytes = 8 << 20

    public var encoded: [UInt8] {
        var object: [String: JSONValue]
        switch self {
        case .show(let id):
            object = ["query": "show", "id": .string(id)]
        case .list(let state, let type, let limit):
            object = ["query": "list", "limit": .number(Double(limit))]
            if let state { object["state"] = .string(state.rawValue) }
            if let type { object["type"] = .string(type) }
        case .dead(let limit):
            object = ["query": "dead", "limit": .number(Double(limit))]
        }
        return JSONValue.object(object).serialized()
    }

    public struct Invalid: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    public static func decode(_ bytes: [UInt8]) throws(Invalid) -> StatusQuery {
        guard let object = (try? JSONValue.parse(bytes))?.objectValue else { throw Invalid(description: "the request is not a JSON object") }
        func string(_ key: String) throws(Invalid) -> String? {
            guard let value = object[key], value != .null else { return nil }
            guard let text = value.stringValue else { throw Invalid(description: "\(key) must be a string") }
            return text
        }
        func limit() throws(Invalid) -> Int {
            guard let value = object["limit"], value != .null else { return 50 }
            guard let number = value.numberValue, number >= 1, number <= Double(maximumLimit), number == number.rounded() else {
                throw Invalid(description: "limit must be a whole number from 1 to \(maximumLimit)")
            }
            return Int(number)
        }
        switch try string("query") {
        case "show":
            guard let id = try string("id"), !id.isEmpty else { throw Invalid(description: "show needs an id") }
            return .show(id: id)
        case "list":
            var state: IntentState?
            if let text = try string("state") {
                guard let parsed = IntentState(rawValue: text) else { throw Invalid(description: "unknown state '\(text)'") }
                state = parsed
            }
            return .list(state: state, type: try string("type"), limit: try limit())
        case "dead":
            return .dead(limit: try limit())
        case let other:
            throw Invalid(description: "unknown query '\(other ?? "")'; queries are show, list, dead")
        }
    }

    /// Who asks, as the broker verified it.
    public struct Reader: Sendable, Hashable {
        public var user: String?
        public var isOperator: Bool

        public init(user: String?, isOperator: Bool) {
            self.user = user
            self.isOperator = isOperator
        }

        /// Reads everything: the store's own file, on the recorder's machine.
        public static let local = Reader(user: nil, isOperator: true)

        /// Whether this reader may see an intent of `owner`'s (nil: it came without one).
        public func mayRead(_ owner: String?) -> Bool { isOperator || owner == nil || owner == user }
    }

    public struct Forbidden: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads the answer from the store, as `reader` may see it: an intent of
    /// another owner reads as unknown (or as this reader's own refused
    /// message about it), a list holds the reader's own intents, and dead
    /// letters are for operators.
    public func answer(from store: StatusStore, for reader: Reader = .local) throws -> Answer {
        switch self {
        case .show(let id):
            guard let status = try store.status(id: id) else { return .status(try store.refusal(id: id, owner: reader.user)) }
            return .status(reader.mayRead(status.owner) ? status : try store.refusal(id: id, owner: reader.user))
        case .list(let state, let type, let limit):
            let owner = reader.isOperator ? nil : reader.user ?? ""
            return .statuses(try store.list(state: state, type: type, owner: owner, limit: limit))
        case .dead(let limit):
            guard reader.isOperator else { throw Forbidden(description: "dead letters are listed for operators only") }
            return .statuses(try store.deadLettered(limit: limit))
        }
    }

    /// The reply body for an answer, or for a failure to answer.
    public static func reply(_ result: Result<Answer, any Error>) -> [UInt8] {
        switch result {
        case .success(.status(let status)):
            guard let status else { return Array(#"{"status":null}"#.utf8) }
            return sized(Array(#"{"status":"#.utf8) + IntentStatus.jsonEncoded(status) + Array("}".utf8))
        case .success(.statuses(let statuses)):
            return sized(Array(#"{"statuses":"#.utf8) + IntentStatus.jsonEncoded(statuses) + Array("}".utf8))
        case .failure(let error):
            return JSONValue.object(["error": .string("\(error)")]).serialized()
        }
    }

    private static func sized(_ reply: [UInt8]) -> [UInt8] {
        guard reply.count > maximumReplyBytes else { return reply }
        return JSONValue.object(["error": .string(
            "the answer is \(reply.count / 1_048_576) MiB, over the \(maximumReplyBytes / 1_048_576) MiB a remote answer may be; ask for fewer intents with --limit, or read the store locally")]).serialized()
    }

    /// What the recorder answered, or why it could not.
    public static func decodeReply(_ bytes: [UInt8]) throws(Invalid) -> Answer {
        struct Reply: Decodable {
            var status: IntentStatus?
            var statuses: [IntentStatus]?
            var error: String?
        }
        let reply: Reply
        do {
            let decoder = JSONDecoder()
            // The counterpart of `jsonEncoded`'s strategy.
            decoder.nonConformingFloatDecodingStrategy = .convertFromString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
            reply = try decoder.decode(Reply.self, from: Data(bytes))
        } catch {
            throw Invalid(description: "the recorder's answer could not be read: \(error)")
        }
        if let error = reply.error { throw Invalid(description: "the recorder could not answer: \(error)") }
        if let statuses = reply.statuses { return .statuses(statuses) }
        return .status(reply.status)
    }
}

extension IntentStatus {
    /// The JSON of `--json`: sorted keys, slashes unescaped, one encoder for local and remote reads.
    public static func jsonEncoded<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "Infinity", negativeInfinity: "-Infinity", nan: "NaN")
        return (try? encoder.encode(value)).map { Array($0) } ?? Array("{}".utf8)
    }
}
