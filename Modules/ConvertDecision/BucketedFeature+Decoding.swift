import ConvertRules
import Foundation

/// Why a feature variable could not be read as asked.
public enum FeatureVariableError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The feature has no variable of that name (or the feature is disabled).
    case missing(feature: String, variable: String)
    /// The variable's value does not decode into the requested type.
    case typeMismatch(feature: String, variable: String, reason: String)

    public var description: String {
        switch self {
        case .missing(let feature, let variable):
            return "feature \"\(feature)\" has no variable \"\(variable)\" for this visitor"
        case .typeMismatch(let feature, let variable, let reason):
            return "variable \"\(variable)\" of feature \"\(feature)\" does not decode: \(reason)"
        }
    }

    public var errorDescription: String? { description }
}

extension BucketedFeature {
    /// Decodes a variable into any `Decodable` type: a JSON variable (or a string holding JSON)
    /// into your own struct, or a scalar into `Int`, `Double`, `Bool`, `String`.
    ///
    /// ```swift
    /// struct Plans: Decodable { let monthly: Double; let yearly: Double }
    /// let plans = try context.feature("feature-5").decode(Plans.self, forKey: "plans")
    /// ```
    ///
    /// - Throws: ``FeatureVariableError``: the variable is missing (a disabled feature has none),
    ///   or its value does not decode into `type`.
    public func decode<Value: Decodable>(_ type: Value.Type, forKey name: String,
                                         using decoder: JSONDecoder = JSONDecoder()) throws(FeatureVariableError) -> Value {
        guard let value = json(name) else { throw .missing(feature: key, variable: name) }
        do {
            // Through a one-element array, so scalars decode on every Foundation version.
            let data = try JSONEncoder().encode([value])
            guard let decoded = try decoder.decode([Value].self, from: data).first else {
                throw FeatureVariableError.typeMismatch(feature: key, variable: name, reason: "no value")
            }
            return decoded
        } catch let error as FeatureVariableError {
            throw error
        } catch let error as DecodingError {
            throw .typeMismatch(feature: key, variable: name, reason: Self.describe(error))
        } catch {
            throw .typeMismatch(feature: key, variable: name, reason: "\(error)")
        }
    }

    /// A variable decoded into `Value`, or `defaultValue` when it is missing or does not decode.
    ///
    /// ```swift
    /// let height: Int = feature.value(forKey: "button-height", default: 44)
    /// ```
    public func value<Value: Decodable>(forKey name: String, default defaultValue: @autoclosure () -> Value) -> Value {
        (try? decode(Value.self, forKey: name)) ?? defaultValue()
    }

    /// A boolean variable, or `defaultValue` when it is missing.
    public func bool(_ name: String, default defaultValue: Bool) -> Bool { bool(name) ?? defaultValue }

    /// An integer variable, or `defaultValue` when it is missing or not a number.
    public func int(_ name: String, default defaultValue: Int) -> Int { int(name) ?? defaultValue }

    /// A floating-point variable, or `defaultValue` when it is missing or not a number.
    public func double(_ name: String, default defaultValue: Double) -> Double { double(name) ?? defaultValue }

    /// A variable as text, or `defaultValue` when it is missing.
    public func string(_ name: String, default defaultValue: String) -> String { string(name) ?? defaultValue }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            // Drop the wrapping array's index.
            let keys = context.codingPath.dropFirst().map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }
            return keys.isEmpty ? "" : " at \(keys.joined())"
        }
        switch error {
        case .typeMismatch(let type, let context): return "expected \(type)\(path(context))"
        case .valueNotFound(let type, let context): return "missing \(type) value\(path(context))"
        case .keyNotFound(let key, let context): return "missing key \"\(key.stringValue)\"\(path(context))"
        case .dataCorrupted(let context): return context.debugDescription + path(context)
        @unknown default: return "\(error)"
        }
    }
}
