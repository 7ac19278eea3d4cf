import Foundation
import IntentCLI

let exitCode: Int32
let words = Array(CommandLine.arguments.dropFirst())
if words.first == "vocabulary" {
    do {
        let command = try VocabularyCommand.parse(Array(words.dropFirst()))
        exitCode = command.run(databasePath: WorkerCommand.appDatabasePath)
    } catch {
        exitCode = Terminal.usageFailure(error, tool: WorkerCommand.tool, usage: VocabularyCommand.usage)
    }
    exit(exitCode)
}
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
