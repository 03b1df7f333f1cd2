// convert-bench: speed and memory of the SDK, one JSON line per sub-command.
// Build it in release: swift run -c release convert-bench <command> [--workload FILE] [options]
import ConvertBench
import Foundation

exit(await ConvertBench.main(CommandLine.arguments))
