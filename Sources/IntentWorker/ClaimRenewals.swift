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
    /// The longest wait between renewals: a claim lives 15 minutes at least, through two renewals that fail.
    static let longestInterval = 300.0

    /// This process's holder numbers: a random start (so that no other process's runs share them), counted on.
    private static let firstHolder = Int.random(in: 1...(Int.max / 2))
    private static let holdersGiven = Atomic(0)

    /// A number no other run claims with: one system call for a random number per process, not one per delivery.
    static func nextHolder() -> Int {
        firstHolder &+ holdersGiven.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Notes the claim `holder` took on `intentID` in `ledger`, to keep it for `lasting` seconds from each renewal.
    func add(holder: Int, intentID: String, in ledger: any OutcomeLedger, lasting: Double) {
        claims.withLock { $0[holder] = Claim(intentID: intentID, ledger: ledger, lasting: lasting) }
    }

    /// Stops renewing the claim of `holder`: its run has ended.
    func remove(holder: Int) {
        claims.withLock { _ = $0.removeValue(forKey: holder) }
    }

    /// Renews every claim noted, every `interval` seconds (at most 5 minutes, a third of a claim's shortest life),
    /// until canceled. A renewal that fails is tried at the next round.
    func run(every interval: Double, logger: Logger) async {
        let notice = RateLimitedNotice(interval: 60)
        let interval = interval.isFinite ? max(0.01, min(interval, Self.longestInterval)) : Self.longestInterval
        while true {
            do {
                try await Task.sleep(for: .seconds(interval))
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
