// swift-tools-version:6.0
import PackageDescription

// A Hummingbird shop deciding with the Convert SDK, and a local collector counting the tracking
// events it sends: a package of its own, so the SDK's package keeps zero dependencies.
let package = Package(
    name: "ShopServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "shop-server", targets: ["ShopServer"]),
        .executable(name: "collector", targets: ["Collector"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(name: "ConvertHummingbird", path: "../../Integrations/ConvertHummingbird"),
        .package(name: "ConvertAsyncHTTPClient", path: "../../Integrations/ConvertAsyncHTTPClient"),
        .package(name: "ConvertObservability", path: "../../Integrations/ConvertObservability"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
    ],
    targets: [
        .executableTarget(
            name: "ShopServer",
            dependencies: [
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "ConvertRedis", package: "ConvertSwiftSDK"),
                .product(name: "ConvertSharedStore", package: "ConvertSwiftSDK"),
                .product(name: "ConvertMemory", package: "ConvertSwiftSDK"),
                .product(name: "ConvertHummingbird", package: "ConvertHummingbird"),
                .product(name: "ConvertAsyncHTTPClient", package: "ConvertAsyncHTTPClient"),
                .product(name: "ConvertServiceLifecycle", package: "ConvertObservability"),
                .product(name: "ConvertLogging", package: "ConvertObservability"),
                .product(name: "ConvertMetrics", package: "ConvertObservability"),
                .product(name: "ConvertTracing", package: "ConvertObservability"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .executableTarget(
            name: "Collector",
            dependencies: [
                .product(name: "ConvertJSON", package: "ConvertSwiftSDK"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
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
