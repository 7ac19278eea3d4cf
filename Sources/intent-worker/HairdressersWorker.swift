import Foundation
import Hairdressers
import IntentCLI
import IntentQueue

/// `intent-worker`: the Hairdressers app's worker (and, when asked, the status
/// recorder), with `vocabulary` for the app's custom words.
@main
enum HairdressersWorker {
    /// `HAIRDRESSERS_DB`, or `hairdressers.sqlite` in the state folder.
    static var appDatabasePath: String {
        Environment.values[HairdressersDatabase.environmentVariable].flatMap { $0.isEmpty ? nil : $0 }
            ?? Environment.stateDirectory() + "/hairdressers.sqlite"
    }

    static let app = WorkerApp(
        tool: "intent-worker",
        summary: "Serve the Hairdressers app's intents (SendMessage, OrderSoup, BookAppointment, SendPayment) with IntentQueue.",
        moreHelp: """
            The app's custom vocabulary (terms users say, read as the app's names):
              intent-worker vocabulary set <hairdresser|soup|group> <term> <value>
              intent-worker vocabulary list [--json]
              intent-worker vocabulary clear [<term>]

            The app's database: HAIRDRESSERS_DB (default ~/.local/state/intentqueue/hairdressers.sqlite); it also
            holds the app's outcome ledger, where cancels, denials and time limits are decided.
            """
    ) { registry in
        let path = appDatabasePath
        let database: AppDatabase
        do {
            database = try HairdressersDatabase.open(path: path)
        } catch {
            throw CannotOpen(description: "cannot open the Hairdressers database at \(path): \(error)")
        }
        try HairdressersApp.register(into: &registry, database: database)
    }

    struct CannotOpen: Error, CustomStringConvertible {
        var description: String
    }

    static func main() async {
        let words = Array(CommandLine.arguments.dropFirst())
        guard words.first == "vocabulary" else { await Worker.serve(app) }
        do {
            let command = try VocabularyCommand.parse(Array(words.dropFirst()))
            exit(command.run(databasePath: appDatabasePath))
        } catch {
            exit(Terminal.usageFailure(error, tool: app.tool, usage: VocabularyCommand.usage))
        }
    }
}
