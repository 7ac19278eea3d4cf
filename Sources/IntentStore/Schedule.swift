import Foundation
import IntentKit

/// A recurring intent: every `every` seconds from `starts`, a scheduler
/// submits a new intent of `type` with `parameters`, as `owner`'s, under the
/// id `<name>@<due time>` — so two schedulers, or one restarted, never submit
/// one due time twice (a resubmitted id never repeats its effects).
public struct Schedule: Sendable, Hashable, Decodable {
    /// Its name: 1 to 100 letters, digits, `-` and `_`, unique in the store.
    public var name: String
    /// The broker user whose intents it submits (who made it); nil: none.
    public var owner: String?
    /// The intent type it submits.
    public var type: String
    /// The parameters of each intent.
    public var parameters: [String: JSONValue]
    /// Seconds between two due times; at least 1.
    public var every: Double
    /// The first due time (seconds since 1970); the others follow every `every` seconds.
    public var starts: Double
    /// A paused schedule submits nothing until resumed (the due times meanwhile are skipped).
    public var paused: Bool
    /// When the store made it or last resumed it (seconds since 1970, the recorder's clock): no due time before
    /// then is submitted. Nil from a store older than it, and for a schedule not yet kept.
    public var activeSince: Double?

    /// A schedule; not paused unless said.
    public init(
        name: String, owner: String? = nil, type: String, parameters: [String: JSONValue], every: Double, starts: Double, paused: Bool = false,
        activeSince: Double? = nil
    ) {
        self.name = name
        self.owner = owner
        self.type = type
        self.parameters = parameters
        self.every = every
        self.starts = starts
        self.paused = paused
        self.activeSince = activeSince
    }

    /// The first due times a schedule may have, in seconds since 1970: from 1970 to about the year 5100. Counted
    /// in steps of at least a second from such a time, a due time's index stays far below 2^53, where a `Double`
    /// stops counting by ones.
    public static let startsRange: ClosedRange<Double> = 0...100_000_000_000
    /// The most a schedule's parameters take as JSON (bytes): every scheduler reads every schedule, in one answer.
    public static let maximumParametersBytes = 16 << 10
    /// The most schedules one owner keeps.
    public static let maximumPerOwner = 100
    /// The most the parameters of one owner's schedules take in all, as JSON (bytes): so that it takes dozens of
    /// owners at their bounds, not two or three, to fill what the store keeps (`maximumBytesInStore`).
    public static let maximumParametersBytesPerOwner = 64 << 10
    /// The most schedules a store keeps, of all owners: every scheduler reads them all in one answer, which may not
    /// pass `StatusQuery.maximumReplyBytes` (8 MiB). Past it, every scheduler kept the last list it could read:
    /// schedules removed or paused since went on.
    public static let maximumInStore = 10_000
    /// The most all the schedules a store keeps take, for the same reason: their names, types, owners and
    /// parameters, and `bytesPerScheduleBesides` for each.
    public static let maximumBytesInStore = 6 << 20
    /// What a schedule takes in the schedules' answer besides its name, type, owner and parameters (its keys and
    /// numbers), counted against `maximumBytesInStore`.
    public static let bytesPerScheduleBesides = 200
    /// How long before the store keeps it a schedule's first due time may be and still be its first (seconds): a
    /// client asked for the next whole second, and reached the recorder a while later, or has a clock behind it.
    /// Due times further back are not caught up on.
    public static let startAllowance = 10.0

    /// The steps between due times a new schedule may have: a second to a year (leap or not).
    public static let everyRange: ClosedRange<Double> = 1...(366 * 86_400)

    /// Whether its due times can be counted: a step of a second or more from a first due time in `startsRange`, what
    /// a store keeps.
    public var hasCountableTimes: Bool {
        every >= Self.everyRange.lowerBound && every.isFinite && Self.startsRange.contains(starts)
    }

    /// Why `name` cannot name a schedule, or nil.
    public static func problem(withName name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 100, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { return "a schedule name is 1 to 100 ASCII letters, digits, '-' and '_'" }
        return nil
    }

    /// The due times in `(after, upTo]`, earliest first (at most `limit`).
    public func dueTimes(after: Double, upTo: Double, limit: Int = 1_000) -> [Double] {
        // A schedule made through the library, not read back from a store (which keeps only what `startsRange` and
        // a second's step allow), is held to them here: past them, an index too large to count by ones never moved.
        guard hasCountableTimes, after.isFinite, upTo.isFinite, upTo >= starts else { return [] }
        var index = max(0, ((after - starts) / every).rounded(.down) + 1)
        if after < starts { index = 0 }
        var times: [Double] = []
        var last = -Double.infinity
        while times.count < limit {
            let due = starts + index * every
            guard due <= upTo, due > last else { break }
            last = due
            if due > after { times.append(due) }
            index += 1
        }
        return times
    }

    /// The id of the intent due at `due`: the schedule's name and the due time, to the millisecond.
    public func intentID(dueAt due: Double) -> String {
        "\(name)@\(Timestamp.iso8601(seconds: due))"
    }

    /// The schedule as the tools print it and a remote answer carries it.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = [
            "name": .string(name), "owner": owner.map(JSONValue.string) ?? .null, "type": .string(type), "parameters": .object(parameters),
            "every": .number(every), "starts": .number(starts), "paused": .bool(paused),
        ]
        if let activeSince { object["activeSince"] = .number(activeSince) }
        return .object(object)
    }
}
