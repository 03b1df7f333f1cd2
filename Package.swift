// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ConvertSwiftSDK",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "ConvertHashing", targets: ["ConvertHashing"]),
        .library(name: "ConvertJSON", targets: ["ConvertJSON"]),
        .library(name: "ConvertRules", targets: ["ConvertRules"]),
        .library(name: "ConvertBucketing", targets: ["ConvertBucketing"]),
        .library(name: "ConvertModel", targets: ["ConvertModel"]),
        .library(name: "ConvertVisitor", targets: ["ConvertVisitor"]),
        .library(name: "ConvertEvents", targets: ["ConvertEvents"]),
        .library(name: "ConvertTracking", targets: ["ConvertTracking"]),
        .library(name: "ConvertEnvironment", targets: ["ConvertEnvironment"]),
        .library(name: "ConvertStorage", targets: ["ConvertStorage"]),
        .library(name: "ConvertDecision", targets: ["ConvertDecision"]),
        .library(name: "ConvertCore", targets: ["ConvertCore"]),
        .library(name: "ConvertCookie", targets: ["ConvertCookie"]),
        .library(name: "ConvertMemory", targets: ["ConvertMemory"]),
        .library(name: "ConvertTransport", targets: ["ConvertTransport"]),
        .library(name: "ConvertQueue", targets: ["ConvertQueue"]),
        .library(name: "ConvertConfigLoader", targets: ["ConvertConfigLoader"]),
        .library(name: "ConvertURLSessionTransport", targets: ["ConvertURLSessionTransport"]),
        .library(name: "ConvertFileStorage", targets: ["ConvertFileStorage"]),
        .library(name: "ConvertSharedStore", targets: ["ConvertSharedStore"]),
        .library(name: "ConvertSwiftSDK", targets: ["ConvertSwiftSDK"]),
        .library(name: "ConvertTesting", targets: ["ConvertTesting"]),
        .library(name: "ConvertRedis", targets: ["ConvertRedis"]),
        .library(name: "ConvertAppLifecycle", targets: ["ConvertAppLifecycle"]),
        .library(name: "ConvertAppleAdapters", targets: ["ConvertAppleAdapters"]),
        .library(name: "ConvertBench", targets: ["ConvertBench"]),
        .executable(name: "quickstart", targets: ["Quickstart"]),
        .executable(name: "convert", targets: ["convert"]),
        .executable(name: "rules-only", targets: ["RulesOnly"]),
        .executable(name: "custom-build", targets: ["CustomBuild"]),
        .executable(name: "in-memory", targets: ["InMemory"]),
        .executable(name: "readme-snippet", targets: ["ReadmeSnippet"]),
        .executable(name: "shared-store", targets: ["SharedStore"]),
        .executable(name: "convert-bench", targets: ["convert-bench"]),
    ],
    targets: [
        // Engines: pure, no I/O.
        .target(name: "ConvertHashing", path: "Modules/ConvertHashing"),
        .target(name: "ConvertJSON", path: "Modules/ConvertJSON"),
        .target(name: "ConvertRules", dependencies: ["ConvertJSON"], path: "Modules/ConvertRules"),
        .target(name: "ConvertBucketing", dependencies: ["ConvertHashing"], path: "Modules/ConvertBucketing"),
        .target(name: "ConvertModel", dependencies: ["ConvertJSON", "ConvertRules", "ConvertBucketing"],
                path: "Modules/ConvertModel"),
        // What the SDK knows of a visitor beside the config: its stored record (decisions, goals,
        // segments, exposure markers), its key, report segments, conversion data.
        .target(name: "ConvertVisitor", dependencies: ["ConvertJSON", "ConvertHashing", "ConvertSynchronization"], path: "Modules/ConvertVisitor"),

        .target(name: "ConvertEvents", dependencies: ["ConvertModel", "ConvertVisitor", "ConvertSynchronization", "ConvertTracking"],
                path: "Modules/ConvertEvents"),
        // Tracking events and the sink port: what delivery needs, without the config model.
        .target(name: "ConvertTracking", dependencies: ["ConvertVisitor"], path: "Modules/ConvertTracking"),

        .target(name: "ConvertEnvironment", path: "Modules/ConvertEnvironment"),
        // A server's visitor id cookie: reading it from a Cookie header, writing Set-Cookie.
        .target(name: "ConvertCookie", dependencies: ["ConvertEnvironment", "ConvertVisitor"], path: "Modules/ConvertCookie"),
        .target(name: "ConvertSynchronization", path: "Modules/ConvertSynchronization"),
        .target(name: "ConvertStorage", dependencies: ["ConvertVisitor", "ConvertJSON", "ConvertHashing", "ConvertSynchronization"], path: "Modules/ConvertStorage"),
        // The in-memory structure stores are built on (ports and their values stay in Storage).
        .target(name: "ConvertVisitorTable", dependencies: ["ConvertStorage", "ConvertHashing"],
                path: "Modules/ConvertVisitorTable"),

        .target(name: "ConvertTransport", dependencies: ["ConvertEnvironment"], path: "Modules/ConvertTransport"),
        .target(name: "ConvertQueue", dependencies: ["ConvertTracking", "ConvertStorage", "ConvertEnvironment", "ConvertSynchronization",
                                                     "ConvertTransport", "ConvertVisitor"],
                path: "Modules/ConvertQueue"),
        .target(name: "ConvertConfigLoader", dependencies: ["ConvertModel", "ConvertStorage", "ConvertEnvironment", "ConvertSynchronization",
                                                            "ConvertTransport"],
                path: "Modules/ConvertConfigLoader"),

        // The façade: decisions, features, conversions, segments; takes its ports by a public init.
        // Deciding: the engine, its input, the installed config with its feature plans, and the
        // results. Values only: no port, no tracking, no queue, no adapter.
        .target(name: "ConvertDecision",
                dependencies: ["ConvertModel", "ConvertRules", "ConvertBucketing", "ConvertHashing", "ConvertVisitor", "ConvertJSON",
                               "ConvertSynchronization"],
                path: "Modules/ConvertDecision"),
        .target(
            name: "ConvertCore",
            dependencies: ["ConvertDecision", "ConvertModel", "ConvertEvents", "ConvertTracking", "ConvertStorage", "ConvertEnvironment", "ConvertSynchronization",
                           "ConvertHashing", "ConvertBucketing", "ConvertRules", "ConvertVisitor"],
            path: "Modules/ConvertCore"),

        // The app side: reactions to an app's lifecycle, background-session completion handlers.
        .target(name: "ConvertAppLifecycle",
                dependencies: ["ConvertCore", "ConvertQueue", "ConvertEnvironment", "ConvertSynchronization"],
                path: "Modules/ConvertAppLifecycle"),

        // Adapters.
        .target(name: "ConvertMemory", dependencies: ["ConvertStorage", "ConvertVisitorTable", "ConvertSynchronization"], path: "Adapters/ConvertMemory"),
        .target(name: "ConvertFileStorage", dependencies: ["ConvertHashing", "ConvertJSON", "ConvertStorage", "ConvertEnvironment", "ConvertSynchronization", "ConvertVisitor", "ConvertVisitorTable"],
                path: "Adapters/ConvertFileStorage",
                // Its own privacy manifest: the `stat()` calls (file timestamps) are made here,
                // and an app may link this product without the umbrella.
                resources: [.copy("PrivacyInfo.xcprivacy")]),
        .target(name: "ConvertURLSessionTransport", dependencies: ["ConvertTransport", "ConvertSynchronization"],
                path: "Adapters/ConvertURLSessionTransport"),
        // A local visitor store written behind to a shared VisitorDataBackend (several instances).
        .target(name: "ConvertSharedStore", dependencies: ["ConvertStorage", "ConvertEnvironment", "ConvertSynchronization", "ConvertVisitor"],
                path: "Adapters/ConvertSharedStore"),
        // Apple's lifecycle notifications, background URLSession and Keychain; each Apple file
        // compiles to nothing where its framework is missing.
        .target(name: "ConvertAppleAdapters",
                dependencies: ["ConvertEnvironment", "ConvertTransport", "ConvertStorage", "ConvertSynchronization"],
                path: "Adapters/ConvertAppleAdapters"),
        // A Redis client speaking RESP2 over POSIX sockets.
        .target(name: "ConvertRedis", dependencies: ["ConvertEnvironment", "ConvertSynchronization", "ConvertStorage", "ConvertVisitor", "ConvertJSON"], path: "Adapters/ConvertRedis"),

        // The umbrella: re-exports the façade and wires the default adapters.
        .target(
            name: "ConvertSwiftSDK",
            dependencies: ["ConvertCore", "ConvertMemory", "ConvertFileStorage", "ConvertQueue", "ConvertConfigLoader",
                           "ConvertTransport", "ConvertURLSessionTransport", "ConvertEvents", "ConvertTracking", "ConvertModel",
                           "ConvertRules", "ConvertStorage", "ConvertEnvironment", "ConvertSynchronization", "ConvertVisitor",
                           "ConvertAppLifecycle", "ConvertAppleAdapters", "ConvertCookie"],
            path: "Modules/ConvertSwiftSDK",
            // Apple's privacy manifest: file timestamps are read (the storage files' own), nothing
            // is tracked for advertising, no tracking domains.
            resources: [.copy("PrivacyInfo.xcprivacy")]),

        // Test support shipped as a product.
        .target(
            name: "ConvertTesting",
            dependencies: ["ConvertModel", "ConvertEvents", "ConvertTracking", "ConvertStorage", "ConvertEnvironment", "ConvertSynchronization", "ConvertCore",
                           "ConvertMemory",
                           "ConvertTransport", "ConvertBucketing", "ConvertRules", "ConvertVisitor", "ConvertJSON"],
            path: "Tests/ConvertTesting",
            resources: [.copy("Fixtures")]),

        // The command-line tool.
        .executableTarget(
            name: "convert",
            dependencies: ["ConvertSwiftSDK", "ConvertConfigLoader", "ConvertURLSessionTransport", "ConvertBucketing", "ConvertTransport"],
            path: "Modules/ConvertCommand"),

        // Examples.
        .executableTarget(
            name: "Quickstart",
            dependencies: ["ConvertSwiftSDK", "ConvertBucketing", "ConvertVisitor", "ConvertTransport", "ConvertSynchronization"],
            path: "Examples/Quickstart"),

        .executableTarget(name: "RulesOnly", dependencies: ["ConvertRules"], path: "Examples/RulesOnly"),
        .executableTarget(
            name: "CustomBuild",
            dependencies: ["ConvertCore", "ConvertConfigLoader", "ConvertFileStorage", "ConvertQueue",
                           "ConvertURLSessionTransport", "ConvertEvents", "ConvertTracking", "ConvertModel", "ConvertStorage",
                           "ConvertEnvironment", "ConvertTransport", "ConvertRules"],
            path: "Examples/CustomBuild"),
        .executableTarget(name: "InMemory", dependencies: ["ConvertSwiftSDK", "ConvertTesting", "ConvertTransport"], path: "Examples/InMemory"),
        // Two SDK instances sharing visitor data through Redis.
        .executableTarget(name: "SharedStore",
                          dependencies: ["ConvertSwiftSDK", "ConvertRedis", "ConvertSharedStore", "ConvertTesting", "ConvertMemory",
                                         "ConvertTransport"],
                          path: "Examples/SharedStore"),
        // The README's "Using the SDK" code, verbatim (a test keeps the two identical and runs it).
        .executableTarget(name: "ReadmeSnippet", dependencies: ["ConvertSwiftSDK", "ConvertTransport"], path: "Examples/ReadmeSnippet"),

        // The benchmarks as a library, so a package bringing its own Redis transport runs them too.
        .target(
            name: "ConvertBench",
            dependencies: ["ConvertSwiftSDK", "ConvertTesting", "ConvertMemory", "ConvertFileStorage", "ConvertQueue",
                           "ConvertHashing", "ConvertRedis", "ConvertSharedStore", "ConvertSynchronization",
                           "ConvertURLSessionTransport", "ConvertTransport"],
            path: "Examples/Benchmarks/Suite"),
        .executableTarget(name: "convert-bench", dependencies: ["ConvertBench"], path: "Examples/Benchmarks/Tool"),

        // Tests: a target each for Hashing, Rules, Bucketing, Model, Decision, Events, Redis and the CLI; the
        // façade, delivery and reliability are tested across modules; the Rules tests depend on
        // Rules alone.
        .testTarget(name: "ConvertHashingTests", dependencies: ["ConvertHashing", "ConvertTesting"],
                    path: "Tests/ConvertHashingTests"),
        .testTarget(name: "ConvertRulesTests", dependencies: ["ConvertRules"], path: "Tests/ConvertRulesTests"),
        // The decision engine alone: no context, store or runtime is reachable from here.
        .testTarget(name: "ConvertDecisionTests",
                    dependencies: ["ConvertDecision", "ConvertModel", "ConvertRules", "ConvertVisitor", "ConvertHashing"],
                    path: "Tests/ConvertDecisionTests"),
        .testTarget(name: "ConvertBucketingTests", dependencies: ["ConvertBucketing", "ConvertTesting"],
                    path: "Tests/ConvertBucketingTests"),
        .testTarget(name: "ConvertModelTests", dependencies: ["ConvertModel", "ConvertTesting", "ConvertBucketing",
                                                              "ConvertRules"],
                    path: "Tests/ConvertModelTests"),
        .testTarget(name: "SeedSnippetTests", dependencies: ["ConvertSwiftSDK", "ConvertTesting", "ReadmeSnippet"],
                    path: "Tests/SeedSnippetTests"),
        .executableTarget(name: "convert-fuzz", dependencies: ["ConvertTesting"], path: "Tests/ConvertFuzz"),
        .executableTarget(name: "convert-fuzz-resp", dependencies: ["ConvertRedis"], path: "Tests/ConvertFuzzRESP"),
        .executableTarget(name: "JournalProbe", dependencies: ["ConvertQueue", "ConvertFileStorage", "ConvertSwiftSDK",
                                                               "ConvertURLSessionTransport", "ConvertEvents", "ConvertTracking", "ConvertConfigLoader",
                                                               "ConvertTransport"],
                          path: "Tests/JournalProbe"),
        .testTarget(
            name: "ConvertDeliveryTests",
            dependencies: ["ConvertSwiftSDK", "ConvertTesting", "ConvertMemory", "ConvertFileStorage", "ConvertQueue",
                           "ConvertHashing", "ConvertRedis", "ConvertSharedStore", "ConvertConfigLoader", "ConvertURLSessionTransport", "JournalProbe",
                           "ConvertSynchronization", "ConvertEnvironment", "ConvertTracking",
                           "ConvertTransport", "ConvertVisitor", "ConvertStorage"],
            path: "Tests/ConvertDeliveryTests",
            resources: [.copy("Resources")]),
        .testTarget(
            name: "ConvertCommandTests",
            dependencies: ["convert", "convert-bench", "Quickstart", "RulesOnly", "CustomBuild", "InMemory",
                           "ConvertSwiftSDK", "ConvertTesting", "ConvertBucketing", "ConvertSynchronization"],
            path: "Tests/ConvertCommandTests"),
        .testTarget(
            name: "ConvertReliabilityTests",
            dependencies: ["ConvertSwiftSDK", "ConvertTesting", "ConvertBucketing", "ConvertMemory",
                           "ConvertFileStorage", "ConvertQueue", "ConvertConfigLoader", "ConvertURLSessionTransport",
                           "ConvertModel", "ConvertRules", "ConvertVisitor", "ConvertTransport", "ConvertSynchronization"],
            path: "Tests/ConvertReliabilityTests"),
        .testTarget(name: "ConvertEventsTests", dependencies: ["ConvertEvents"], path: "Tests/ConvertEventsTests"),
        // Starts its own redis-server; skipped when none is installed.
        .testTarget(name: "ConvertRedisTests", dependencies: ["ConvertRedis", "ConvertEnvironment", "ConvertSynchronization", "ConvertCore", "ConvertEvents",
                                                              "ConvertMemory", "ConvertSharedStore", "ConvertStorage",
                                                              "ConvertTesting", "ConvertTracking", "ConvertVisitor", "ConvertJSON"],
                    path: "Tests/ConvertRedisTests"),
        // The app side on Linux: lifecycle, background delivery and visitor ids through the test kit's fakes.
        .testTarget(name: "ConvertAppTests",
                    dependencies: ["ConvertSwiftSDK", "ConvertTesting", "ConvertAppLifecycle", "ConvertAppleAdapters", "ConvertQueue",
                                   "ConvertMemory", "ConvertFileStorage", "ConvertTransport", "ConvertSynchronization", "ConvertStorage",
                                   "ConvertEnvironment", "ConvertTracking", "ConvertModel"],
                    path: "Tests/ConvertAppTests"),
        // Reads the manifest and every target's imports: an undeclared arrow, or one pointing
        // outward in its layer table, fails the suite.
        .testTarget(name: "PackageGraphTests", path: "Tests/PackageGraphTests"),
        .testTarget(
            name: "ConvertCoreTests",
            dependencies: ["ConvertCore", "ConvertCookie", "ConvertTesting", "ConvertMemory", "ConvertBucketing", "ConvertEnvironment", "ConvertSynchronization", "ConvertSharedStore",
                           "ConvertEvents", "ConvertTracking", "ConvertModel", "ConvertRules", "ConvertStorage", "ConvertVisitor", "ConvertVisitorTable", "ConvertJSON"],
            path: "Tests/ConvertCoreTests"),
    ],
    swiftLanguageModes: [.v6]
)

// Features that keep the manifest honest: a member is usable only where its module is
// imported (so every arrow is declared), and existential types are spelled `any`.
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("ExistentialAny"),
    ]
}
