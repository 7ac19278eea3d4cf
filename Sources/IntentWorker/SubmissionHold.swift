import IntentStore

/// The submissions the status recorder holds back for a moment before it writes them
/// (`StatusRecorder.Configuration.submissionHold`), so that an intent whose outcome comes soon is written once: its
/// `queued` row and its outcome in one transaction, instead of a transaction for each. At a moderate load every
/// delivery to the recorder comes alone, and this halves its transactions.
///
/// A held submission is not written and not acked: deliveries are acked only up to the one before the oldest held
/// (`writtenThrough`), so one held when the recorder dies is delivered again and written then.
struct SubmissionHold {
    /// A delivery the recorder has read, as the update it makes.
    struct Read {
        var update: StatusStore.Update
        /// The delivery's tag on the recorder's connection.
        var tag: UInt64
        /// The tag of the ledger delivery read before it (0: none): what may be acked while it is held. Not `tag - 1`,
        /// which may be a status request's (the channel numbers those too, unacked), and acking that is a channel error.
        var previous: UInt64
        /// A dead letter, whose outcome the recorder announces itself once it is written.
        var decided = false
    }

    private struct Held {
        var read: Read
        /// When it is written whatever follows (seconds since 1970).
        var until: Double
    }

    /// Held in the order they were read: in tag order, and in order of `until`.
    private var held: [Held] = []

    /// How many submissions are held.
    var count: Int { held.count }

    /// When the oldest held submission is due to be written; nil when none is held.
    var nextRelease: Double? { held.first?.until }

    /// The last ledger delivery's tag, up to `lastTag`, that holds nothing back: the one before the oldest held.
    func writtenThrough(_ lastTag: UInt64) -> UInt64 {
        held.first.map { min(lastTag, $0.read.previous) } ?? lastTag
    }

    /// What to write now, in order: every held submission that is due at `now`, or about an intent that `reads`
    /// (the deliveries read since the last write) is about too, or, with `all`, every one; then `reads`, less the
    /// submissions of it held back from now on for `hold` seconds: a plain submission (not a scheduled intent) that
    /// nothing after it in the write is about, while fewer than `limit` are held. Keeps the updates of each intent in
    /// the order they were read.
    mutating func take(_ reads: [Read], now: Double, hold: Double, limit: Int, all: Bool = false) -> [Read] {
        var writing: [Read] = []
        if !held.isEmpty {
            let about = Set(reads.map(\.update.intentID))
            var kept: [Held] = []
            for entry in held {
                if all || entry.until <= now || about.contains(entry.read.update.intentID) {
                    writing.append(entry.read)
                } else {
                    kept.append(entry)
                }
            }
            held = kept
        }
        guard hold > 0, !all, held.count < limit else { return writing + reads }
        // From the last read back: a submission is held when nothing after it is about its intent. (None held before
        // is about an intent of `reads`: those went out above.)
        var later: Set<String> = []
        var holding: [Read] = []
        var kept: [Read] = []
        for read in reads.reversed() {
            let id = read.update.intentID
            if case .queued(let envelope, _) = read.update, envelope.dueAt == nil, !later.contains(id),
                held.count + holding.count < limit
            {
                holding.append(read)
            } else {
                kept.append(read)
            }
            later.insert(id)
        }
        held += holding.reversed().map { Held(read: $0, until: now + hold) }
        return writing + kept.reversed()
    }
}
