import Foundation

/// A fresh directory for one test, removed when the value is released.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("IntentStoreTests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the directory.
    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
