// The seed documents' SwiftUI entry point and UIKit app delegate, as written there but for the
// types this platform lacks (`App`, `Scene`, `UIApplication`, `UIResponder`): those lines are
// kept as comments, so the SDK calls compile and run everywhere.
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

/// The seed code starts SDKs with file persistence in the user's data directory: this points
/// that default at a temporary directory first, so tests never write under the real home.
private let temporaryDataHome: URL = {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("convert-app-home-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    setenv("XDG_DATA_HOME", directory.path, 1)
    setenv("CFFIXED_USER_HOME", directory.path, 1)
    return directory
}()

// import SwiftUI
// @main
struct MyApp /* : App */ {
    let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "YOUR_SDK_KEY"))

    // var body: some Scene { WindowGroup { ContentView().task { try? await sdk.ready() } … } }
    func task() async {
        try? await sdk.ready(timeout: .milliseconds(50))
    }
}

// import UIKit
// @UIApplicationMain
@MainActor
final class AppDelegate /* : UIResponder, UIApplicationDelegate */ {
    var sdk: ConvertSwiftSDK!

    func application(
        _ application: Any? /* UIApplication */,
        didFinishLaunchingWithOptions launchOptions: [String: Any]? /* [UIApplication.LaunchOptionsKey: Any]? */
    ) -> Bool {
        sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(
            sdkKey: "YOUR_SDK_KEY",
            logLevel: .info
        ))
        sdk.ready { result in
            // result delivered on MainActor
            if case .failure(let error) = result {
                print("Convert SDK configuration error: \(error)")
            }
        }
        return true
    }

    // Forward background URLSession events to the SDK for durable delivery.
    func application(
        _ application: Any? /* UIApplication */,
        handleEventsForBackgroundURLSession identifier: String,
        completionHandler: @escaping () -> Void
    ) {
        sdk.handleEventsForBackgroundURLSession(
            identifier: identifier,
            completionHandler: completionHandler
        )
    }
}

@Suite struct AppEntryPointSnippetTests {
    @Test @MainActor func theAppDelegateForwardsBackgroundSessionEventsAndTheHandlerRunsOnce() async throws {
        _ = temporaryDataHome
        let delegate = AppDelegate()
        #expect(delegate.application(nil, didFinishLaunchingWithOptions: nil))
        var calls = 0
        delegate.application(nil, handleEventsForBackgroundURLSession: "com.convert.sdk.tracking.YOUR-SDK-KEY") { calls += 1 }
        // No background session here (this SDK was not started for an app): at once, once.
        #expect(calls == 1)
    }

    @Test func theSwiftUIEntryPointHoldsOneSDK() async throws {
        _ = temporaryDataHome
        let app = MyApp()
        await app.task()
        #expect(app.sdk.configuration.sdkKey == "YOUR_SDK_KEY")
    }
}
