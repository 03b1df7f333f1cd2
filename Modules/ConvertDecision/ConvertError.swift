import Foundation

/// Errors the SDK reports.
public enum ConvertError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The SDK cannot start: an empty SDK key, or direct config data that is empty or invalid.
    case invalidConfiguration(String)
    /// `ready(timeout:)` gave up waiting; `ConvertSwiftSDK.lastConfigFailure` says why no config came.
    case readyTimedOut(milliseconds: Int)
    /// The wait was cancelled.
    case cancelled

    public var description: String {
        switch self {
        case .invalidConfiguration(let why): return "invalid configuration: \(why)"
        case .readyTimedOut(let ms): return "the SDK was not ready within \(ms) ms"
        case .cancelled: return "the wait for readiness was cancelled"
        }
    }
}

extension ConvertError: LocalizedError {
    /// The same text as ``description``, for `localizedDescription` and UI alerts.
    public var errorDescription: String? { description }
}
