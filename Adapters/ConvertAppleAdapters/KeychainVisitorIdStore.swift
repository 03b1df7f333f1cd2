#if canImport(Security)
import ConvertStorage
import Foundation
import Security

/// The auto visitor id as a Keychain generic password: readable once the device was unlocked
/// after a restart (so background launches find it), kept on this device only (never in iCloud
/// Keychain, never in a backup restored elsewhere). It survives app launches; whether it
/// survives deleting the app depends on the OS version. It is a random UUID, never an
/// advertising or vendor identifier.
public struct KeychainVisitorIdStore: VisitorIdStore {
    /// The item's service (`kSecAttrService`).
    public let service: String
    /// The item's account (`kSecAttrAccount`).
    public let account: String

    /// The item of `service` and `account`.
    public init(service: String = "com.convert.sdk", account: String = "visitor-id") {
        self.service = service
        self.account = account
    }

    public func loadVisitorId() -> String? {
        var result: CFTypeRef?
        let status = withKeychain { base in
            var query = base
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            return SecItemCopyMatching(query as CFDictionary, &result)
        }
        guard status == errSecSuccess, let data = result as? Data, let id = String(data: data, encoding: .utf8), !id.isEmpty else {
            return nil
        }
        return id
    }

    public func saveVisitorId(_ id: String) {
        let value: [String: Any] = [
            kSecValueData as String: Data(id.utf8),
            // After the first unlock: background launches (a background session's wake) read it
            // too. ThisDeviceOnly: never migrated to another device by a backup.
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
        ]
        _ = withKeychain { base in
            let added = SecItemAdd(base.merging(value) { $1 } as CFDictionary, nil)
            guard added == errSecDuplicateItem else { return added }
            return SecItemUpdate(base as CFDictionary, value as CFDictionary)
        }
    }

    /// Runs `operation` on the item's query; on macOS in the data protection keychain (the one
    /// honouring `kSecAttrAccessible`), or the file keychain for an unsigned process that may
    /// not use it (`errSecMissingEntitlement`: command-line tools, `swift test`).
    private func withKeychain(_ operation: ([String: Any]) -> OSStatus) -> OSStatus {
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
}
#endif
