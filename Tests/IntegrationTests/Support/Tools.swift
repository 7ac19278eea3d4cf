import Foundation
import Synchronization
import Testing

/// Where the repository and the built executables are.
enum Paths {
    static let repository: URL = {
        var url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
            url.deleteLastPathComponent()
        }
        return url
    }()

    /// The folder holding `intent-worker` and friends: beside the test bundle.
    static let binaries: URL = {
        if let override = ProcessInfo.processInfo.environment["INTENTQUEUE_BIN_DIR"] {
            return URL(fileURLWithPath: override)
        }
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent(),
            repository.appendingPathComponent(".build/debug"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("intent-worker").path) }
            ?? candidates[1]
    }()

    static func tool(_ name: String) -> String {
        binaries.appendingPathComponent(name).path
    }

    static let brokerScript = repository.appendingPathComponent("deploy/broker.sh").path
}

/// What a finished command printed and returned.
struct ToolResult: CustomStringConvertible {
    var exitCode: Int32
    var stdout: String
    var stderr: String
    var seconds: Double

    var description: String { "exit \(exitCode) after \(String(format: "%.2f", seconds)) s\nstdout: \(stdout)\nstderr: \(stderr)" }
}

struct ToolTimeout: Error, CustomStringConvertible {
    var command: String
    var description: String { "\(command) did not finish in time" }
}

/// Runs a command to completion (killing it at `timeout`) and captures its output.
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 60) async throws -> ToolResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iq-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let out = directory.appendingPathComponent("out")
    let err = directory.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: out.path, contents: nil)
    _ = FileManager.default.createFile(atPath: err.path, contents: nil)
    let outHandle = try FileHandle(forWritingTo: out)
    let errHandle = try FileHandle(forWritingTo: err)
    process.standardOutput = outHandle
    process.standardError = errHandle
    process.standardInput = FileHandle.nullDevice
    let started = Date()
    try process.run()
    let deadline = started.addingTimeInterval(timeout)
    while process.isRunning {
        if Date() > deadline {
            process.terminate()
            try? await Task.sleep(for: .milliseconds(200))
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            throw ToolTimeout(command: ([executable] + arguments).joined(separator: " "))
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    try outHandle.close()
    try errHandle.close()
    return ToolResult(
        exitCode: process.terminationStatus,
        stdout: (try? String(contentsOf: out, encoding: .utf8)) ?? "",
        stderr: (try? String(contentsOf: err, encoding: .utf8)) ?? "",
        seconds: Date().timeIntervalSince(started))
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Double, _ what: String, _ condition: () async throws -> Bool) async throws {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        if try await condition() { return }
        if Date() > deadline {
            Issue.record("timed out after \(timeout) s waiting for \(what)")
            throw ToolTimeout(command: what)
        }
        try await Task.sleep(for: .milliseconds(25))
    }
}

/// A one-time signal from a test to a thread it started (a producer that must not run ahead of a fault, say):
/// `wait` returns as soon as `open` is called, or after `timeout` seconds.
final class Latch: Sendable {
    private let opened = DispatchSemaphore(value: 0)
    private let isOpen = Atomic<Bool>(false)

    func open() {
        guard !isOpen.exchange(true, ordering: .acquiringAndReleasing) else { return }
        opened.signal()
    }

    /// Whether it was opened within `timeout`; every waiter after the first finds it open.
    @discardableResult
    func wait(timeout: Double) -> Bool {
        guard opened.wait(timeout: .now() + timeout) == .success else { return false }
        opened.signal()  // for the next waiter
        return true
    }
}
