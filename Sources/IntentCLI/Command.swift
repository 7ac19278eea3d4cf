import Foundation

/// A command-line tool: what `--help` prints, how its words are parsed, what
/// it does. `main()` is the one `main` every tool shares: parse, print the
/// help or the usage error, run, exit with the code.
public protocol Command: Sendable {
    static var tool: String { get }
    static var usage: String { get }
    static var help: String { get }

    /// The command the words describe; nil when they ask for `--help`.
    static func parse(_ words: [String]) throws(UsageError) -> Self?

    /// Does it; returns the exit code.
    func run() async -> Int32
}

extension Command {
    /// Runs the tool on the process's arguments and exits with its code.
    public static func main() async {
        Terminal.ignoreBrokenPipes()
        exit(await main(Array(CommandLine.arguments.dropFirst())))
    }

    /// Runs the tool on `words`; returns the exit code.
    public static func main(_ words: [String]) async -> Int32 {
        do {
            guard let command = try parse(words) else {
                Terminal.write(help)
                return ExitCode.success
            }
            return await command.run()
        } catch {
            return Terminal.usageFailure(error, tool: tool, usage: usage)
        }
    }
}
