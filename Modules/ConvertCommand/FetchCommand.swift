import ConvertConfigLoader
import ConvertSwiftSDK
import ConvertTransport
import ConvertURLSessionTransport
import Foundation

/// `convert fetch`: prints the live config.
enum FetchCommand {
    static let help = """
    usage: convert fetch --sdk-key KEY [--sdk-key-secret SECRET] [--environment ENV] [--endpoint URL]

    Fetches the project's config from Convert's CDN and prints the body as served.

    The secret is sent as "Authorization: Bearer ..." and never printed. Without
    --sdk-key-secret it is read from the environment variable \(Input.secretVariable) (the
    flag wins), which keeps it out of the shell history and the process list. --secret is a
    deprecated name of --sdk-key-secret. --endpoint replaces the config API's base URL
    (default \(ConvertConfiguration.defaultConfigEndpoint)).
    """

    /// The options that say where a config is fetched from (``fetch(_:)`` reads them).
    static let options: Set<String> = ["sdk-key", "sdk-key-secret", "secret", "environment", "endpoint"]

    static func run(_ arguments: [String]) async throws -> Int32 {
        let body = try await fetch(try Arguments(arguments, options: options, flags: []))
        FileHandle.standardOutput.write(body)
        if body.last != UInt8(ascii: "\n") { Output.write("") }
        return 0
    }

    /// The config body served for `--sdk-key` (with `--sdk-key-secret`, `--environment`,
    /// `--endpoint`); a failed fetch throws a ``RuntimeError``.
    static func fetch(_ args: Arguments) async throws -> Data {
        let key = try args.required("sdk-key")
        guard !key.trimmingCharacters(in: .whitespaces).isEmpty else { throw UsageError("--sdk-key is empty") }
        var secretFlag = args.value("sdk-key-secret")
        if let legacy = args.value("secret") {
            guard secretFlag == nil else { throw UsageError("give --sdk-key-secret only (--secret is its deprecated name)") }
            Output.warning("fetch --secret is deprecated; use --sdk-key-secret or \(Input.secretVariable)")
            secretFlag = legacy
        }
        let endpoint = args.value("endpoint") ?? ConvertConfiguration.defaultConfigEndpoint
        let source = RemoteConfigSource(
            settings: .init(sdkKey: key, sdkKeySecret: Input.secret(secretFlag), environment: args.value("environment"),
                            endpoint: endpoint, policy: EndpointPolicy(allowsInsecureHTTP: endpoint.hasPrefix("http://127.0.0.1"))),
            transport: URLSessionTransport(), cache: nil)
        switch await source.fetch(etag: nil) {
        case .fresh(let body, _):
            return body
        case .notModified:
            throw RuntimeError("the server answered 304 to an unconditional request")
        case .failed(let error):
            throw RuntimeError("fetch failed: \(error.description)")
        }
    }
}
