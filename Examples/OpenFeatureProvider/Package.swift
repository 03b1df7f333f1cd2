// swift-tools-version:6.1
import PackageDescription

// An OpenFeature provider for the Convert SDK: a package of its own, so the SDK's package keeps
// zero dependencies. It builds against the SDK in this repository (../..) and a local checkout
// of swift-open-feature, found at SWIFT_OPEN_FEATURE_PATH or, by default, beside this repository.
let openFeaturePath = Context.environment["SWIFT_OPEN_FEATURE_PATH"] ?? "../../../swift-open-feature"
let sdkPath = "../.."

/// A path dependency's identity: its folder's name, lower-cased.
func identity(of path: String) -> String {
    var components = (path.hasPrefix("/") ? path : Context.packageDirectory + "/" + path)
        .split(separator: "/").map(String.init)
    var resolved: [String] = []
    for component in components where component != "." {
        if component == ".." { _ = resolved.popLast() } else { resolved.append(component) }
    }
    components = resolved
    return (components.last ?? path).lowercased()
}

let package = Package(
    name: "ConvertOpenFeatureProvider",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ConvertOpenFeature", targets: ["ConvertOpenFeature"]),
    ],
    dependencies: [
        .package(path: sdkPath),
        .package(path: openFeaturePath),
    ],
    targets: [
        .target(
            name: "ConvertOpenFeature",
            dependencies: [
                .product(name: "ConvertSwiftSDK", package: identity(of: sdkPath)),
                .product(name: "OpenFeature", package: identity(of: openFeaturePath)),
            ]),
        .testTarget(
            name: "ConvertOpenFeatureTests",
            dependencies: [
                "ConvertOpenFeature",
                .product(name: "ConvertSwiftSDK", package: identity(of: sdkPath)),
                .product(name: "ConvertTesting", package: identity(of: sdkPath)),
                .product(name: "OpenFeature", package: identity(of: openFeaturePath)),
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
