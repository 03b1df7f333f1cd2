// swift-tools-version:6.0
import PackageDescription

// The SDK's HTTP transport over AsyncHTTPClient, for servers that already run SwiftNIO (Vapor,
// Hummingbird): a package of its own, so the SDK keeps zero dependencies. It builds against the
// SDK in this repository (../..).
let package = Package(
    name: "ConvertAsyncHTTPClient",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16)],
    products: [
        .library(name: "ConvertAsyncHTTPClient", targets: ["ConvertAsyncHTTPClient"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .target(
            name: "ConvertAsyncHTTPClient",
            dependencies: [
                .product(name: "ConvertTransport", package: "ConvertSwiftSDK"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        .testTarget(
            name: "ConvertAsyncHTTPClientTests",
            dependencies: [
                "ConvertAsyncHTTPClient",
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "ConvertTesting", package: "ConvertSwiftSDK"),
                .product(name: "ConvertTransport", package: "ConvertSwiftSDK"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("ExistentialAny"),
    ]
}
