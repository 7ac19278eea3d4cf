import Foundation
import IntentStore
import Testing

/// The README's examples, each built from its own package that depends on
/// IntentQueue by path: the TodoWorker serves its intent end to end against
/// the real broker, and the Reminders handler passes its own unit tests on
/// the shipped test double.
@Suite(.timeLimit(.minutes(10)), .serialized)
struct ExampleTests {
    static let todo = Paths.repository.appendingPathComponent("Examples/TodoWorker")
    static let reminders = Paths.repository.appendingPathComponent("Examples/Reminders")

    @Test func theTodoWorkerExampleBuildsAndHandlesItsIntentAskingForTheList() async throws {
        let build = try await run("/usr/bin/env", ["swift", "build", "--package-path", Self.todo.path], timeout: 540)
        try #require(build.exitCode == 0, "\(build)")
        let binPath = try await run("/usr/bin/env", ["swift", "build", "--package-path", Self.todo.path, "--show-bin-path"], timeout: 120)
        let executable = binPath.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + "/TodoWorker"

        let sandbox = try await Sandbox("example")
        defer { Task { await sandbox.tearDown() } }
        try await sandbox.startWorker(["--recorder-only"], expectedConnections: 1)
        let todoDatabase = sandbox.directory.appendingPathComponent("todo.sqlite").path
        let example = try WorkerProcess(
            arguments: [], environment: sandbox.environment.merging(["TODO_DB": todoDatabase]) { _, new in new },
            executable: executable, logPath: sandbox.directory.appendingPathComponent("todo.log").path)
        try await example.waitForConnections(1)

        // "shop" is looked up among the lists: only Shopping contains it.
        let added = try await sandbox.submit(["AddTodo", "title=Buy milk", "list=shop", "dueInDays=2", "--wait", "--json"])
        #expect(added.exitCode == 0, "\(added)\n\(example.log)")
        #expect(added.stdout.contains("Added “Buy milk” to Shopping"))
        // No list: the worker asks, in the parameter's words, and the answer completes it.
        let asked = try await sandbox.submit(["AddTodo", "title=Call Bob", "--id", "todo-ask", "--wait", "--json"])
        #expect(asked.exitCode == 3, "\(asked)")
        #expect(asked.stdout.contains("Which list?"), "\(asked.stdout)")
        let answered = try await sandbox.submit(["--answer", "todo-ask", "list=Work", "--wait", "--json"])
        #expect(answered.exitCode == 0, "\(answered)")
        #expect(answered.stdout.contains("to Work"))
        let tooLate = try await sandbox.submit(["AddTodo", "title=Someday", "list=Work", "dueInDays=900", "--wait", "--json"])
        #expect(tooLate.exitCode == 1, "\(tooLate)")
        #expect(tooLate.stdout.contains("unsupportedParameter"))

        let rows = try Database(path: todoDatabase, mode: .readOnly).query("SELECT title, list FROM todo ORDER BY title") {
            "\($0.string(0)) on \($0.string(1))"
        }
        #expect(rows == ["Buy milk on Shopping", "Call Bob on Work"])
        #expect(try await example.stop() == 0)
    }

    @Test func theExampleWorkerIsAtMostTwentyFiveLinesOnOneProduct() throws {
        let sources = try FileManager.default.subpathsOfDirectory(atPath: Self.todo.appendingPathComponent("Sources").path)
            .filter { $0.hasSuffix(".swift") }
        let lines = try sources.map {
            try String(contentsOf: Self.todo.appendingPathComponent("Sources/\($0)"), encoding: .utf8).split(
                separator: "\n", omittingEmptySubsequences: false
            ).count - 1
        }.reduce(0, +)
        #expect(lines <= 25, "the TodoWorker example has \(lines) lines")
        let manifest = try String(contentsOf: Self.todo.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.components(separatedBy: ".product(").count - 1 <= 2)
    }

    @Test func theRemindersExampleTestsItsHandlerWithTheTestDouble() async throws {
        let tested = try await run("/usr/bin/env", ["swift", "test", "--package-path", Self.reminders.path], timeout: 540)
        #expect(tested.exitCode == 0, "\(tested)")
        #expect(tested.stdout.contains("3 tests") && tested.stdout.contains("passed"), "\(tested.stdout.suffix(2000))")
    }
}
