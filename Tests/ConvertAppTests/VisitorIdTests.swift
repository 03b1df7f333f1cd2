import ConvertFileStorage
import ConvertMemory
import ConvertSwiftSDK
import ConvertTesting
import Foundation
import Testing

@Suite struct VisitorIdTests {
    @Test func visitorIdStoreContractHoldsForTheFileMemoryAndFakeStores() throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try VisitorIdStoreContract.verify { ByteStoreVisitorIdStore(store: try FileByteStore(directory: directory)) }
        let blobs = MemoryByteStore()
        try VisitorIdStoreContract.verify { ByteStoreVisitorIdStore(store: blobs) }
        let memory = MemoryVisitorIdStore()
        try VisitorIdStoreContract.verify { memory }
    }

    @Test func theAutoVisitorIdIsStableAcrossTwoSDKInstancesAndLaunches() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func launch() throws -> ConvertSwiftSDK {
            ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "key", persistence: .memory), ports: ConvertPorts(
                configSource: StubConfigSource(initial: try Fixtures.data(.cdnConfigBaseline)), visitorStore: MemoryVisitorDataStore(),
                visitorIdStore: ByteStoreVisitorIdStore(store: try FileByteStore(directory: directory)),
                trackingSink: RecordingTrackingSink()))
        }
        let first = try launch()
        let id = first.createContext().visitorId
        let second = try launch()
        #expect(second.createContext().visitorId == id)
        #expect(first.createContext().visitorId == id)
        // A random UUID, made by the SDK: not an advertising or vendor identifier.
        #expect(UUID(uuidString: id) != nil)
        // An explicit id neither reads nor replaces it.
        _ = second.createContext(visitorId: "signed-in-42")
        #expect(try launch().createContext().visitorId == id)
    }

    @Test func anAppStartWithoutAppleAdaptersIsThePlainStartAndAnswersTheSystemAtOnce() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The platform of Linux on every platform: no real background session is opened, even
        // under `swift test` on a Mac.
        let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "key", persistence: .file, storageDirectory: directory),
                                  app: AppOptions(), platform: AppPlatform(), logSink: RecordingLogSink())
        let calls = Counter()
        sdk.handleEventsForBackgroundURLSession(identifier: "com.convert.sdk.tracking.key") { calls.increment() }
        #expect(calls.value == 1)
        #expect(sdk.createContext().visitorId == sdk.createContext().visitorId)
        _ = await sdk.shutdown(timeout: .milliseconds(100))
    }
}
