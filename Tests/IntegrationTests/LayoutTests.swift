import Foundation
import Testing

/// The module boundaries of ARCHITECTURE §6, checked on the sources.
@Suite struct LayoutTests {
    static let sources = Paths.repository.appendingPathComponent("Sources")

    /// Every Swift file under Sources/, by its path from there, with its text.
    static func files() throws -> [(path: String, text: String)] {
        try FileManager.default.subpathsOfDirectory(atPath: sources.path).filter { $0.hasSuffix(".swift") }.sorted().map {
            ($0, try String(contentsOf: sources.appendingPathComponent($0), encoding: .utf8))
        }
    }

    @Test func onlyTheRecorderOpensTheStatusStoreForWriting() throws {
        let writers = try Self.files().filter { $0.text.contains("StatusStore(path:") }.map(\.path)
        #expect(writers == ["IntentWorker/StatusRecorder.swift"])
    }

    @Test func eachCLibraryHasOneImporter() throws {
        let files = try Self.files()
        let rabbit = Set(files.filter { $0.text.contains("import CRabbitMQ") }.map { $0.path.split(separator: "/")[0] })
        let sqlite = Set(files.filter { $0.text.contains("import CSQLite") }.map { $0.path.split(separator: "/")[0] })
        #expect(rabbit == ["IntentAMQP"])
        #expect(sqlite == ["IntentStore"])
    }

    @Test func theModelDoesNoIOAndTheToolsDoNotImportTheExampleApp() throws {
        let files = try Self.files()
        for file in files where file.path.hasPrefix("IntentKit/") {
            for word in ["Thread {", "Thread(", "FileHandle", "kill(", "DispatchQueue", "import IntentAMQP", "import IntentStore"] {
                #expect(!file.text.contains(word), "\(file.path) uses \(word)")
            }
        }
        for file in files where file.path.hasPrefix("intent-status/") || file.path.hasPrefix("intent-submit/") || file.path.hasPrefix("Intent") {
            #expect(!file.text.contains("import Hairdressers"), "\(file.path) imports the example app")
        }
    }

    @Test func everyToolSharesOneMain() throws {
        #expect(try Self.files().filter { $0.path.hasSuffix("/main.swift") }.isEmpty)
    }
}
