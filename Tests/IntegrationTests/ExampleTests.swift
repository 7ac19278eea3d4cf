import Foundation
import IntentStore
import Testing

/// The README's "Write your own intent" example builds as its own package,
/// depending on IntentQueue by path, and handles its intent end to end.
@Suite(.timeLimit(.minutes(10)))
struct ExampleTests {
    static let package = Paths.repository.appendingPathComponent("Examples/TodoWorker")

    @Test func theTodoWorkerExampleBuildsAndHandlesItsIntent() async throws {
        let build = try await run("/usr/bin/env", ["swift", "build", "--package-path", Self.package.path], timeout: 540)
        try #require(build.exitCode == 0, "\(build)")
        let binPath = try await run("/usr/bin/env", ["swift", "build", "--package-path", Self.package.path, "--show-bin-path"], timeout: 120)
        let executable = binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "/TodoWorker"

        let sandbox = try await Sandbox("example")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--recorder-only"], expectedConnections: 1)
        let todoDatabase = sandbox.directory.appendingPathComponent("todo.sqlite").path
        let example = try WorkerProcess(
            arguments: [], environment: sandbox.environment.merging(["TODO_DB": todoDatabase]) { _, new in new },
            executable: executable, logPath: sandbox.directory.appendingPathComponent("todo.log").path)
        try await example.waitForConnections(1)

        let added = try await sandbox.submit(["AddTodo", "title=Buy milk", "dueInDays=2", "--wait", "--json"])
        #expect(added.exitCode == 0, "\(added)\n\(example.log)")
        #expect(added.stdout.contains("Added “Buy milk”"))
        let tooLate = try await sandbox.submit(["AddTodo", "title=Someday", "dueInDays=900", "--wait", "--json"])
        #expect(tooLate.exitCode == 1, "\(tooLate)")
        #expect(tooLate.stdout.contains("unsupportedParameter"))

        let rows = try Database(path: todoDatabase, mode: .readOnly)
            .queryFirst("SELECT count(*) FROM todo WHERE title = 'Buy milk'") { $0.int(0) }
        #expect(rows == 1)
        #expect(try await example.stop() == 0)
    }
}
