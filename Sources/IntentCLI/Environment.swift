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

    public static let brokerURLFileVariable = "INTENT_BROKER_URL_FILE"

    /// The broker URL: from the file named by `INTENT_BROKER_URL_FILE` (which
    /// must not be readable by group or others, since it holds the password),
    /// else from `INTENT_BROKER_URL`, else the local default. Credentials never
    /// travel on the command line.
    public static func brokerURL(_ environment: [String: String] = values) throws(UsageError) -> BrokerURL {
        var environment = environment
        if let path = environment[brokerURLFileVariable], !path.isEmpty {
            environment[BrokerURL.environmentVariable] = try readSecretFile(path, variable: brokerURLFileVariable)
        }
        do {
            return try BrokerURL.fromEnvironment(environment)
        } catch {
            throw UsageError("\(BrokerURL.environmentVariable): \(error.detail)")
        }
    }

    /// The first line of a file only its owner may read.
    static func readSecretFile(_ path: String, variable: String) throws(UsageError) -> String {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let permissions = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else {
            throw UsageError("\(variable): cannot read \(path)")
        }
        guard permissions & 0o077 == 0 else {
            throw UsageError("\(variable): \(path) is readable by others (mode \(String(permissions, radix: 8))); chmod 600 it")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw UsageError("\(variable): cannot read \(path) as UTF-8 text")
        }
        return String(text.split(whereSeparator: \.isNewline).first ?? "").trimmingCharacters(in: .whitespaces)
    }
}
