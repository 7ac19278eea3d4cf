import Foundation
import IntentCLI

let exitCode: Int32
do {
    if let command = try SubmitCommand.parse(Array(CommandLine.arguments.dropFirst())) {
        exitCode = command.run()
    } else {
        Terminal.write(SubmitCommand.help)
        exitCode = ExitCode.success
    }
} catch {
    exitCode = Terminal.usageFailure(error, tool: SubmitCommand.tool, usage: SubmitCommand.usage)
}
exit(exitCode)
