// swift-tools-version:6.0
import PackageDescription

// TLS for the SDK's Redis client (`rediss://`) over SwiftNIO SSL: a package of its own, so the SDK
// keeps zero dependencies. It implements the client's transport port (`RedisTransport`) and builds
// against the SDK in this repository (../..).
let package = Package(
    name: "ConvertRedisTLS",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16)],
    products: [
        .library(name: "ConvertRedisTLS", targets: ["ConvertRedisTLS"]),
        .executable(name: "convert-redis-bench", targets: ["convert-redis-bench"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
    ],
    targets: [
        .target(
            name: "ConvertRedisTLS",
            dependencies: [
                .product(name: "ConvertEnvironment", package: "ConvertSwiftSDK"),
                .product(name: "ConvertRedis", package: "ConvertSwiftSDK"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ]),
        // convert-bench's Redis benchmarks through the TLS transport.
        .executableTarget(
            name: "convert-redis-bench",
            dependencies: [
                "ConvertRedisTLS",
                .product(name: "ConvertBench", package: "ConvertSwiftSDK"),
                .product(name: "ConvertRedis", package: "ConvertSwiftSDK"),
            ],
            path: "Benchmarks"),
        .testTarget(
            name: "ConvertRedisTLSTests",
            dependencies: [
                "ConvertRedisTLS",
                .product(name: "ConvertRedis", package: "ConvertSwiftSDK"),
                .product(name: "ConvertMemory", package: "ConvertSwiftSDK"),
                .product(name: "ConvertSharedStore", package: "ConvertSwiftSDK"),
                .product(name: "ConvertStorage", package: "ConvertSwiftSDK"),
                .product(name: "ConvertTesting", package: "ConvertSwiftSDK"),
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
