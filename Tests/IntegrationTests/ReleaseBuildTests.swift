import Foundation
import Testing

/// `deploy/build-release.sh`, which the quickstart and the image's build use: the tools carry the Swift runtime and
/// the C++ runtime under it, so a tool's start loads neither from shared libraries.
@Suite(.timeLimit(.minutes(10)))
struct ReleaseBuildTests {
    /// A package of one Foundation program, built by the script as the tools are: it runs, and the dynamic loader
    /// loads no libstdc++ (nor any Swift library) for it.
    @Test func aReleaseBuildLoadsNoCxxOrSwiftSharedLibrary() async throws {
        let package = FileManager.default.temporaryDirectory.appendingPathComponent("iq-release-build-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: package) }
        let sources = package.appendingPathComponent("Sources/probe")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        try """
        // swift-tools-version:6.0
        import PackageDescription
        let package = Package(name: "probe", targets: [.executableTarget(name: "probe")])

        """.write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try """
        import Foundation
        print("started \\(ProcessInfo.processInfo.arguments.count) \\(Date().timeIntervalSince1970 > 0)")

        """.write(to: sources.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)

        let script = Paths.repository.appendingPathComponent("deploy/build-release.sh").path
        let build = try await run(script, ["--package-path", package.path], timeout: 540)
        #expect(build.exitCode == 0, "\(build)")
        let binaries = try await run(script, ["--package-path", package.path, "--show-bin-path"], timeout: 120)
        let probe = URL(fileURLWithPath: binaries.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).appendingPathComponent("probe").path

        let started = try await run(probe, ["one"])
        #expect(started.exitCode == 0 && started.stdout.contains("started 2 true"), "\(started)")
        let libraries = try await run("/usr/bin/ldd", [probe])
        #expect(libraries.exitCode == 0, "\(libraries)")
        #expect(libraries.stdout.contains("libc.so"), "\(libraries)")
        #expect(!libraries.stdout.contains("libstdc++"), "the C++ runtime is a shared library: \(libraries.stdout)")
        #expect(!libraries.stdout.contains("libswift") && !libraries.stdout.contains("libFoundation"), "\(libraries.stdout)")
    }
}
