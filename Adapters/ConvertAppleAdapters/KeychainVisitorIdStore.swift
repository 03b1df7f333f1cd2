#if canImport(Security)
import Security
#endif
import ConvertStorage
import Foundation

/// The auto visitor id as a Keychain generic password: readable once the device was unlocked
/// after a restart (so background launches find it), kept on this device only (never in iCloud
/// Keychain, never in a backup restored elsewhere). It survives app launches; whether it
/// survives deleting the app depends on the OS version. It is a random UUID, never an
/// advertising or vendor identifier.
///
/// A read that fails for any reason but the item's absence (before the first unlock, during a
/// prewarmed launch, say) is tried again a few times; if it still fails the store says
/// ``VisitorIdRead/unreadable`` and the SDK keeps the stored id rather than replacing it.
public struct KeychainVisitorIdStore: VisitorIdStore {
    /// Security's status codes the store tells apart (`SecBase.h`).
    package enum Status {
        /// `errSecSuccess`.
        package static let success: Int32 = 0
        /// `errSecItemNotFound`.
        package static let itemNotFound: Int32 = -25300
        /// `errSecInteractionNotAllowed`: the item is protected until the first unlock.
        package static let interactionNotAllowed: Int32 = -25308
    }

    /// The item's service (`kSecAttrService`).
    public let service: String
    /// The item's account (`kSecAttrAccount`).
    public let account: String
    private let read: @Sendable () -> (status: Int32, data: Data?)
    private let write: @Sendable (Data) -> Int32
    private let retryDelays: [Duration]

    /// The item of `service` and `account`; `nil` where there is no Keychain (Linux).
    public init?(service: String = "com.convert.sdk", account: String = "visitor-id") {
        var read: (@Sendable () -> (status: Int32, data: Data?))?
        var write: (@Sendable (Data) -> Int32)?
        #if canImport(Security)
        read = { keychainRead(service: service, account: account) }
        write = { keychainWrite($0, service: service, account: account) }
        #endif
        guard let read, let write else { return nil }
        self.init(service: service, account: account, read: read, write: write)
    }

    /// A store over `read` and `write`, Security's answers for the item (a test's fake Keychain);
    /// a failed read is tried again after each of `retryDelays`.
    package init(service: String, account: String, read: @escaping @Sendable () -> (status: Int32, data: Data?),
                 write: @escaping @Sendable (Data) -> Int32,
                 retryDelays: [Duration] = [.milliseconds(20), .milliseconds(50), .milliseconds(100)]) {
        self.service = service
        self.account = account
        self.read = read
        self.write = write
        self.retryDelays = retryDelays
    }

    public func loadVisitorId() -> String? {
        if case .stored(let id) = readVisitorId() { return id }
        return nil
    }

    public func readVisitorId() -> VisitorIdRead {
        var delays = retryDelays[...]
        while true {
            let (status, data) = read()
            switch status {
            case Status.success:
                guard let data, let id = String(data: data, encoding: .utf8), !id.isEmpty else { return .absent }
                return .stored(id)
            case Status.itemNotFound:
                return .absent
            default:
                guard let delay = delays.popFirst() else { return .unreadable }
                Thread.sleep(forTimeInterval: Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            }
        }
    }

    public func saveVisitorId(_ id: String) {
        _ = write(Data(id.utf8))
    }
}

#if canImport(Security)
/// The item's query; on macOS in the data protection keychain (the one honouring
/// `kSecAttrAccessible`), or the file keychain for an unsigned process that may not use it
/// (`errSecMissingEntitlement`: command-line tools, `swift test`).
private func withKeychain(service: String, account: String, _ operation: ([String: Any]) -> OSStatus) -> OSStatus {
    let base: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        // Not synchronizable: the id never reaches the user's other devices.
        kSecAttrSynchronizable as String: false,
    ]
    #if os(macOS)
    let status = operation(base.merging([kSecUseDataProtectionKeychain as String: true]) { $1 })
    return status == errSecMissingEntitlement ? operation(base) : status
    #else
    return operation(base)
    #endif
}

private func keychainRead(service: String, account: String) -> (status: Int32, data: Data?) {
    var result: CFTypeRef?
    let status = withKeychain(service: service, account: account) { base in
        var query = base
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        result = nil
        return SecItemCopyMatching(query as CFDictionary, &result)
    }
    return (status, result as? Data)
}

private func keychainWrite(_ data: Data, service: String, account: String) -> Int32 {
    let value: [String: Any] = [
        kSecValueData as String: data,
        // After the first unlock: background launches (a background session's wake) read it
        // too. ThisDeviceOnly: never migrated to another device by a backup.
        kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
    ]
    return withKeychain(service: service, account: account) { base in
        let added = SecItemAdd(base.merging(value) { $1 } as CFDictionary, nil)
        guard added == errSecDuplicateItem else { return added }
        return SecItemUpdate(base as CFDictionary, value as CFDictionary)
    }
}
#endif
