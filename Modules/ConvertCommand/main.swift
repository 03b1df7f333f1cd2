import ConvertTransport
import Foundation

let mainHelp = """
usage: convert <command> [options]
       convert --version

commands:
  decide     decide every experience and feature for visitors (JSON lines in and out)
  explain    show how one decision is made, check by check
  simulate   show which share of visitors changes variation between two configs
  validate   check that a config loads; list what decoding gave up, with line:column
  fetch      print the live config for an SDK key
  generate   write typed keys of a config as Swift source ("convert generate swift")
  sample     print the sample config built into the SDK (a real project's, to try the others on)

Run "convert <command> --help" for a command's options. Exit status: 0 on success, 1 when
the command fails (a bad input line, a config that does not load, a failed fetch), 2 for a
usage error.
"""

/// The SDK version the tool is built from.
let versionLine = "convert \(ConvertAgent.version)"

let arguments = Array(CommandLine.arguments.dropFirst())
let commands: [String: (help: String, run: ([String]) async throws -> Int32)] = [
    "decide": (DecideCommand.help, DecideCommand.run),
    "explain": (ExplainCommand.help, ExplainCommand.run),
    "simulate": (SimulateCommand.help, SimulateCommand.run),
    "validate": (ValidateCommand.help, ValidateCommand.run),
    "fetch": (FetchCommand.help, FetchCommand.run),
    "generate": (GenerateCommand.help, GenerateCommand.run),
    "sample": (SampleCommand.help, SampleCommand.run),
]

var status: Int32 = 0
if arguments.isEmpty || arguments == ["--help"] || arguments == ["-h"] || arguments == ["help"] {
    print(mainHelp)
    status = arguments.isEmpty ? 2 : 0
} else if arguments == ["--version"] {
    print(versionLine)
} else if let command = commands[arguments[0]] {
    let rest = Array(arguments.dropFirst())
    if rest.contains("--help") || rest.contains("-h") {
        print(command.help)
    } else if rest.contains("--version") {
        print(versionLine)
    } else {
        do {
            status = try await command.run(rest)
        } catch let error as UsageError {
            Output.error(error.description)
            FileHandle.standardError.write(Data("run \"convert \(arguments[0]) --help\" for usage\n".utf8))
            status = 2
        } catch {
            Output.error("\(error)")
            status = 1
        }
    }
} else if arguments[0].hasPrefix("-") {
    Output.error("unknown option \(arguments[0])")
    FileHandle.standardError.write(Data((mainHelp + "\n").utf8))
    status = 2
} else {
    Output.error("unknown command \"\(arguments[0])\"")
    FileHandle.standardError.write(Data((mainHelp + "\n").utf8))
    status = 2
}
exit(status)
