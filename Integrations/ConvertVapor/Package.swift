// swift-tools-version:6.0
import PackageDescription

// Convert for Vapor 4: a package of its own, so the SDK keeps zero dependencies and a
// Hummingbird user resolves no Vapor. It builds against the SDK in this repository (../..).
// The README's whole server recipe is an executable of this package (`VaporRecipe`): it alone
// needs the observability, AsyncHTTPClient and Prometheus packages, which an app depending on
// the `ConvertVapor` library does not resolve.
let package = Package(
    name: "ConvertVapor",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16)],
    products: [
        .library(name: "ConvertVapor", targets: ["ConvertVapor"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
        .package(name: "ConvertObservability", path: "../ConvertObservability"),
        .package(name: "ConvertAsyncHTTPClient", path: "../ConvertAsyncHTTPClient"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        .target(
            name: "ConvertVapor",
            dependencies: [
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "Vapor", package: "vapor"),
            ]),
        .executableTarget(
            name: "VaporRecipe",
            dependencies: [
                "ConvertVapor",
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "ConvertRedis", package: "ConvertSwiftSDK"),
                .product(name: "ConvertSharedStore", package: "ConvertSwiftSDK"),
                .product(name: "ConvertMemory", package: "ConvertSwiftSDK"),
                .product(name: "ConvertAsyncHTTPClient", package: "ConvertAsyncHTTPClient"),
                .product(name: "ConvertLogging", package: "ConvertObservability"),
                .product(name: "ConvertMetrics", package: "ConvertObservability"),
                .product(name: "ConvertTracing", package: "ConvertObservability"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Recipe"),
        .testTarget(
            name: "ConvertVaporTests",
            dependencies: [
                "ConvertVapor",
                .product(name: "ConvertLogging", package: "ConvertObservability"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "InMemoryLogging", package: "swift-log"),
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "ConvertTesting", package: "ConvertSwiftSDK"),
                .product(name: "ConvertTransport", package: "ConvertSwiftSDK"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "VaporTesting", package: "vapor"),
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
