import ConvertConfigLoader
import ConvertSwiftSDK
import ConvertTransport
import ConvertURLSessionTransport
import Foundation

/// `convert fetch`: prints the live config.
enum FetchCommand {
    static let help = """
    usage: convert fetch --sdk-key KEY [--environment ENV] [--endpoint URL] [--secret SECRET]

    Fetches the project's config from Convert's CDN and prints the body as served.
    """

    static func run(_ arguments: [String]) async throws -> Int32 {
        let args = try Arguments(arguments, options: ["sdk-key", "environment", "endpoint", "secret"], flags: [])
        let key = try args.required("sdk-key")
        guard !key.trimmingCharacters(in: .whitespaces).isEmpty else { throw UsageError("--sdk-key is empty") }
        let endpoint = args.value("endpoint") ?? ConvertConfiguration.defaultConfigEndpoint
        let source = RemoteConfigSource(
            settings: .init(sdkKey: key, sdkKeySecret: args.value("secret"), environment: args.value("environment"),
                            endpoint: endpoint, policy: EndpointPolicy(allowsInsecureHTTP: endpoint.hasPrefix("http://127.0.0.1"))),
            transport: URLSessionTransport(), cache: nil)
        switch await source.fetch(etag: nil) {
        case .fresh(let body, _):
            FileHandle.standardOutput.write(body)
            if body.last != UInt8(ascii: "\n") { print() }
            return 0
        case .notModified:
            Output.error("the server answered 304 to an unconditional request")
            return 1
        case .failed(let error):
            Output.error("fetch failed: \(error.description)")
            return 1
        }
    }
}
