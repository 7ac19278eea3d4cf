import Foundation
import IntentCLI

let exitCode: Int32
do {
    if let command = try BenchCommand.parse(Array(CommandLine.arguments.dropFirst())) {
        exitCode = command.run()
    } else {
        Terminal.write(BenchCommand.help)
        exitCode = ExitCode.success
    }
} catch {
    exitCode = Terminal.usageFailure(error, tool: BenchCommand.tool, usage: BenchCommand.usage)
}
exit(exitCode)
