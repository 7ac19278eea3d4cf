/// Where an intent stands. The raw values are the wire names.
public enum IntentState: String, Codable, Sendable, CaseIterable {
    /// The broker confirmed the submission.
    case queued
    /// Submitted to run at a later time (its `dueAt`): the recorder releases it
    /// to the workers when it is due; until then it may be canceled.
    case scheduled
    /// A worker is on it; repeated as progress for slow handlers.
    case inProgress
    /// Resolution stopped: a parameter needs a value, a choice or a confirmation.
    case needsInput
    /// Someone asked to cancel it; a worker has not decided yet. It ends
    /// `canceled`, or with the outcome the intent already had when the cancel
    /// came too late.
    case cancelRequested
    /// Handled.
    case success
    /// Refused or failed, with a typed code.
    case failure
    /// Canceled before it was handled.
    case canceled

    /// A terminal state is final: nothing moves an intent out of it.
    public var isTerminal: Bool {
        switch self {
        case .success, .failure, .canceled: true
        case .queued, .scheduled, .inProgress, .needsInput, .cancelRequested: false
        }
    }

    /// The order states move in within one turn of the conversation. An event
    /// whose rank is lower than the stored one is stale and never applied.
    /// `cancelRequested` is moved only by a terminal event, or by the question a
    /// run it came too late for asks.
    public var rank: Int {
        switch self {
        case .queued, .scheduled: 0
        case .inProgress: 1
        case .needsInput, .cancelRequested: 2
        case .success, .failure, .canceled: 3
        }
    }
}
