// swift-tools-version:6.0
import PackageDescription

// Convert for Hummingbird 2: a package of its own, so the SDK keeps zero dependencies and a
// Vapor user resolves no Hummingbird. It builds against the SDK in this repository (../..).
// The README's whole server recipe is an executable of this package (`HummingbirdRecipe`): it
// alone needs the observability, AsyncHTTPClient and Prometheus packages, which an app depending
// on the `ConvertHummingbird` library does not resolve.
let package = Package(
    name: "ConvertHummingbird",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],
    products: [
        .library(name: "ConvertHummingbird", targets: ["ConvertHummingbird"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(name: "ConvertObservability", path: "../ConvertObservability"),
        .package(name: "ConvertAsyncHTTPClient", path: "../ConvertAsyncHTTPClient"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        .target(
            name: "ConvertHummingbird",
            dependencies: [
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]),
        .executableTarget(
            name: "HummingbirdRecipe",
            dependencies: [
                "ConvertHummingbird",
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "ConvertRedis", package: "ConvertSwiftSDK"),
                .product(name: "ConvertSharedStore", package: "ConvertSwiftSDK"),
                .product(name: "ConvertMemory", package: "ConvertSwiftSDK"),
                .product(name: "ConvertAsyncHTTPClient", package: "ConvertAsyncHTTPClient"),
                .product(name: "ConvertServiceLifecycle", package: "ConvertObservability"),
                .product(name: "ConvertLogging", package: "ConvertObservability"),
                .product(name: "ConvertMetrics", package: "ConvertObservability"),
                .product(name: "ConvertTracing", package: "ConvertObservability"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Recipe"),
        .testTarget(
            name: "ConvertHummingbirdTests",
            dependencies: [
                "ConvertHummingbird",
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "ConvertTesting", package: "ConvertSwiftSDK"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
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
