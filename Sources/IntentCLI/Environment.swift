import Foundation
import IntentAMQP

/// Where the tools find the broker and the status store.
public enum Environment {
    public static let statusStoreVariable = "INTENT_STATUS_DB"

    public static var values: [String: String] { ProcessInfo.processInfo.environment }

    /// `INTENT_STATUS_DB`, or `~/.local/state/intentqueue/status.sqlite`.
    public static func statusStorePath(_ environment: [String: String] = values) -> String {
        if let path = environment[statusStoreVariable], !path.isEmpty { return path }
        return stateDirectory(environment) + "/status.sqlite"
    }

    /// `$XDG_STATE_HOME/intentqueue`, or `~/.local/state/intentqueue`.
    public static func stateDirectory(_ environment: [String: String] = values) -> String {
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state + "/intentqueue" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/state/intentqueue"
    }

    /// The broker URL from `INTENT_BROKER_URL`, or the local default.
    public static func brokerURL(_ environment: [String: String] = values) throws(UsageError) -> BrokerURL {
        do {
            return try BrokerURL.fromEnvironment(environment)
        } catch {
            throw UsageError("\(BrokerURL.environmentVariable): \(error.detail)")
        }
    }
}
