import ConvertEvents
import ConvertModel
import ConvertRules
import ConvertVisitor

/// Completion-handler twins of the async API, for call sites without `async`. Completions run
/// on a background task, never on the caller's thread.
extension ConvertContext {
    /// ``runExperience(_:enableTracking:)`` with a completion handler.
    public func runExperience(_ key: String, enableTracking: Bool = true,
                              completion: @escaping @Sendable (BucketedVariation?) -> Void) {
        Task { completion(await runExperience(key, enableTracking: enableTracking)) }
    }

    /// ``runExperiences(enableTracking:)`` with a completion handler.
    public func runExperiences(enableTracking: Bool = true, completion: @escaping @Sendable ([BucketedVariation]) -> Void) {
        Task { completion(await runExperiences(enableTracking: enableTracking)) }
    }

    /// ``runFeature(_:typeCasting:enableTracking:)`` with a completion handler.
    public func runFeature(_ key: String, typeCasting: Bool = true, enableTracking: Bool = true,
                           completion: @escaping @Sendable (BucketedFeature) -> Void) {
        Task { completion(await runFeature(key, typeCasting: typeCasting, enableTracking: enableTracking)) }
    }

    /// ``runFeatures(typeCasting:enableTracking:)`` with a completion handler.
    public func runFeatures(typeCasting: Bool = true, enableTracking: Bool = true,
                            completion: @escaping @Sendable ([BucketedFeature]) -> Void) {
        Task { completion(await runFeatures(typeCasting: typeCasting, enableTracking: enableTracking)) }
    }

    /// ``trackConversion(_:goalData:ruleData:forceMultipleTransactions:)`` with a completion handler.
    public func trackConversion(_ goalKey: String, goalData: [GoalDataItem]? = nil, ruleData: [String: JSONValue]? = nil,
                                forceMultipleTransactions: Bool = false,
                                completion: @escaping @Sendable (ConversionResult) -> Void) {
        Task {
            completion(await trackConversion(goalKey, goalData: goalData, ruleData: ruleData,
                                             forceMultipleTransactions: forceMultipleTransactions))
        }
    }

    /// ``setDefaultSegments(_:)-(VisitorSegments)`` with a completion handler.
    public func setDefaultSegments(_ segments: VisitorSegments, completion: @escaping @Sendable () -> Void) {
        Task {
            await setDefaultSegments(segments)
            completion()
        }
    }

    /// ``runCustomSegments(_:ruleData:)`` with a completion handler.
    public func runCustomSegments(_ segmentKeys: [String], ruleData: [String: JSONValue]? = nil,
                                  completion: @escaping @Sendable ([String]) -> Void) {
        Task { completion(await runCustomSegments(segmentKeys, ruleData: ruleData)) }
    }
}

extension ConvertSwiftSDK {
    /// ``setTrackingEnabled(_:)`` with a completion handler.
    public func setTrackingEnabled(_ enabled: Bool, completion: @escaping @Sendable () -> Void) {
        Task {
            await setTrackingEnabled(enabled)
            completion()
        }
    }

    /// ``shutdown(timeout:)`` with a completion handler.
    public func shutdown(timeout: Duration, completion: @escaping @Sendable (TrackingShutdown) -> Void) {
        Task { completion(await shutdown(timeout: timeout)) }
    }

    /// ``flush()`` with a completion handler.
    public func flush(completion: @escaping @Sendable () -> Void) {
        Task {
            await flush()
            completion()
        }
    }
}
