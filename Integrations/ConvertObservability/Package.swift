// swift-tools-version:6.1
import PackageDescription

// ConvertSwiftSDK with server-side Swift's observability and lifecycle packages: a package of
// its own, so the SDK's package keeps zero dependencies. Each concern is a product of its own;
// an app takes only those whose ecosystem package it already uses.
//
// Tools version 6.1: package traits. OpenTelemetry's `feature_flag.*` attribute names are
// unstable, so swift-otel-semantic-conventions vends them only with its `Experimental` trait,
// pinned to one minor version as that package asks.
let package = Package(
    name: "ConvertObservability",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "ConvertServiceLifecycle", targets: ["ConvertServiceLifecycle"]),
        .library(name: "ConvertLogging", targets: ["ConvertLogging"]),
        .library(name: "ConvertMetrics", targets: ["ConvertMetrics"]),
        .library(name: "ConvertTracing", targets: ["ConvertTracing"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel-semantic-conventions.git", .upToNextMinor(from: "1.44.0"),
                 traits: ["Experimental"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
    ],
    targets: [
        .target(name: "ConvertServiceLifecycle", dependencies: [
            .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "ConvertLogging", dependencies: [
            .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
            .product(name: "ConvertTransport", package: "ConvertSwiftSDK"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "ConvertMetrics", dependencies: [
            .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
            .product(name: "Metrics", package: "swift-metrics"),
        ]),
        .target(name: "ConvertTracing", dependencies: [
            .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "OTelSemanticConventions", package: "swift-otel-semantic-conventions"),
        ]),
        .executableTarget(name: "convert-hooks-bench", dependencies: [
            "ConvertMetrics", "ConvertTracing",
            .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
        ], path: "Benchmarks"),
        .testTarget(name: "ConvertObservabilityTests", dependencies: [
            "ConvertServiceLifecycle", "ConvertLogging", "ConvertMetrics", "ConvertTracing",
            .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
            .product(name: "ConvertMemory", package: "ConvertSwiftSDK"),
            .product(name: "ConvertTesting", package: "ConvertSwiftSDK"),
            .product(name: "ConvertTransport", package: "ConvertSwiftSDK"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "InMemoryLogging", package: "swift-log"),
            .product(name: "Metrics", package: "swift-metrics"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "Tracing", package: "swift-distributed-tracing"),
            .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
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
