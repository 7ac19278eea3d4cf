import Foundation

/// A submitted intent as it travels on the wire: the JSON body of a message
/// published to the `intents` exchange with the intent's type as routing key.
public struct IntentEnvelope: Decodable, Sendable, Hashable {
    /// The envelope format this build writes and reads.
    public static let currentVersion = 1

    /// The envelope format it is written in; a worker reads only `currentVersion`.
    public var version: Int
    /// Chosen by the submitter; resubmitting the same id never repeats its effects.
    public var id: String
    /// The intent's `typeName`.
    public var type: String
    /// The intent's parameters, as JSON, each of the type its parameter
    /// declares (see `lenientParameters`).
    public var parameters: [String: JSONValue]
    /// Seconds since 1970 when the submitter published it.
    public var submittedAt: Double
    /// The turn of the conversation: 0 when submitted, one more with each answer.
    public var turn: Int
    /// The parameters the user answered in this turn (already merged into `parameters`).
    public var answers: [String: JSONValue]?
    /// Parameters the user confirmed, and `intent` when the whole intent was confirmed.
    public var confirmed: [String]?
    /// The conversation this intent belongs to, for deleting interactions together.
    public var group: String?
    /// Seconds since 1970 after which the intent may no longer start: a worker
    /// that takes it later decides it `failure`/`expired` without running it.
    /// An intent a worker has begun (admitted in its ledger) is never expired:
    /// its retries, redeliveries and answers run whatever the time.
    public var expiresAt: Double?
    /// Seconds since 1970 before which the intent is not to run: until then it
    /// is `scheduled`, and the recorder releases it to the workers when it is
    /// due. Only a first submission (turn 0) is scheduled.
    public var dueAt: Double?
    /// `high` goes ahead of `normal` work: it travels with routing key
    /// `<type>.high` to a queue of its own, which workers take from first.
    public var priority: IntentPriority
    /// Set when the message is not a turn to run but a request about the
    /// intent (cancel it, deny its confirmation, expire its question), which a
    /// worker decides where the intent's effects are decided.
    public var request: IntentRequest?
    /// The parameters were typed on a command line, as strings: a string may
    /// then stand for a number (`"3"`), a boolean (`"yes"`) or a list
    /// (`"Alice, Bob"`). Without it, a value of the wrong type is refused.
    public var lenientParameters: Bool

    /// An envelope with its fields as given: by default in the current format, a first submission (turn 0, with no answers,
    /// confirmations, group or request) and strict about its parameters' types.
    public init(
        version: Int = IntentEnvelope.currentVersion, id: String, type: String,
        parameters: [String: JSONValue], submittedAt: Double, turn: Int = 0,
        answers: [String: JSONValue]? = nil, confirmed: [String]? = nil, group: String? = nil,
        request: IntentRequest? = nil, lenientParameters: Bool = false, expiresAt: Double? = nil,
        dueAt: Double? = nil, priority: IntentPriority = .normal
    ) {
        self.version = version
        self.id = id
        self.type = type
        self.parameters = parameters
        self.submittedAt = submittedAt
        self.turn = turn
        self.answers = answers
        self.confirmed = confirmed
        self.group = group
        self.request = request
        self.lenientParameters = lenientParameters
        self.expiresAt = expiresAt
        self.dueAt = dueAt
        self.priority = priority
    }

    /// The routing key it is published with on `intents`: its type, or `<type>.high`.
    public var routingKey: String { priority == .high ? type + IntentPriority.highSuffix : type }

    /// A request about an intent: `cancel` (any turn), or `deny`/`expire` for
    /// the question the intent asked at turn `turn - 1`.
    public static func request(
        _ request: IntentRequest, id: String, type: String, turn: Int = 0, submittedAt: Double = Date().timeIntervalSince1970
    ) -> IntentEnvelope {
        IntentEnvelope(id: id, type: type, parameters: [:], submittedAt: submittedAt, turn: turn, request: request)
    }

    /// The next turn of a conversation, answering the question the intent
    /// asked at `turn`: its parameters with `answers` over them, and the
    /// confirmed names with `confirming` added. Its parameters may mix the
    /// submission's with answers typed on a command line (`lenient`).
    public static func answering(
        id: String, type: String, parameters: [String: JSONValue], turn: Int, answers: [String: JSONValue],
        confirmed: [String], confirming: [String] = [], group: String? = nil, lenient: Bool = false,
        submittedAt: Double = Date().timeIntervalSince1970
    ) -> IntentEnvelope {
        var merged = parameters
        for (name, value) in answers { merged[name] = value }
        let allConfirmed = Array(Set(confirmed + confirming)).sorted()
        return IntentEnvelope(
            id: id, type: type, parameters: merged, submittedAt: submittedAt, turn: turn + 1, answers: answers,
            confirmed: allConfirmed.isEmpty ? nil : allConfirmed, group: group, lenientParameters: lenient)
    }

    /// `answers` as they apply to `parameters`, given what the intent asked (`asked`, its question's resolutions):
    /// a question about elements of a list (`recipients[0]`) answered with one value, or with a list of as many
    /// values as it asked about, replaces those elements and keeps the rest (answering "Jeff Baker" to which Jeff
    /// of `["Jeff", "Alice"]`, or of "Jeff,Alice" typed on a command line, leaves Alice in). Any other answer
    /// replaces the parameter whole, as given; so does text with a comma, which a command line's list is, and an
    /// answer about every element of a list typed as text.
    public static func applying(
        _ answers: [String: JSONValue], to parameters: [String: JSONValue], asked: [ParameterResolution]
    ) -> [String: JSONValue] {
        var applied = answers
        for (name, answer) in answers {
            let indexes = asked.filter { $0.parameter == name && $0.result.needsInput }.compactMap(\.index)
            var list: [JSONValue]
            var typed = false
            switch parameters[name] {
            case .array(let elements)?: list = elements
            // A list typed on a command line ("Jeff,Alice"), read as the decoder reads it.
            case .string(let text)?:
                list = _JSONValueUnbox.splitList(text)
                typed = true
            default: continue
            }
            guard !indexes.isEmpty, indexes.allSatisfy(list.indices.contains) else { continue }
            // Typed text whose every element was asked about: the answer is the whole parameter, as given (a JSON
            // list stays a list, which a strict decode needs).
            if typed, list.count == Set(indexes).count { continue }
            let values: [JSONValue]
            switch answer {
            case .array(let given): values = given
            case .string(let text) where text.contains(","): continue
            default: values = [answer]
            }
            guard values.count == indexes.count else { continue }
            for (index, value) in zip(indexes, values) { list[index] = value }
            applied[name] = .array(list)
        }
        return applied
    }

    /// An envelope for a typed intent, with a fresh id unless one is given.
    public init<I: Intent>(_ intent: I, id: String = IntentID.make(), submittedAt: Date = Date()) throws {
        guard case .object(let parameters) = try JSONValueEncoder().encode(intent) else {
            throw IntentFailure(code: FailureCode.invalidIntent, message: "\(I.typeName) does not encode as a JSON object")
        }
        self.init(id: id, type: I.typeName, parameters: parameters, submittedAt: submittedAt.timeIntervalSince1970)
    }

    /// The UTF-8 JSON body.
    public func encoded() -> [UInt8] {
        var object: [String: JSONValue] = [
            "version": .number(Double(version)),
            "id": .string(id),
            "type": .string(type),
            "parameters": .object(parameters),
            "submittedAt": .number(submittedAt),
        ]
        if turn != 0 { object["turn"] = .number(Double(turn)) }
        if let answers { object["answers"] = .object(answers) }
        if let confirmed { object["confirmed"] = .array(confirmed.map(JSONValue.string)) }
        if let group { object["group"] = .string(group) }
        if let request { object["request"] = .string(request.rawValue) }
        if lenientParameters { object["lenientParameters"] = .bool(true) }
        if let expiresAt { object["expiresAt"] = .number(expiresAt) }
        if let dueAt { object["dueAt"] = .number(dueAt) }
        if priority != .normal { object["priority"] = .string(priority.rawValue) }
        return JSONValue.object(object).serialized()
    }

    /// The longest id, in UTF-8 bytes: it travels as AMQP's `message_id`, a short string.
    public static let maximumIDBytes = 255
    /// The longest type name: it is part of routing keys, which AMQP caps at 255 bytes.
    public static let maximumTypeLength = 100

    /// Why `id` cannot be an intent id (1 to 255 bytes of UTF-8, no control
    /// characters), or nil when it can.
    public static func problem(withID id: String) -> String? {
        if id.isEmpty { return "the id is empty" }
        if id.utf8.count > maximumIDBytes { return "the id is \(id.utf8.count) bytes long, over the limit of \(maximumIDBytes)" }
        if id.utf8.withContiguousStorageIfAvailable({ containsControl($0) }) ?? containsControl(id.utf8) {
            return "the id contains a control character"
        }
        // As a segment of a URL (the gateway's /v1/intents/<id>), "." and ".." are the path's own steps, even
        // percent-encoded: such an intent could not be named there.
        if id == "." || id == ".." { return "the id may not be '.' or '..'" }
        return nil
    }

    /// Why anyone but the scheduler is refused a submission under such an id.
    public static let scheduledRunIDProblem = "ids of the form <schedule>@<due time> are the scheduler's: submit under another id"

    /// Whether this is a submission (not a turn, nor a request about an intent) under a schedule's run id.
    public var submitsUnderScheduledRunID: Bool { turn == 0 && request == nil && Self.isScheduledRunID(id) }

    /// Whether `id` has the form the scheduler gives a schedule's runs: the schedule's name, `@`, and the due time
    /// in ISO 8601 to the millisecond (`tick@2026-12-07T09:00:00.000Z`). Only a trusted user (the scheduler, a
    /// worker's retry, the recorder's release) submits under such an id: were anyone else to take it first, the
    /// run due then would be refused, or find an outcome it did not decide.
    public static func isScheduledRunID(_ id: String) -> Bool {
        let form = "@0000-00-00T00:00:00.000Z".utf8
        let bytes = id.utf8
        // A schedule's name: 1 to 100 ASCII letters, digits, `_` or `-` (`Schedule.problem(withName:)`).
        guard bytes.count > form.count, bytes.count <= form.count + 100 else { return false }
        // Most ids are not: a UUID has a `-` where the `@` would be, and is told by that one byte.
        guard bytes[bytes.index(bytes.endIndex, offsetBy: -form.count)] == UInt8(ascii: "@") else { return false }
        let name = bytes.dropLast(form.count)
        let tail = bytes.suffix(form.count)
        let named = name.allSatisfy(isNameByte)
        return named
            && zip(tail, form).allSatisfy { byte, expected in
                expected == UInt8(ascii: "0") ? (0x30...0x39).contains(byte) : byte == expected
            }
    }

    /// Whether `bytes` (well-formed UTF-8) encode a control character (Unicode's general category Cc: U+0000–U+001F
    /// and U+007F–U+009F), told from the bytes themselves: U+0000–U+001F and U+007F are one byte each, U+0080–U+009F
    /// the two bytes 0xC2 0x80–0x9F. Asking each scalar's properties looked it up in Unicode's tables, and decoding
    /// the scalars cost more than this, on every envelope the worker and the recorder read.
    static func containsControl(_ bytes: some Sequence<UInt8>) -> Bool {
        var afterC2 = false
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F || (afterC2 && byte <= 0x9F) { return true }
            afterC2 = byte == 0xC2
        }
        return false
    }

    /// Why `type` cannot be an intent type (1 to 100 letters, digits, `_` or
    /// `-` of ASCII), or nil when it can.
    public static func problem(withType type: String) -> String? {
        if type.isEmpty { return "the type is empty" }
        if type.utf8.count > maximumTypeLength { return "the type is \(type.utf8.count) bytes long, over the limit of \(maximumTypeLength)" }
        // Over the bytes in place: walking a short (inline) string's UTF-8 view took about 47 instructions a byte.
        if !(type.utf8.withContiguousStorageIfAvailable({ $0.allSatisfy(isNameByte) }) ?? type.utf8.allSatisfy(isNameByte)) {
            return "the type '\(type.escapingControlCharacters)' is not made of ASCII letters, digits, '_' and '-'"
        }
        return nil
    }

    /// Whether `byte` may be in an intent type or a schedule's name: an ASCII letter or digit, `_` or `-`.
    static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F || byte == 0x2D
    }

    /// Reads an envelope from a message body, with an error an operator can act on.
    public static func decode(_ body: some Collection<UInt8>) throws(EnvelopeError) -> IntentEnvelope {
        // Member by member as the parser meets them, without the object's dictionary, when every key is one of an
        // envelope's, given once and plainly (what IntentQueue's clients write); anything else is read from the tree.
        if let members = body.withContiguousStorageIfAvailable({ Self.members(UnsafeRawBufferPointer($0)) }) ?? nil {
            return try read(Fields(members))
        }
        return try decodeTree(body)
    }

    /// `decode` through the body's tree: for any body the member path does not take, and the answer that path must
    /// give.
    static func decodeTree(_ body: some Collection<UInt8>) throws(EnvelopeError) -> IntentEnvelope {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes: body)
        } catch {
            throw EnvelopeError(id: nil, reason: "the body is not valid JSON: \(error)")
        }
        guard case .object(let object) = value else {
            throw EnvelopeError(id: nil, reason: "the body is not a JSON object")
        }
        return try read(Fields(object))
    }

    /// The members of the envelope in `bytes`, read as the parser meets them; nil when that path does not take
    /// them (JSON not well formed, not one object, a key that is not an envelope's, escaped or given twice).
    static func members(_ bytes: UnsafeRawBufferPointer) -> KnownMembers? {
        var members = KnownMembers(names: Field.names)
        guard (try? members.readDocument(bytes)) == true else { return nil }
        return members
    }

    /// The envelope its members hold, checked as `decode` checks them.
    private static func read(_ members: Fields) throws(EnvelopeError) -> IntentEnvelope {
        var fields = members
        let id = fields[.id]?.stringValue
        guard let id, !id.isEmpty else {
            throw EnvelopeError(id: nil, reason: "the envelope has no string 'id'")
        }
        if let problem = Self.problem(withID: id) {
            throw EnvelopeError(id: nil, reason: problem)
        }
        guard case .number(let version)? = fields[.version] else {
            throw EnvelopeError(id: id, reason: "the envelope has no numeric 'version'")
        }
        guard version == Double(currentVersion) else {
            throw EnvelopeError(
                id: id, reason: "envelope version \(JSONValue.formatNumber(version)) is not supported (this worker reads version \(currentVersion))")
        }
        guard let type = fields[.type]?.stringValue, !type.isEmpty else {
            throw EnvelopeError(id: id, reason: "the envelope has no string 'type'")
        }
        if let problem = Self.problem(withType: type) {
            throw EnvelopeError(id: id, reason: problem)
        }
        let parameters: [String: JSONValue]
        switch fields[.parameters] {
        case .object(let object)?: parameters = object
        case .null?, nil: parameters = [:]
        default: throw EnvelopeError(id: id, reason: "'parameters' is not a JSON object")
        }
        // Optional fields are optional, not loose: one of the wrong type is refused, not dropped.
        var submittedAt = 0.0
        switch fields[.submittedAt] {
        case nil, .null?: break
        case .number(let seconds)? where seconds.isFinite: submittedAt = seconds
        default: throw EnvelopeError(id: id, reason: "'submittedAt' must be a number of seconds since 1970")
        }
        var turn = 0
        switch fields[.turn] {
        case nil, .null?: break
        case .number(let number)? where number >= 0 && number < 1_000_000 && number.rounded() == number: turn = Int(number)
        default: throw EnvelopeError(id: id, reason: "'turn' must be a whole number from 0")
        }
        var answers: [String: JSONValue]?
        switch fields[.answers] {
        case nil, .null?: break
        case .object(let object)?: answers = object
        default: throw EnvelopeError(id: id, reason: "'answers' must be an object")
        }
        var confirmed: [String]?
        switch fields[.confirmed] {
        case nil, .null?: break
        case .array(let names)? where names.allSatisfy({ $0.stringValue != nil }) && names.count <= 1_000:
            confirmed = names.compactMap(\.stringValue)
        default: throw EnvelopeError(id: id, reason: "'confirmed' must be an array of parameter names")
        }
        var group: String?
        switch fields[.group] {
        case nil, .null?: break
        case .string(let name)? where !name.isEmpty && name.utf8.count <= 255: group = name
        default: throw EnvelopeError(id: id, reason: "'group' must be a string of 1 to 255 bytes")
        }
        var request: IntentRequest?
        switch fields[.request] {
        case nil, .null?:
            break
        case .string(let name)?:
            guard let known = IntentRequest(rawValue: name) else {
                throw EnvelopeError(
                    id: id, reason: "unknown request '\(name)'; requests are \(IntentRequest.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            request = known
        default:
            throw EnvelopeError(id: id, reason: "'request' must be a string")
        }
        var lenient = false
        switch fields[.lenientParameters] {
        case nil, .null?: break
        case .bool(let flag)?: lenient = flag
        default: throw EnvelopeError(id: id, reason: "'lenientParameters' must be true or false")
        }
        var expiresAt: Double?
        switch fields[.expiresAt] {
        case nil, .null?: break
        case .number(let seconds)? where seconds.isFinite: expiresAt = seconds
        default: throw EnvelopeError(id: id, reason: "'expiresAt' must be a number of seconds since 1970")
        }
        var dueAt: Double?
        switch fields[.dueAt] {
        case nil, .null?: break
        case .number(let seconds)? where seconds.isFinite: dueAt = seconds
        default: throw EnvelopeError(id: id, reason: "'dueAt' must be a number of seconds since 1970")
        }
        var priority = IntentPriority.normal
        switch fields[.priority] {
        case nil, .null?: break
        case .string(let name)?:
            guard let known = IntentPriority(rawValue: name) else { throw EnvelopeError(id: id, reason: "'priority' must be normal or high") }
            priority = known
        default: throw EnvelopeError(id: id, reason: "'priority' must be normal or high")
        }
        if request == .deny || request == .expire || request == .abandon, turn < 1 {
            throw EnvelopeError(id: id, reason: "a \(request!.rawValue) request names the turn after the question it answers (1 or more)")
        }
        return IntentEnvelope(
            id: id, type: type, parameters: parameters, submittedAt: submittedAt, turn: turn, answers: answers,
            confirmed: confirmed, group: group, request: request, lenientParameters: lenient, expiresAt: expiresAt,
            dueAt: dueAt, priority: priority)
    }

    /// An envelope's members as JSON names them, each in the place of its name in `names`.
    enum Field: Int {
        case version, id, type, parameters, submittedAt, turn, answers, confirmed, group, request, lenientParameters, expiresAt,
            dueAt, priority

        /// The members' JSON names, by raw value.
        static let names: [StaticString] = [
            "version", "id", "type", "parameters", "submittedAt", "turn", "answers", "confirmed", "group", "request",
            "lenientParameters", "expiresAt", "dueAt", "priority",
        ]
    }

    /// An envelope's members: from its object's dictionary, each name looked up once (once every member was
    /// found, the rest are known to be absent without a lookup: most envelopes carry five of the fourteen names),
    /// or as read member by member.
    private struct Fields {
        private let object: [String: JSONValue]?
        private let members: KnownMembers?
        private var found = 0

        init(_ object: [String: JSONValue]) {
            self.object = object
            members = nil
        }

        init(_ members: KnownMembers) {
            object = nil
            self.members = members
        }

        subscript(field: Field) -> JSONValue? {
            mutating get {
                if let members { return members[field.rawValue] }
                guard let object, found < object.count, let value = object[KnownMembers.key(Field.names[field.rawValue])] else { return nil }
                found += 1
                return value
            }
        }
    }
}

/// How soon an intent is taken, against the rest of the work queued.
public enum IntentPriority: String, Codable, Sendable, Hashable, CaseIterable {
    /// Taken in turn.
    case normal
    /// Taken ahead of normal work (an interactive request behind a batch).
    case high

    /// The routing key suffix of high-priority intents.
    public static let highSuffix = ".high"

    /// The intent type a routing key on `intents` stands for (without the priority suffix).
    public static func type(ofRoutingKey key: String) -> String {
        key.hasSuffix(highSuffix) ? String(key.dropLast(highSuffix.count)) : key
    }
}

/// What a request envelope asks of an intent. Each is decided by a worker, in
/// the same transaction as the intent's once-only record, so it either wins
/// (the intent ends `canceled`, `failure/denied` or `failure/expired` and its
/// effects never happen) or loses to an outcome already decided.
public enum IntentRequest: String, Codable, Sendable, Hashable, CaseIterable {
    /// Cancel the intent at whatever turn it is.
    case cancel
    /// The user refused the confirmation asked at turn `turn - 1`.
    case deny
    /// The question asked at turn `turn - 1` went unanswered too long (the recorder asks).
    case expire
    /// The answer to the question asked at turn `turn - 1` (or its confirmation, or its denial) was dead-lettered:
    /// the broker gave up delivering it (the recorder asks). The intent ends `failure/deadLettered` unless that
    /// answer was taken after all, or the intent moved on.
    case abandon
}

/// Why a message body is not a usable envelope. `id` is set when it could be read,
/// so that the failure can be recorded against the intent.
public struct EnvelopeError: Error, Sendable, CustomStringConvertible {
    /// The intent's id, when the body had a usable one.
    public var id: String?
    /// What is wrong with the body, for an operator to act on.
    public var reason: String

    /// An error about the intent `id` (nil when the body had no usable one), saying `reason`.
    public init(id: String?, reason: String) {
        self.id = id
        self.reason = reason
    }

    /// The reason.
    public var description: String { reason }
}
