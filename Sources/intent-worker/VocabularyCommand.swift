import Foundation
import Hairdressers
import IntentCLI
import IntentKit
import IntentStore

/// `intent-worker vocabulary …`: the Hairdressers app's custom vocabulary.
struct VocabularyCommand {
    static let usage = "intent-worker vocabulary set <hairdresser|soup|group> <term> <value> | list [--json] | clear [<term>]"

    enum Action {
        case set(Vocabulary.Kind, term: String, value: String)
        case list(json: Bool)
        case clear(term: String?)
    }

    var action: Action

    static func parse(_ words: [String]) throws(UsageError) -> VocabularyCommand {
        let arguments = try Arguments(words, flags: ["--json"], options: [])
        let words = arguments.positionals
        switch words.first {
        case "set":
            guard words.count == 4 else { throw UsageError("vocabulary set takes a kind, a term and a value") }
            guard let kind = Vocabulary.Kind(rawValue: words[1]) else {
                throw UsageError("'\(words[1])' is not a kind: use \(Vocabulary.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return VocabularyCommand(action: .set(kind, term: words[2], value: words[3]))
        case "list":
            guard words.count == 1 else { throw UsageError("vocabulary list takes no arguments") }
            return VocabularyCommand(action: .list(json: arguments.has("--json")))
        case "clear":
            guard words.count <= 2 else { throw UsageError("vocabulary clear takes at most one term") }
            return VocabularyCommand(action: .clear(term: words.count == 2 ? words[1] : nil))
        default:
            throw UsageError("vocabulary needs set, list or clear")
        }
    }

    func run(databasePath: String) -> Int32 {
        do {
            let database = try HairdressersDatabase.open(path: databasePath)
            switch action {
            case .set(let kind, let term, let value):
                let name = try database.queue.sync { db in try db.transaction { db in try Vocabulary.set(kind, term: term, value: value, in: db) } }
                Terminal.write("'\(term)' now means \(name)")
            case .list(let json):
                let terms = try database.queue.sync { db in try Vocabulary.list(in: db) }
                if json {
                    Terminal.write(
                        JSONValue.array(
                            terms.map { .object(["kind": .string($0.kind.rawValue), "term": .string($0.term), "value": .string($0.value)]) }
                        ).jsonString)
                } else if terms.isEmpty {
                    Terminal.write("no terms")
                } else {
                    for term in terms { Terminal.write("\(term.kind.rawValue)  \(term.term) → \(term.value)") }
                }
            case .clear(let term):
                let removed = try database.queue.sync { db in try Vocabulary.clear(term, in: db) }
                Terminal.write("cleared \(removed) term\(removed == 1 ? "" : "s")")
            }
            return ExitCode.success
        } catch let refusal as Vocabulary.Refusal {
            return Terminal.fail("intent-worker", refusal.description, code: ExitCode.failed)
        } catch {
            return Terminal.fail("intent-worker", "cannot use the Hairdressers database at \(databasePath): \(error)", code: ExitCode.unavailable)
        }
    }
}
