import IntentKit

/// What the status store knows about one intent.
public struct IntentStatus: Decodable, Sendable, Hashable {
    /// The intent id its submitter chose.
    public var id: String
    /// The intent type (`SendMessage`, `OrderSoup`).
    public var type: String
    /// Where the intent stands; it never moves backwards.
    public var state: IntentState
    /// Whether `state` is final: `success`, `failure` or `canceled`.
    public var terminal: Bool
    /// The code and message of a `success` or `failure`.
    public var response: IntentResponse?
    /// Each parameter's resolution: for `needsInput`, what the user must answer.
    public var resolutions: [ParameterResolution]?
    /// For `inProgress`: how far a slow handler has come, as its latest event said.
    public var progress: StatusEvent.Progress?
    /// The submitted parameters, when the submission itself was recorded.
    public var parameters: JSONValue?
    /// How many deliveries of the intent a worker started.
    public var attempts: Int
    /// The worker of the latest event (`host:pid`).
    public var worker: String?
    /// Seconds since 1970.
    public var submittedAt: Double?
    /// When the recorder recorded the accepted submission.
    public var queuedAt: Double?
    /// When a worker first reported it `inProgress`, by the worker's clock.
    public var startedAt: Double?
    /// When the recorder last changed the status.
    public var updatedAt: Double
    /// When the recorder recorded its terminal state; nil until then.
    public var finishedAt: Double?
    /// The conversation turn: 0 until the first answer.
    public var turn: Int?
    /// The conversation (interaction group) it belongs to.
    public var group: String?
    /// Parameters confirmed so far (and `intent` for the whole intent).
    public var confirmed: [String]?
    /// Turn by turn: what was asked, with which options, and what was answered.
    public var history: [Turn]?
    /// The broker-verified user of its first submission, which alone (with
    /// operators) may answer, cancel or read it remotely; nil when it came without one.
    public var owner: String?
    /// The intent as its app shows it (see `StatusEvent.view`).
    public var view: String?
    /// For a scheduled intent: when it is due (seconds since 1970).
    public var dueAt: Double?

    /// One question of the conversation and its answer.
    public struct Turn: Decodable, Sendable, Hashable {
        /// The turn the question was asked at: 0 for the first.
        public var turn: Int
        /// What was asked: each parameter's resolution, with its options.
        public var question: [ParameterResolution]
        /// When the recorder recorded the question.
        public var askedAt: Double?
        /// What was answered (the answered parameters, or `"denied"` for a denial); nil while unanswered.
        public var answer: JSONValue?
        /// When the recorder recorded the answer.
        public var answeredAt: Double?

        /// A turn as the store keeps it.
        public init(turn: Int, question: [ParameterResolution], askedAt: Double?, answer: JSONValue?, answeredAt: Double?) {
            self.turn = turn
            self.question = question
            self.askedAt = askedAt
            self.answer = answer
            self.answeredAt = answeredAt
        }

        /// The turn as `intent-status --json` prints it: every key, `null` when there is nothing to say.
        public var jsonValue: JSONValue {
            .object([
                "turn": .number(Double(turn)), "question": .array(question.map(\.jsonValue)), "askedAt": askedAt.map(JSONValue.number) ?? .null,
                "answer": answer ?? .null, "answeredAt": answeredAt.map(JSONValue.number) ?? .null,
            ])
        }
    }

    /// A status with every field; `terminal` defaults to what `state` says.
    public init(
        id: String, type: String, state: IntentState, terminal: Bool? = nil, response: IntentResponse? = nil,
        resolutions: [ParameterResolution]? = nil, progress: StatusEvent.Progress? = nil, parameters: JSONValue? = nil,
        attempts: Int = 0, worker: String? = nil, submittedAt: Double? = nil, queuedAt: Double? = nil,
        startedAt: Double? = nil, updatedAt: Double, finishedAt: Double? = nil, turn: Int? = nil, group: String? = nil,
        confirmed: [String]? = nil, history: [Turn]? = nil, owner: String? = nil, view: String? = nil,
        dueAt: Double? = nil
    ) {
        self.id = id
        self.type = type
        self.state = state
        self.terminal = terminal ?? state.isTerminal
        self.response = response
        self.resolutions = resolutions
        self.progress = progress
        self.parameters = parameters
        self.attempts = attempts
        self.worker = worker
        self.submittedAt = submittedAt
        self.queuedAt = queuedAt
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.finishedAt = finishedAt
        self.turn = turn
        self.group = group
        self.confirmed = confirmed
        self.history = history
        self.owner = owner
        self.view = view
        self.dueAt = dueAt
    }
}

extension IntentStatus {
    /// The JSON `intent-status --json` prints and a remote read carries:
    /// every key, `null` when there is nothing to say.
    public var jsonValue: JSONValue {
        func number(_ value: Double?) -> JSONValue { value.map(JSONValue.number) ?? .null }
        func string(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return .object([
            "id": .string(id), "type": .string(type), "state": .string(state.rawValue), "terminal": .bool(terminal),
            "response": response?.jsonValue ?? .null, "resolutions": resolutions.map { .array($0.map(\.jsonValue)) } ?? .null,
            "progress": progress?.jsonValue ?? .null, "parameters": parameters ?? .null, "attempts": .number(Double(attempts)),
            "worker": string(worker), "submittedAt": number(submittedAt), "queuedAt": number(queuedAt),
            "startedAt": number(startedAt), "updatedAt": .number(updatedAt), "finishedAt": number(finishedAt),
            "turn": turn.map { .number(Double($0)) } ?? .null, "group": string(group),
            "confirmed": confirmed.map { .array($0.map(JSONValue.string)) } ?? .null,
            "history": history.map { .array($0.map(\.jsonValue)) } ?? .null, "owner": string(owner), "view": string(view),
            "dueAt": number(dueAt),
        ])
    }

    /// The UTF-8 JSON of one status (keys sorted).
    public static func jsonEncoded(_ status: IntentStatus) -> [UInt8] {
        status.jsonValue.serialized()
    }

    /// The UTF-8 JSON of a list of statuses.
    public static func jsonEncoded(_ statuses: [IntentStatus]) -> [UInt8] {
        JSONValue.array(statuses.map(\.jsonValue)).serialized()
    }
}
