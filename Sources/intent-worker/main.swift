import Foundation
import IntentCLI

let exitCode: Int32
do {
    if let command = try WorkerCommand.parse(Array(CommandLine.arguments.dropFirst())) {
        exitCode = await command.run()
    } else {
        Terminal.write(WorkerCommand.help)
        exitCode = ExitCode.success
    }
} catch {
    exitCode = Terminal.usageFailure(error, tool: WorkerCommand.tool, usage: WorkerCommand.usage)
}
exit(exitCode)
