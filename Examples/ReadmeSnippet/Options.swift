import ConvertTransport
import Foundation

/// The options every example takes; README's snippet (the rest of main.swift) takes none.
enum ExampleOptions {
    static let usage = """
    usage: readme-snippet [--help | --version]

    Runs README's "Using the SDK" code as written there: one visitor against the SDK's sample
    config, offline, with tracking off.
    """

    /// Handles `--help` and `--version`, and exits with a usage error for anything else given.
    static func handle(_ arguments: [String] = Array(CommandLine.arguments.dropFirst())) {
        switch arguments {
        case []: return
        case ["--help"], ["-h"]:
            print(usage)
            exit(0)
        case ["--version"]:
            print("readme-snippet \(ConvertAgent.version)")
            exit(0)
        default:
            let first = arguments[0]
            let problem = first.hasPrefix("-") ? "unknown option \(first)" : "unexpected argument \"\(first)\""
            FileHandle.standardError.write(Data("readme-snippet: \(problem)\n\(usage)\n".utf8))
            exit(2)
        }
    }
}
