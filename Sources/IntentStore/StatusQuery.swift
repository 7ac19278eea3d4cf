import Foundation
import IntentKit

/// A question about the status store that a client without the database file
/// asks the recorder (over RabbitMQ's direct reply-to), and the answer.
///
/// Request: `{"query":"show","id":"…"}` (with `"refusedSince":t`, a submission's: see `submission`), `{"query":"list","state":…,"type":…,"limit":…}`,
/// `{"query":"dead","limit":…}`, `{"query":"tally"}`, `{"query":"deleteFinished","ids":[…]|"group":"…"|"all":true}` (the
/// finished intents chosen; `"query":"delete"` with `"unfinished":true` removes unfinished ones too, and without it,
/// as older clients send it, is `deleteFinished`), or
/// `{"query":"dedupe","type":…,"key":…,"id":…,"seconds":…}`, `{"query":"schedules"}`,
/// `{"query":"schedule","schedule":{…}}`, `{"query":"pause"|"resume"|"unschedule","name":…}`.
/// Answer: `{"status":{…}|null}`, `{"statuses":[…]}`, `{"tally":[{"type","state","count"}…]}`, `{"deleted":n}` (with
/// `"kept":m`, the unfinished intents chosen and kept, when there were any),
/// `{"dedupe":{"id":…,"first":…}}`, `{"schedules":[…]}`, or
/// `{"error":"…"}`. Statuses are `IntentStatus` in the JSON `intent-status
/// --json` prints, so a remote read decodes to the same value.
///
/// `delete` and `dedupe` write: the recorder, the store's only writer, removes
/// the interactions (an operator's anywhere, anyone else's only their own),
/// and keeps each owner's deduplication keys.
public enum StatusQuery: Sendable, Hashable {
    /// One intent's status, by id.
    case show(id: String)
    /// One intent's status as the answer to a submission made at `since` (seconds since 1970, the client's clock):
    /// this reader's refusal of a message about the id, when one was recorded then or later (a second's margin
    /// for the clocks), else what `show` answers (a recorder that does not know `refusedSince` answers `show`).
    case submission(id: String, since: Double)
    /// The most recently updated intents, at most `limit`, optionally of one state and/or type.
    case list(state: IntentState?, type: String?, limit: Int)
    /// Intents the broker dead-lettered, newest first, at most `limit`: for operators.
    case dead(limit: Int)
    /// Removes stored interactions: these ids, or a group's, or (ids and group nil) all; of finished intents only,
    /// unless `unfinished` (see `StatusStore.delete(ids:group:owner:unfinished:)`).
    case delete(ids: [String]?, group: String?, unfinished: Bool)
    /// How many intents there are of each type in each state (the reader's own, unless an operator). A count of a
    /// large store that took the recorder over 50 ms may be up to 2 s old (`StatusRecorder.SlowAnswers`); one
    /// intent's status is never.
    case tally
    /// The intent a deduplication key of the reader's stands for: `id`, when no
    /// submission of `type` used `key` within the last `seconds`, else that one's.
    case dedupe(type: String, key: String, id: String, seconds: Double)

    /// The reader's schedules (everyone's, for an operator or a trusted scheduler).
    case schedules
    /// Adds (or replaces) a schedule of the reader's.
    case schedule(Schedule)
    /// Pauses (`paused`) or resumes a schedule; `remove` removes it instead.
    case changeSchedule(name: String, paused: Bool, remove: Bool)

    /// The longest window a deduplication key may hold: 30 days.
    public static let maximumDedupeSeconds = 30.0 * 86_400

    /// One line of a tally: how many intents of `type` are in `state`.
    public struct Tally: Sendable, Hashable, Decodable {
        /// The intent type.
        public var type: String
        /// The state they are in.
        public var state: IntentState
        /// How many.
        public var count: Int

        /// A line saying `count` intents of `type` are in `state`.
        public init(type: String, state: IntentState, count: Int) {
            self.type = type
            self.state = state
            self.count = count
        }
    }

    /// What the recorder answers a query with.
    public enum Answer: Sendable, Hashable {
        /// For `show`: the status, or nil when the id is unknown (to this reader).
        case status(IntentStatus?)
        /// For `list` and `dead`: the statuses, most recently updated first.
        case statuses([IntentStatus])
        /// For `delete`: how many intents were removed, and how many unfinished ones were kept.
        case deleted(StatusStore.Deletion)
        /// For `tally`: the counts by type and state.
        case tally([Tally])
        /// For `dedupe`: the intent's id, and whether this submission is the first with the key in its window.
        case deduplicated(id: String, first: Bool)
        /// For the schedule queries: the schedules (after the change).
        case schedules([Schedule])
    }

    /// The most ids one delete may name.
    public static let maximumDeletedIDs = 10_000

    /// The largest `limit` a request may ask for: an answer travels as one
    /// message, which the broker caps (16 MiB in deploy/rabbitmq.conf).
    public static let maximumLimit = 10_000

    /// The largest answer the recorder sends; a larger one is refused with an error.
    public static let maximumReplyBytes = 8 << 20

    /// Whether answering may cost the recorder real time (many rows read, counted or deleted): a list, the dead
    /// letters, a tally, a delete. The recorder holds each user's costly queries to a share of its time.
    public var isCostly: Bool {
        switch self {
        case .list, .dead, .tally, .delete: true
        default: false
        }
    }

    /// The request body: UTF-8 JSON, as `decode(_:)` reads it.
    public var encoded: [UInt8] {
        var object: [String: JSONValue]
        switch self {
        case .show(let id):
            object = ["query": "show", "id": .string(id)]
        case .submission(let id, let since):
            object = ["query": "show", "id": .string(id), "refusedSince": .number(since)]
        case .list(let state, let type, let limit):
            object = ["query": "list", "limit": .number(Double(limit))]
            if let state { object["state"] = .string(state.rawValue) }
            if let type { object["type"] = .string(type) }
        case .dead(let limit):
            object = ["query": "dead", "limit": .number(Double(limit))]
        case .tally:
            object = ["query": "tally"]
        case .delete(let ids, let group, let unfinished):
            // Finished intents only under a name of its own: a recorder from before unfinished intents were kept knows
            // only `delete`, and would take a `delete` (whatever else it says) to remove unfinished intents too. Under
            // this name it refuses the request instead, and nothing is deleted (`IntentClient.delete`).
            object = ["query": unfinished ? "delete" : .string(Self.deleteFinished)]
            if let ids { object["ids"] = .array(ids.map(JSONValue.string)) }
            if let group { object["group"] = .string(group) }
            if ids == nil, group == nil { object["all"] = true }
            if unfinished { object["unfinished"] = true }
        case .dedupe(let type, let key, let id, let seconds):
            object = ["query": "dedupe", "type": .string(type), "key": .string(key), "id": .string(id), "seconds": .number(seconds)]
        case .schedules:
            object = ["query": "schedules"]
        case .schedule(let schedule):
            object = ["query": "schedule", "schedule": schedule.jsonValue]
        case .changeSchedule(let name, let paused, let remove):
            object = ["query": .string(remove ? "unschedule" : paused ? "pause" : "resume"), "name": .string(name)]
        }
        return JSONValue.object(object).serialized()
    }

    /// The recorder refused the request itself as not valid (a schedule out of bounds, too many ids): the
    /// requester's to mend, not a recorder that cannot answer.
    public struct Refused: Error, CustomStringConvertible {
        /// What the recorder said is wrong with it.
        public var description: String
        /// An error saying `description`.
        public init(description: String) { self.description = description }
    }

    /// A request, or a recorder's answer, that cannot be read.
    public struct Invalid: Error, CustomStringConvertible {
        /// What is wrong with it, for the user to read.
        public var description: String
        /// An error saying `description`.
        public init(description: String) { self.description = description }
    }

    /// The query of a delete that keeps unfinished intents (`delete` with `unfinished` removes them too).
    public static let deleteFinished = "deleteFinished"

    /// Reads a request body; throws `Invalid` with the reason when it is malformed. A missing `limit` means 50.
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
            guard let since = object["refusedSince"], since != .null else { return .show(id: id) }
            guard let seconds = since.numberValue, seconds.isFinite else { throw Invalid(description: "refusedSince must be a number of seconds") }
            return .submission(id: id, since: seconds)
        case "list":
            var state: IntentState?
            if let text = try string("state") {
                guard let parsed = IntentState(rawValue: text) else { throw Invalid(description: "unknown state '\(text)'") }
                state = parsed
            }
            return .list(state: state, type: try string("type"), limit: try limit())
        case "dead":
            return .dead(limit: try limit())
        case "tally":
            return .tally
        case "delete", deleteFinished:
            let group = try string("group")
            var ids: [String]?
            if let value = object["ids"], value != .null {
                guard let list = value.arrayValue, list.count <= maximumDeletedIDs,
                    let names = Optional(list.compactMap(\.stringValue)), names.count == list.count, !names.isEmpty
                else {
                    throw Invalid(description: "ids must be a list of 1 to \(maximumDeletedIDs) strings")
                }
                ids = names
            }
            let all = object["all"]?.boolValue == true
            guard [ids != nil, group != nil, all].filter({ $0 }).count == 1 else {
                throw Invalid(description: "\(object["query"]?.stringValue ?? "delete") takes ids, a group, or all (one of them)")
            }
            // Without the field (a client before it), finished intents only: an unfinished one is kept.
            guard object["unfinished"].map({ $0 == .null || $0.boolValue != nil }) ?? true else {
                throw Invalid(description: "unfinished must be true or false")
            }
            let unfinished = object["unfinished"]?.boolValue == true
            if unfinished, object["query"]?.stringValue == deleteFinished {
                throw Invalid(description: "\(deleteFinished) keeps unfinished intents: delete with unfinished removes them")
            }
            return .delete(ids: ids, group: group, unfinished: unfinished)
        case "dedupe":
            guard let type = try string("type"), IntentEnvelope.problem(withType: type) == nil else {
                throw Invalid(description: "dedupe needs an intent type")
            }
            guard let key = try string("key"), !key.isEmpty, key.utf8.count <= 255 else {
                throw Invalid(description: "a deduplication key is 1 to 255 bytes")
            }
            guard let id = try string("id"), IntentEnvelope.problem(withID: id) == nil else { throw Invalid(description: "dedupe needs a usable id") }
            guard let seconds = object["seconds"]?.numberValue, seconds > 0, seconds <= maximumDedupeSeconds else {
                throw Invalid(description: "a deduplication window is more than 0 and at most \(Int(maximumDedupeSeconds)) seconds")
            }
            return .dedupe(type: type, key: key, id: id, seconds: seconds)
        case "schedules":
            return .schedules
        case "schedule":
            guard let fields = object["schedule"]?.objectValue, let name = fields["name"]?.stringValue, Schedule.problem(withName: name) == nil,
                let type = fields["type"]?.stringValue, IntentEnvelope.problem(withType: type) == nil,
                let parameters = fields["parameters"]?.objectValue, let every = fields["every"]?.numberValue, Schedule.everyRange.contains(every),
                let starts = fields["starts"]?.numberValue, Schedule.startsRange.contains(starts)
            else {
                throw Invalid(
                    description:
                        "a schedule needs a name (1 to 100 letters, digits, '-', '_'), a type, parameters, every (1 s to a year) and starts (seconds since 1970, at most 10^11)"
                )
            }
            return .schedule(Schedule(name: name, type: type, parameters: parameters, every: every, starts: starts))
        case "pause", "resume", "unschedule":
            guard let name = try string("name"), Schedule.problem(withName: name) == nil else { throw Invalid(description: "which schedule?") }
            return .changeSchedule(name: name, paused: object["query"]?.stringValue == "pause", remove: object["query"]?.stringValue == "unschedule")
        case let other:
            throw Invalid(
                description:
                    "unknown query '\(other ?? "")'; queries are show, list, dead, tally, delete, \(deleteFinished), dedupe, schedules, schedule, pause, resume, unschedule"
            )
        }
    }

    /// Who asks, as the broker verified it.
    public struct Reader: Sendable, Hashable {
        /// The broker-verified user asking (the request's `user_id`); nil for a local reader.
        public var user: String?
        /// An operator reads every intent, lists dead letters and may delete every interaction.
        public var isOperator: Bool

        /// A reader as the recorder verified it.
        public init(user: String?, isOperator: Bool) {
            self.user = user
            self.isOperator = isOperator
        }

        /// Reads everything: the store's own file, on the recorder's machine.
        public static let local = Reader(user: nil, isOperator: true)

        /// Whether this reader may see an intent of `owner`'s (nil: it came without one).
        public func mayRead(_ owner: String?) -> Bool { isOperator || owner == nil || owner == user }
    }

    /// The reader may not ask this; a remote answer says so with `"forbidden": true`.
    public struct Forbidden: Error, CustomStringConvertible {
        /// Why the reader may not ask it.
        public var description: String

        /// A refusal saying `description`.
        public init(description: String) {
            self.description = description
        }
    }

    /// Reads the answer from the store, as `reader` may see it: an intent of
    /// another owner reads as unknown (or as this reader's own refused
    /// message about it), a list holds the reader's own intents, and dead
    /// letters are for operators.
    /// A delete needs the `writer` (the recorder's store); without one it is refused.
    public func answer(from store: StatusReader, writer: StatusStore? = nil, for reader: Reader = .local) throws -> Answer {
        switch self {
        case .show(let id):
            guard let status = try store.status(id: id) else { return .status(try store.refusal(id: id, owner: reader.user)) }
            return .status(reader.mayRead(status.owner) ? status : try store.refusal(id: id, owner: reader.user))
        case .submission(let id, let since):
            // `since` is the client's clock, the refusal's time the recorder's: a second's margin between them, as
            // cancels allow (an earlier refusal within it answers too, and says only what it says).
            if let refusal = try store.refusal(id: id, owner: reader.user), refusal.updatedAt >= since - 1 { return .status(refusal) }
            return try StatusQuery.show(id: id).answer(from: store, writer: writer, for: reader)
        case .list(let state, let type, let limit):
            let owner = reader.isOperator ? nil : reader.user ?? ""
            // For the recorder (it answers with its writer), no more than a reply may carry: the reader is told to ask
            // for fewer rather than the recorder run out of memory. A local read has no reply to fit.
            return .statuses(try store.list(state: state, type: type, owner: owner, limit: limit, maxBytes: replyBytes(writer)))
        case .dead(let limit):
            guard reader.isOperator else { throw Forbidden(description: "dead letters are listed for operators only") }
            return .statuses(try store.deadLettered(limit: limit, maxBytes: replyBytes(writer)))
        case .tally:
            return .tally(try store.tally(owner: reader.isOperator ? nil : reader.user ?? ""))
        case .delete(let ids, let group, let unfinished):
            if ids == nil, group == nil, !reader.isOperator {
                throw Forbidden(description: "deleting every interaction is for operators only")
            }
            guard let writer else { throw Forbidden(description: "only the recorder deletes from the status store: ask it over the broker") }
            // Anyone else's delete reaches only their own intents.
            return .deleted(
                try writer.delete(ids: ids, group: group, owner: reader.isOperator ? nil : reader.user ?? "", unfinished: unfinished))
        case .dedupe(let type, let key, let id, let seconds):
            guard let writer else { throw Forbidden(description: "only the recorder keeps deduplication keys: ask it over the broker") }
            // Keys are each owner's own (an operator's too): no one learns another's intents through them.
            let standing = try writer.deduplicate(owner: reader.user ?? "", type: type, key: key, id: id, seconds: seconds)
            return .deduplicated(id: standing.id, first: standing.first)
        case .schedules:
            return .schedules(try store.schedules(owner: reader.isOperator ? nil : reader.user ?? ""))
        case .schedule(var schedule):
            guard let writer else { throw Forbidden(description: "only the recorder keeps schedules: ask it over the broker") }
            // A schedule runs as its owner: one asked for without a verified user would run as no one's, and its
            // intents could be claimed and acted on by anyone.
            guard let owner = reader.user else {
                throw Forbidden(description: "a schedule needs an owner: ask with your user_id, as the tools do")
            }
            schedule.owner = owner
            guard try writer.addSchedule(schedule) else { throw Forbidden(description: "the schedule \(schedule.name) is another owner's") }
            return .schedules(try store.schedules(owner: reader.isOperator ? nil : reader.user ?? "").filter { $0.name == schedule.name })
        case .changeSchedule(let name, let paused, let remove):
            guard let writer else { throw Forbidden(description: "only the recorder changes schedules: ask it over the broker") }
            let owner = reader.isOperator ? nil : reader.user ?? ""
            let changed = remove ? try writer.removeSchedule(name, owner: owner) : try writer.setSchedule(name, paused: paused, owner: owner)
            guard changed else { throw Forbidden(description: "no schedule \(name) of yours") }
            return .schedules(try store.schedules(owner: owner).filter { $0.name == name })
        }
    }

    /// The most a list may take: a reply's limit when the recorder answers (with its `writer`), none for a local read.
    private func replyBytes(_ writer: StatusStore?) -> Int { writer == nil ? .max : Self.maximumReplyBytes }

    /// The reply body for an answer, or for a failure to answer.
    public static func reply(_ result: Result<Answer, any Error>) -> [UInt8] {
        switch result {
        case .success(.status(let status)):
            guard let status else { return Array(#"{"status":null}"#.utf8) }
            return sized(Array(#"{"status":"#.utf8) + IntentStatus.jsonEncoded(status) + Array("}".utf8))
        case .success(.statuses(let statuses)):
            return sized(Array(#"{"statuses":"#.utf8) + IntentStatus.jsonEncoded(statuses) + Array("}".utf8))
        case .success(.tally(let lines)):
            return JSONValue.object([
                "tally": .array(
                    lines.map { .object(["type": .string($0.type), "state": .string($0.state.rawValue), "count": .number(Double($0.count))]) })
            ]).serialized()
        case .success(.deleted(let deletion)):
            return deletion.jsonValue.serialized()
        case .success(.schedules(let schedules)):
            return sized(JSONValue.object(["schedules": .array(schedules.map(\.jsonValue))]).serialized())
        case .success(.deduplicated(let id, let first)):
            return JSONValue.object(["dedupe": ["id": .string(id), "first": .bool(first)]]).serialized()
        case .failure(let error as Forbidden):
            return JSONValue.object(["error": .string(error.description), "forbidden": true]).serialized()
        case .failure(let error as Invalid):
            return JSONValue.object(["error": .string(error.description), "invalid": true]).serialized()
        case .failure(let error):
            return JSONValue.object(["error": .string("\(error)")]).serialized()
        }
    }

    private static func sized(_ reply: [UInt8]) -> [UInt8] {
        guard reply.count > maximumReplyBytes else { return reply }
        // Refused as asked for (a usage error), as when the reader's estimate caught it first: asking again would not help.
        return JSONValue.object([
            "error": .string(
                "the answer is \(reply.count / 1_048_576) MiB, over the \(maximumReplyBytes / 1_048_576) MiB a remote answer may be; ask for fewer intents with --limit, or read the store locally"
            ),
            "invalid": true,
        ]).serialized()
    }

    /// What the recorder answered, or why it could not.
    /// Throws `Forbidden` when the recorder refused the reader, `Invalid` otherwise.
    public static func decodeReply(_ bytes: [UInt8]) throws -> Answer {
        struct Deduplicated: Decodable {
            var id: String
            var first: Bool
        }
        struct Reply: Decodable {
            var status: IntentStatus?
            var statuses: [IntentStatus]?
            var deleted: Int?
            var kept: Int?
            var tally: [Tally]?
            var dedupe: Deduplicated?
            var schedules: [Schedule]?
            var error: String?
            var forbidden: Bool?
            var invalid: Bool?
        }
        let reply: Reply
        do {
            reply = try JSONValueDecoder().decode(Reply.self, from: try JSONValue.parse(bytes))
        } catch {
            throw Invalid(description: "the recorder's answer could not be read: \(error)")
        }
        if let error = reply.error {
            if reply.forbidden == true { throw Forbidden(description: error) }
            if reply.invalid == true { throw Refused(description: error) }
            throw Invalid(description: "the recorder could not answer: \(error)")
        }
        if let statuses = reply.statuses { return .statuses(statuses) }
        if let deleted = reply.deleted { return .deleted(StatusStore.Deletion(deleted: deleted, keptUnfinished: reply.kept ?? 0)) }
        if let tally = reply.tally { return .tally(tally) }
        if let dedupe = reply.dedupe { return .deduplicated(id: dedupe.id, first: dedupe.first) }
        if let schedules = reply.schedules { return .schedules(schedules) }
        return .status(reply.status)
    }
}
