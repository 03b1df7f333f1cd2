// swift-tools-version:6.0
import PackageDescription

// Convert for Hummingbird 2: a package of its own, so the SDK keeps zero dependencies and a
// Vapor user resolves no Hummingbird. It builds against the SDK in this repository (../..).
let package = Package(
    name: "ConvertHummingbird",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17)],
    products: [
        .library(name: "ConvertHummingbird", targets: ["ConvertHummingbird"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        .target(
            name: "ConvertHummingbird",
            dependencies: [
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]),
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
