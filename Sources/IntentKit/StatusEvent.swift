import Foundation

/// A change of an intent's state, published by workers to the `intents.status`
/// exchange with routing key `<type>.<state>` and recorded by the status recorder.
public struct StatusEvent: Decodable, Sendable, Hashable {
    /// The event format this build writes.
    public static let currentVersion = 1

    /// The format the event is written in.
    public var version: Int
    /// The intent's id.
    public var id: String
    /// The intent's type name.
    public var type: String
    /// The state the intent moved to.
    public var state: IntentState
    /// Seconds since 1970 when the worker produced the event.
    public var at: Double
    /// Which delivery of the intent produced it: 1 for the first.
    public var attempt: Int
    /// The conversation turn it belongs to (absent means 0): events of an older
    /// turn never overwrite a newer one.
    public var turn: Int?
    /// For `success` and `failure`: the code and message.
    public var response: IntentResponse?
    /// For `needsInput` (and for the record on other states): each parameter's resolution.
    public var resolutions: [ParameterResolution]?
    /// For `inProgress`: how far a slow handler has come.
    public var progress: Progress?
    /// The worker that produced it (`host:pid`).
    public var worker: String?
    /// Whose intent it is: the broker-verified user of its first submission
    /// (absent when it came without one). It leads the routing key, so a
    /// producer may be let bind to its own events only.
    public var owner: String?
    /// The intent as its app shows it (the handler's `render`), a few lines
    /// for people, so that generic tools need not know the app.
    public var view: String?
    /// True when the event is not the intent's but a refusal of one message
    /// about it (an id taken by another submitter or type, an answer from
    /// someone else): `owner` is then that message's sender, and the intent
    /// itself is untouched.
    public var refused: Bool?
    /// On an outcome (`success`, `failure`, `needsInput`): seconds since 1970
    /// when the run that reached it started. A run that ends within the
    /// worker's `startedEventDelay` publishes no `inProgress` event, so the
    /// recorder takes the start time from here.
    public var startedAt: Double?
    /// On `scheduled`: seconds since 1970 when the intent is due.
    public var dueAt: Double?
    /// On `scheduled`: true when the worker that saw it keeps it in its
    /// ledger, so the workers sharing that ledger run it when it is due (with
    /// or without the broker); the recorder then releases it only if it has
    /// not ended a few seconds after its time.
    public var kept: Bool?
    /// On an outcome a turn's answer reached (a question, an outcome of its run, the denial it decided): that answer
    /// as the worker took it. Two answers to one question may both be recorded as queued; the one whose turn this is
    /// says so here, and the store shows its parameters and answer, not the other's.
    public var answered: Answered?

    /// The answer that started a turn (`turn` ≥ 1), as a run took it.
    public struct Answered: Decodable, Sendable, Hashable {
        /// What the user answered: the answer's `answers` object, or the string `denied` for a denial.
        public var answer: JSONValue
        /// The intent's parameters with the answer over them, as the run took them; absent for a denial.
        public var parameters: [String: JSONValue]?
        /// What the intent counts as confirmed at this turn (the confirmations granted before, and those of this
        /// answer that its question asked for).
        public var confirmed: [String]?

        /// The answer `answer`, with `parameters` and `confirmed` when given.
        public init(answer: JSONValue, parameters: [String: JSONValue]? = nil, confirmed: [String]? = nil) {
            self.answer = answer
            self.parameters = parameters
            self.confirmed = confirmed
        }

        /// `{"answer", "confirmed", "parameters"}`, the last two only when given.
        public var jsonValue: JSONValue {
            var fields: [String: JSONValue] = ["answer": answer]
            if let parameters { fields["parameters"] = .object(parameters) }
            if let confirmed { fields["confirmed"] = .array(confirmed.map(JSONValue.string)) }
            return .object(fields)
        }
    }

    /// How far a slow handler has come, as `context.reportProgress` reports it.
    public struct Progress: Decodable, Sendable, Hashable {
        /// The part done, from 0 to 1, when the handler knows it.
        public var fraction: Double?
        /// What the handler is doing, for people.
        public var message: String?

        /// Progress of `fraction`, saying `message`; either may be nil.
        public init(fraction: Double?, message: String?) {
            self.fraction = fraction
            self.message = message
        }

        /// `{"fraction", "message"}`, each only when known.
        public var jsonValue: JSONValue {
            var fields: [String: JSONValue] = [:]
            if let fraction { fields["fraction"] = .number(fraction) }
            if let message { fields["message"] = .string(message) }
            return .object(fields)
        }
    }

    /// An event, in `currentVersion`, of the intent `id` of `type` moving to `state` on delivery `attempt`: produced now
    /// unless `at` says when, at turn 0, not a refusal, and with the other fields only when given.
    public init(
        id: String, type: String, state: IntentState, at: Double = Date().timeIntervalSince1970,
        attempt: Int, response: IntentResponse? = nil, resolutions: [ParameterResolution]? = nil,
        progress: Progress? = nil, worker: String? = nil, turn: Int = 0, owner: String? = nil, refused: Bool = false,
        view: String? = nil, startedAt: Double? = nil, dueAt: Double? = nil, kept: Bool = false, answered: Answered? = nil
    ) {
        self.version = Self.currentVersion
        self.id = id
        self.type = type
        self.state = state
        self.at = at
        self.attempt = attempt
        self.response = response
        self.resolutions = resolutions
        self.progress = progress
        self.worker = worker
        self.turn = turn == 0 ? nil : turn
        self.owner = owner
        self.refused = refused ? true : nil
        self.view = view
        self.startedAt = startedAt
        self.dueAt = dueAt
        self.kept = kept ? true : nil
        self.answered = answered
    }

    /// The routing key on `intents.status`: `<owner>.<type>.<state>`.
    public var routingKey: String {
        var parts = (Self.routingWord(for: owner), type, state.rawValue)
        // Made at its size in one go: interpolating appended the parts one at a time, growing the string.
        let size = parts.0.utf8.count + parts.1.utf8.count + parts.2.utf8.count + 2
        return String(unsafeUninitializedCapacity: size) { buffer in
            var at = 0
            func put(_ part: inout String, dot: Bool) {
                part.withUTF8 { bytes in
                    _ = UnsafeMutableBufferPointer(rebasing: buffer[at..<at + bytes.count]).initialize(from: bytes)
                    at += bytes.count
                }
                if dot {
                    buffer[at] = UInt8(ascii: ".")
                    at += 1
                }
            }
            put(&parts.0, dot: true)
            put(&parts.1, dot: true)
            put(&parts.2, dot: false)
            return at
        }
    }

    /// An owner as one word of a routing key: `-` when there is none, and
    /// `.`, `*` and `#` (which a topic key cannot carry in a word) as `_`. A
    /// name over 100 bytes is cut, so a key never passes AMQP's 255 bytes (with
    /// a type of at most 100 and a state).
    public static func routingWord(for owner: String?) -> String {
        guard let owner, !owner.isEmpty else { return "-" }
        // Most names need neither: then the name is the word, found without breaking it into characters.
        if owner.utf8.count <= 100, !owner.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "*") || $0 == UInt8(ascii: "#") }) {
            return owner
        }
        var word = String(owner.map { $0 == "." || $0 == "*" || $0 == "#" ? "_" : $0 })
        while word.utf8.count > 100 { word.removeLast() }
        return word
    }

    /// The UTF-8 JSON body, written by hand (this is on every intent's path):
    /// the bytes `jsonValue.serialized()` gives, the shape `Decodable` reads back.
    public func encoded() -> [UInt8] {
        // The members of `jsonValue` in its sorted key order, written straight out.
        // Room for an outcome with its response and resolutions (a SendMessage's is about 600 bytes), kept under
        // glibc's per-thread cache limit (1,032 bytes with the array's header): a larger block is found by the slower
        // path, which cost about 2,000 instructions an event (`deploy/worker-cost.sh`'s profile).
        var json = JSONObjectWriter(capacity: resolutions == nil && response == nil ? 256 : 960)
        if let answered { json.value("answered", answered.jsonValue) }
        json.number("at", at)
        json.number("attempt", Double(attempt))
        if let dueAt { json.number("dueAt", dueAt) }
        json.string("id", id)
        if kept == true { json.value("kept", .bool(true)) }
        if let owner { json.string("owner", owner) }
        if let progress { json.value("progress", progress.jsonValue) }
        if refused == true { json.value("refused", .bool(true)) }
        if let resolutions { json.member("resolutions") { ParameterResolution.serialize(resolutions, into: &$0) } }
        if let response { json.member("response") { response.write(into: &$0) } }
        if let startedAt { json.number("startedAt", startedAt) }
        json.string("state", state.rawValue)
        if let turn { json.number("turn", Double(turn)) }
        json.string("type", type)
        json.number("version", Double(version))
        if let view { json.string("view", view) }
        if let worker { json.string("worker", worker) }
        return json.finish()
    }

    /// The event as JSON, each optional field only when set: what `encoded()` writes.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = [
            "version": .number(Double(version)), "id": .string(id), "type": .string(type),
            "state": .string(state.rawValue), "at": .number(at), "attempt": .number(Double(attempt)),
        ]
        if let turn { object["turn"] = .number(Double(turn)) }
        if let response { object["response"] = response.jsonValue }
        if let resolutions { object["resolutions"] = .array(resolutions.map(\.jsonValue)) }
        if let progress { object["progress"] = progress.jsonValue }
        if let worker { object["worker"] = .string(worker) }
        if let owner { object["owner"] = .string(owner) }
        if refused == true { object["refused"] = .bool(true) }
        if let view { object["view"] = .string(view) }
        if let startedAt { object["startedAt"] = .number(startedAt) }
        if let dueAt { object["dueAt"] = .number(dueAt) }
        if kept == true { object["kept"] = .bool(true) }
        if let answered { object["answered"] = answered.jsonValue }
        return .object(object)
    }

    /// Reads an event from a message body: a `JSONValueError` when it is not JSON, a `DecodingError` when it is not an event.
    public static func decode(_ body: some Collection<UInt8>) throws -> StatusEvent {
        // The recorder reads every event: its members are taken as the parser meets them, without the object's
        // dictionary. Anything that path does not take (JSON not well formed, a key escaped, unknown or given
        // twice, a field of another type) is read again through the tree, whose errors say what is wrong.
        if let event = body.withContiguousStorageIfAvailable({ readMembers(UnsafeRawBufferPointer($0)) }) ?? nil {
            return event
        }
        let value = try JSONValue.parse(bytes: body)
        if let event = read(value) { return event }
        return try JSONValueDecoder().decode(StatusEvent.self, from: value)
    }

    /// The event in `bytes` read member by member; nil when that path does not take it.
    static func readMembers(_ bytes: UnsafeRawBufferPointer) -> StatusEvent? {
        var draft = Draft()
        var seen: UInt32 = 0
        let taken =
            (try? JSONValue.forEachMember(in: bytes) { key, parser in
                guard let member = Member(key) else { return false }
                let bit = UInt32(1) << member.rawValue
                guard seen & bit == 0 else { return false }
                seen |= bit
                return try draft.read(member, from: &parser)
            }) ?? false
        return taken ? draft.event : nil
    }

    /// The event `value` holds, the fields as `Decodable` would read them; nil when a field is missing or not of its type.
    static func read(_ value: JSONValue) -> StatusEvent? {
        guard case .object(let fields) = value else { return nil }
        var draft = Draft()
        // Other members are left alone, as `Decodable` leaves them.
        for (key, field) in fields {
            guard let member = key.utf8.withContiguousStorageIfAvailable({ Member(UnsafeRawBufferPointer($0)) }) ?? nil else { continue }
            guard draft.take(member, field) else { return nil }
        }
        return draft.event
    }

    /// An event's members as JSON names them.
    enum Member: UInt32 {
        case version, id, type, state, at, attempt, turn, response, resolutions, progress, worker, owner, view, refused, startedAt, dueAt,
            kept, answered

        /// The member named by `key`'s bytes, if any.
        init?(_ key: UnsafeRawBufferPointer) {
            guard let first = key.first else { return nil }
            let candidate: Member
            switch (key.count, first) {
            case (2, UInt8(ascii: "i")): candidate = .id
            case (2, UInt8(ascii: "a")): candidate = .at
            case (4, UInt8(ascii: "t")): candidate = key[1] == UInt8(ascii: "y") ? .type : .turn
            case (4, UInt8(ascii: "v")): candidate = .view
            case (4, UInt8(ascii: "k")): candidate = .kept
            case (5, UInt8(ascii: "s")): candidate = .state
            case (5, UInt8(ascii: "o")): candidate = .owner
            case (5, UInt8(ascii: "d")): candidate = .dueAt
            case (6, UInt8(ascii: "w")): candidate = .worker
            case (7, UInt8(ascii: "v")): candidate = .version
            case (7, UInt8(ascii: "a")): candidate = .attempt
            case (7, UInt8(ascii: "r")): candidate = .refused
            case (8, UInt8(ascii: "r")): candidate = .response
            case (8, UInt8(ascii: "p")): candidate = .progress
            case (8, UInt8(ascii: "a")): candidate = .answered
            case (9, UInt8(ascii: "s")): candidate = .startedAt
            case (11, UInt8(ascii: "r")): candidate = .resolutions
            default: return nil
            }
            let name = candidate.name
            guard name.utf8CodeUnitCount == key.count, memcmp(name.utf8Start, key.baseAddress!, key.count) == 0 else { return nil }
            self = candidate
        }

        /// The member's JSON name.
        var name: StaticString {
            switch self {
            case .version: "version"
            case .id: "id"
            case .type: "type"
            case .state: "state"
            case .at: "at"
            case .attempt: "attempt"
            case .turn: "turn"
            case .response: "response"
            case .resolutions: "resolutions"
            case .progress: "progress"
            case .worker: "worker"
            case .owner: "owner"
            case .view: "view"
            case .refused: "refused"
            case .startedAt: "startedAt"
            case .dueAt: "dueAt"
            case .kept: "kept"
            case .answered: "answered"
            }
        }
    }

    /// An event being read member by member, each member as `Decodable` reads it.
    private struct Draft {
        var version: Int?
        var id: String?
        var type: String?
        var state: IntentState?
        var at: Double?
        var attempt: Int?
        /// The optional members land here.
        var optional = StatusEvent(id: "", type: "", state: .queued, at: 0, attempt: 0)

        /// The event, once every required member was taken.
        var event: StatusEvent? {
            guard let version, let id, let type, let state, let at, let attempt else { return nil }
            var event = optional
            event.version = version
            event.id = id
            event.type = type
            event.state = state
            event.at = at
            event.attempt = attempt
            return event
        }

        /// Reads `member` from the document at `parser` (a member of its object): the response and the resolutions
        /// member by member when they are an object and an array (`KnownMembers`), anything else whole, as `take`
        /// takes it; false when this path does not take it.
        mutating func read(_ member: Member, from parser: inout _JSONParser) throws -> Bool {
            switch (member, parser.nextByte) {
            case (.response, UInt8(ascii: "{")):
                var fields = KnownMembers(names: IntentResponse.Field.names)
                guard try fields.read(from: &parser, depth: 2), let response = IntentResponse.read({ fields[$0.rawValue] }) else { return false }
                optional.response = response
                return true
            case (.resolutions, UInt8(ascii: "[")):
                var fields = KnownMembers(names: ParameterResolution.Field.names)
                var read: [ParameterResolution] = []
                let taken = try parser.forEachElement(depth: 2) { parser in
                    guard try fields.read(from: &parser, depth: 3), let resolution = ParameterResolution.read({ fields[$0.rawValue] }) else {
                        return false
                    }
                    read.append(resolution)
                    return true
                }
                guard taken else { return false }
                optional.resolutions = read
                return true
            default:
                // Members of the document's object are read at depth 1, as `parseObject` reads them.
                return take(member, try parser.parseValue(depth: 1))
            }
        }

        /// Takes `value` as `member`; false when it is not of the member's type (a required one must be there; an
        /// optional one may be null, which is as absent).
        mutating func take(_ member: Member, _ value: JSONValue) -> Bool {
            switch member {
            case .version: Self.store(value.numberValue.flatMap { Int(exactly: $0) }, in: &version)
            case .id: Self.store(value.stringValue, in: &id)
            case .type: Self.store(value.stringValue, in: &type)
            case .state: Self.store(value.stringValue.flatMap(IntentState.init(rawValue:)), in: &state)
            case .at: Self.store(value.numberValue, in: &at)
            case .attempt: Self.store(value.numberValue.flatMap { Int(exactly: $0) }, in: &attempt)
            default: takeOptional(member, value)
            }
        }

        /// Stores `read` in `field`; false when there is nothing to store (the value was of another type).
        private static func store<T>(_ read: T?, in field: inout T?) -> Bool {
            guard let read else { return false }
            field = read
            return true
        }

        private mutating func takeOptional(_ member: Member, _ value: JSONValue) -> Bool {
            guard value != .null else { return true }
            func decoded<T: Decodable>(_ field: JSONValue) -> T? { try? JSONValueDecoder().decode(T.self, from: field) }
            switch member {
            case .turn: return Self.store(value.numberValue.flatMap { Int(exactly: $0) }, in: &optional.turn)
            case .response: return Self.store(IntentResponse.read(value), in: &optional.response)
            case .resolutions:
                guard case .array(let elements) = value else { return false }
                var read: [ParameterResolution] = []
                read.reserveCapacity(elements.count)
                for element in elements {
                    // One the quick reading does not take: the whole list as `Decodable` reads it.
                    guard let resolution = ParameterResolution.read(element) else { return Self.store(decoded(value), in: &optional.resolutions) }
                    read.append(resolution)
                }
                optional.resolutions = read
                return true
            case .progress: return Self.store(decoded(value), in: &optional.progress)
            case .worker: return Self.store(value.stringValue, in: &optional.worker)
            case .owner: return Self.store(value.stringValue, in: &optional.owner)
            case .view: return Self.store(value.stringValue, in: &optional.view)
            case .refused: return Self.store(value.boolValue, in: &optional.refused)
            case .startedAt: return Self.store(value.numberValue, in: &optional.startedAt)
            case .dueAt: return Self.store(value.numberValue, in: &optional.dueAt)
            case .kept: return Self.store(value.boolValue, in: &optional.kept)
            case .answered:
                // What is not read as an answer is left out, not the event with it: the outcome is what counts.
                optional.answered = decoded(value)
                return true
            case .version, .id, .type, .state, .at, .attempt: return false
            }
        }
    }
}
