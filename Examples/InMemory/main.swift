// Everything in memory, with the testing kit's stub transport in place of the network: the way
// to run the SDK in unit tests, and to see exactly what it would send.
//
//   swift run in-memory
import ConvertSwiftSDK
import ConvertTesting
import ConvertTransport
import Foundation

let usage = """
usage: in-memory [--help | --version]

Decides three visitors and tracks a conversion each with everything in memory, then prints
the requests the stub transport received in place of the network.
"""
switch Array(CommandLine.arguments.dropFirst()) {
case []: break
case ["--help"], ["-h"]:
    print(usage)
    exit(0)
case ["--version"]:
    print("in-memory \(ConvertAgent.version)")
    exit(0)
case let other:
    let first = other[0]
    let problem = first.hasPrefix("-") ? "unknown option \(first)" : "unexpected argument \"\(first)\""
    FileHandle.standardError.write(Data("in-memory: \(problem)\n\(usage)\n".utf8))
    exit(2)
}

let transport = StubTransport { _ in HTTPResponse(status: 200) }
let configuration = ConvertConfiguration(sdkKey: "10035569/10034190", eventsBatchSize: 100, persistence: .memory)
let sdk = ConvertSwiftSDK(configuration: configuration,
                          ports: .live(configuration, logSink: SilentLogSink(),
                                       directData: try Fixtures.data(.cdnConfigBaseline), transport: transport))
try await sdk.ready()

for visitor in ["ann", "ben", "cleo"] {
    let context = sdk.createContext(visitorId: visitor, attributes: ["mobile": true])
    context.setLocationProperties(["location": "pricing"])
    let variation = await context.runExperience("test-experience-ab-fullstack-1")
    print("\(visitor): \(variation?.key ?? "no variation")")
    await context.trackConversion("button-primary-click")
}
await sdk.flush()

for request in transport.requests {
    print("\n\(request.method.rawValue) \(request.url.absoluteString)")
    print("User-Agent: \(request.header("User-Agent") ?? "-")")
    if let body = request.body { print(String(decoding: body, as: UTF8.self)) }
}
