import IntentKit
import Synchronization

/// The claims of the runs going on now (in ledgers without the effects), renewed while the runs last: a run past its
/// claim's lifetime (a slow resolution, a handler with no time limit) is then not taken for a dead worker's, and a
/// second delivery of its intent does not take the claim over and run beside it.
final class ClaimRenewals: Sendable {
    private struct Claim: Sendable {
        let intentID: String
        let ledger: any OutcomeLedger
        let lasting: Double
    }

    private let claims = Mutex<[Int: Claim]>([:])

    /// Notes the claim `holder` took on `intentID` in `ledger`, to keep it for `lasting` seconds from each renewal.
    func add(holder: Int, intentID: String, in ledger: any OutcomeLedger, lasting: Double) {
        claims.withLock { $0[holder] = Claim(intentID: intentID, ledger: ledger, lasting: lasting) }
    }

    /// Stops renewing the claim of `holder`: its run has ended.
    func remove(holder: Int) {
        claims.withLock { _ = $0.removeValue(forKey: holder) }
    }

    /// The claims being renewed, by holder.
    var holders: Set<Int> { claims.withLock { Set($0.keys) } }

    /// Renews every claim noted, every `interval` seconds, until canceled. A renewal that fails is tried at the next
    /// round; a claim lives `lasting` seconds (15 minutes at least), many rounds.
    func run(every interval: Double, logger: Logger) async {
        let notice = RateLimitedNotice(interval: 60)
        while true {
            do {
                try await Task.sleep(for: .seconds(max(0.01, interval)))
            } catch {
                return
            }
            for (holder, claim) in claims.withLock({ $0 }) {
                do {
                    try await claim.ledger.renewClaim(claim.intentID, holder: holder, lasting: claim.lasting)
                } catch {
                    notice.note { quiet in
                        logger.warning(
                            "a running intent's claim could not be renewed (tried again in \(Int(interval)) s)\(quiet > 0 ? ", nor \(quiet) more" : ""): \(error)",
                            metadata: ["intent.id": claim.intentID])
                    }
                }
            }
        }
    }
}
