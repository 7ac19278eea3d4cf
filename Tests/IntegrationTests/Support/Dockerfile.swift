import Foundation

/// A Dockerfile read as stages of instructions: continuation lines joined,
/// comments dropped, `ARG`s declared before the first `FROM` substituted into
/// the `FROM` lines (as Docker does).
struct Dockerfile {
    struct Instruction {
        var keyword: String
        var arguments: String
    }

    struct Stage {
        var base: String
        var name: String?
        var instructions: [Instruction]

        func arguments(of keyword: String) -> [String] {
            instructions.filter { $0.keyword == keyword }.map(\.arguments)
        }

        /// The packages of every `apt-get install` in the stage's RUN instructions.
        var aptPackages: Set<String> {
            var packages: Set<String> = []
            for run in arguments(of: "RUN") {
                let commands = run.replacingOccurrences(of: "&&", with: ";").replacingOccurrences(of: "||", with: ";")
                    .split(separator: ";")
                for command in commands {
                    let words = command.split(whereSeparator: \.isWhitespace).map(String.init)
                    guard let install = words.firstIndex(of: "install"), install > 0,
                        words[..<install].contains(where: { $0 == "apt-get" || $0 == "apt" })
                    else { continue }
                    packages.formUnion(words[(install + 1)...].filter { !$0.hasPrefix("-") })
                }
            }
            return packages
        }
    }

    struct ParseError: Error, CustomStringConvertible {
        var description: String
    }

    var stages: [Stage] = []

    init(_ text: String) throws {
        var logical: [String] = []
        var current = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#") { continue }
            if trimmed.isEmpty {
                if !current.isEmpty { throw ParseError(description: "a blank line inside a continued instruction: \(current)") }
                continue
            }
            if trimmed.hasSuffix("\\") {
                current += trimmed.dropLast() + " "
                continue
            }
            logical.append(current + trimmed)
            current = ""
        }
        if !current.isEmpty { throw ParseError(description: "the last instruction ends with a continuation: \(current)") }

        var globalArguments: [String: String] = [:]
        for line in logical {
            let keyword = String(line.prefix { !$0.isWhitespace }).uppercased()
            let arguments = line.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)
            switch keyword {
            case "ARG" where stages.isEmpty:
                let parts = arguments.split(separator: "=", maxSplits: 1).map(String.init)
                globalArguments[parts[0]] = parts.count > 1 ? parts[1] : ""
            case "FROM":
                var words = arguments.split(whereSeparator: \.isWhitespace).map(String.init)
                    .filter { !$0.hasPrefix("--platform") }
                guard let image = words.first else { throw ParseError(description: "FROM without an image") }
                var base = image
                for (name, value) in globalArguments {
                    base = base.replacingOccurrences(of: "${\(name)}", with: value).replacingOccurrences(of: "$\(name)", with: value)
                }
                words.removeFirst()
                let name = words.count == 2 && words[0].uppercased() == "AS" ? words[1] : nil
                stages.append(Stage(base: base, name: name, instructions: []))
            default:
                guard !stages.isEmpty else { throw ParseError(description: "\(keyword) before the first FROM") }
                stages[stages.count - 1].instructions.append(Instruction(keyword: keyword, arguments: arguments))
            }
        }
        guard !stages.isEmpty else { throw ParseError(description: "no FROM") }
    }
}
