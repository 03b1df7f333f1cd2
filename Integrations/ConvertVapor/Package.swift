// swift-tools-version:6.0
import PackageDescription

// Convert for Vapor 4: a package of its own, so the SDK keeps zero dependencies and a
// Hummingbird user resolves no Vapor. It builds against the SDK in this repository (../..).
let package = Package(
    name: "ConvertVapor",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16)],
    products: [
        .library(name: "ConvertVapor", targets: ["ConvertVapor"]),
    ],
    dependencies: [
        .package(name: "ConvertSwiftSDK", path: "../.."),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
    ],
    targets: [
        .target(
            name: "ConvertVapor",
            dependencies: [
                .product(name: "ConvertSwiftSDK", package: "ConvertSwiftSDK"),
                .product(name: "Vapor", package: "vapor"),
            ]),
        .testTarget(
            name: "ConvertVaporTests",
            dependencies: [
                "ConvertVapor",
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
