/// What an intent ended with: a response code, a message for people and an
/// optional machine-readable payload. Failures use the same shape, with the
/// failure code in `code`.
public struct IntentResponse: Decodable, Sendable, Hashable {
    /// The response code a program branches on: `success`, or a failure code (one of `FailureCode`'s or the handler's own).
    public var code: String
    /// A message for people, when there is one.
    public var message: String?
    /// Machine-readable details, when the response has any.
    public var payload: JSONValue?

    /// A response with `code`, and with a message and a payload only when given.
    public init(code: String, message: String? = nil, payload: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.payload = payload
    }

    /// `{"code", "message", "payload"}`, `payload` null when there is none.
    public var jsonValue: JSONValue {
        var object: [String: JSONValue] = ["code": .string(code), "payload": payload ?? .null]
        if let message { object["message"] = .string(message) }
        return .object(object)
    }

    /// The response `value` holds, read as `Decodable` reads it (other members ignored, a null message or payload
    /// none); nil when it is not an object or a member is not of its type, for `Decodable` to say why.
    static func read(_ value: JSONValue) -> IntentResponse? {
        guard case .object(let fields) = value else { return nil }
        return read { fields[$0.key] }
    }

    /// Its JSON members, each in the place of its name in `names`.
    enum Field: Int {
        case code, message, payload

        /// The members' JSON names, by raw value.
        static let names: [StaticString] = ["code", "message", "payload"]

        /// The member's JSON name.
        var key: String { KnownMembers.key(Self.names[rawValue]) }
    }

    /// The response an object with these members holds, as `read(_:)` reads it from its tree: the recorder reads
    /// every event's response with it, member by member (`KnownMembers` with `Field.names`).
    static func read(_ field: (Field) -> JSONValue?) -> IntentResponse? {
        guard case .string(let code)? = field(.code) else { return nil }
        var response = IntentResponse(code: code)
        switch field(.message) {
        case nil, .null?: break
        case .string(let message)?: response.message = message
        default: return nil
        }
        if let payload = field(.payload), payload != .null { response.payload = payload }
        return response
    }

    /// The bytes of `jsonValue`, appended to `output` member by member in sorted key order (every outcome's event).
    func write(into output: inout [UInt8]) {
        JSONObjectWriter.write(into: &output) { json in
            json.string("code", code)
            if let message { json.string("message", message) }
            json.value("payload", payload ?? .null)
        }
    }

    /// A successful response with the conventional code `success`.
    public static func success(_ message: String? = nil, payload: JSONValue? = nil) -> IntentResponse {
        IntentResponse(code: "success", message: message, payload: payload)
    }
}

/// A typed refusal or failure: a code a program can branch on and a reason a person can read.
public struct IntentFailure: Error, Codable, Sendable, Hashable {
    /// The failure code a program branches on: one of `FailureCode`'s or the handler's own.
    public var code: String
    /// Why it failed, for a person to read.
    public var message: String
    /// Machine-readable details, when the failure has any.
    public var payload: JSONValue?

    /// A failure with `code` and `message`, and with a payload only when given.
    public init(code: String, message: String, payload: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.payload = payload
    }

    /// The response recorded for this failure.
    public var response: IntentResponse { IntentResponse(code: code, message: message, payload: payload) }
}

/// The failure codes the framework itself produces. Handlers add their own.
public enum FailureCode {
    /// A parameter resolved to `unsupported`.
    public static let unsupportedParameter = "unsupportedParameter"
    /// The submission could not be decoded into its intent type.
    public static let invalidIntent = "invalidIntent"
    /// No handler for the intent's type is registered in the worker that received it.
    public static let unknownIntentType = "unknownIntentType"
    /// A handler threw an error that is not an `IntentFailure`.
    public static let handlerError = "handlerError"
    /// The handler did not finish within its time limit.
    public static let timedOut = "timedOut"
    /// Transient failures went on past the type's `RetryPolicy`.
    public static let retriesExhausted = "retriesExhausted"
    /// The broker dead-lettered the message: it reached the delivery limit (a
    /// worker died on it every time) or could not be read at all.
    public static let deadLettered = "deadLettered"
    /// The user denied a confirmation.
    public static let denied = "denied"
    /// A question went unanswered past its time limit, or the intent was not
    /// started before its `expiresAt`.
    public static let expired = "expired"
    /// Canceled before it was handled.
    public static let canceled = "canceled"
    /// A restricted intent from a submitter not on the worker's allow-list.
    public static let failureRequiringAppAuthentication = "failureRequiringAppAuthentication"
    /// A submission under an id another submitter, or another intent type, already uses (a refusal).
    public static let idInUse = "idInUse"
    /// An answer, confirmation, denial or cancel from someone who is not the intent's owner (a refusal).
    public static let notOwner = "notOwner"
    /// An answer or request about an id no one submitted (a refusal).
    public static let unknownIntent = "unknownIntent"
    /// The outcome would not fit in a status event: too many resolutions, or too large a payload.
    public static let outcomeTooLarge = "outcomeTooLarge"
}
