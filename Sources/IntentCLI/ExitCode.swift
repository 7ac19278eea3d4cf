import IntentClient

/// Exit codes shared by `intent-submit --wait` and `intent-status`.
public enum ExitCode {
    /// The intent ended `success` (or the command did what it was asked).
    public static let success: Int32 = 0
    /// The intent ended `failure` or `canceled`.
    public static let failed: Int32 = 1
    /// The broker refused the submission: no worker serves its type.
    public static let refused: Int32 = 2
    /// Not terminal yet (including `needsInput`), or the wait timed out.
    public static let notTerminal: Int32 = 3
    /// The store has never seen this id.
    public static let unknown: Int32 = 4
    /// The command line is wrong (sysexits EX_USAGE).
    public static let usage: Int32 = 64
    /// The broker or the status store cannot be reached (EX_UNAVAILABLE).
    public static let unavailable: Int32 = 69
    /// An internal error (EX_SOFTWARE).
    public static let software: Int32 = 70
    /// An output file cannot be created (EX_CANTCREAT): the metrics file.
    public static let cannotCreate: Int32 = 73
    /// Not this user's to do (EX_NOPERM): another owner's intent, or a grant the broker refused.
    public static let forbidden: Int32 = 77
}

extension ExitCode {
    /// The exit code for a client call that failed this way.
    public static func of(_ error: IntentClientError) -> Int32 {
        switch error.kind {
        case .unknownIntent: unknown
        case .notWaiting, .noWorker: refused
        case .notYours, .forbidden: forbidden
        case .invalid, .configuration: usage
        case .timeout, .unavailable: unavailable
        }
    }
}
