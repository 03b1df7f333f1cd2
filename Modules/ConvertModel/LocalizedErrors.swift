import ConvertJSON
import Foundation

extension ConfigDecodingError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}

// ConvertJSON stays free of Foundation, so its error gets the conformance here, where every
// config error surfaces.
extension JSONParseError: LocalizedError {
    /// The same text as ``description``.
    public var errorDescription: String? { description }
}
