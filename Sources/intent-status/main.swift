import Foundation
import IntentCLI

let exitCode: Int32
do {
    if let command = try StatusCommand.parse(Array(CommandLine.arguments.dropFirst())) {
        exitCode = command.run()
    } else {
        Terminal.write(StatusCommand.help)
        exitCode = ExitCode.success
    }
} catch {
    exitCode = Terminal.usageFailure(error, tool: StatusCommand.tool, usage: StatusCommand.usage)
}
exit(exitCode)
