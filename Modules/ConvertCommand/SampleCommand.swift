import ConvertSwiftSDK
import Foundation

/// `convert sample`: the SDK's built-in sample config on standard output.
enum SampleCommand {
    static let help = """
    usage: convert sample

    Prints the sample config built into the SDK (ConvertSwiftSDK.sampleConfig): a real project's
    config with four experiences and six features, to try the other commands on:

        swift run convert sample > sample.json
        swift run convert explain --config sample.json --visitor v1 --experience test-experience-ab-fullstack-1
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        guard arguments.isEmpty else { throw UsageError("sample takes no arguments") }
        FileHandle.standardOutput.write(ConvertSwiftSDK.sampleConfig)
        FileHandle.standardOutput.write(Data("\n".utf8))
        return 0
    }
}
