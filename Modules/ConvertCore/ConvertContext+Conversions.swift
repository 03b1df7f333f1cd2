import ConvertEnvironment
import ConvertEvents
import ConvertTracking
import ConvertModel
import ConvertRules
import ConvertStorage
import ConvertVisitor

extension ConvertContext {
    /// Tracks a conversion with the JavaScript SDK's conversion settings; the same as
    /// ``trackConversion(_:goalData:ruleData:forceMultipleTransactions:)`` with the settings'
    /// values. JavaScript's `conversionData` is `goalData` here.
    ///
    /// ```swift
    /// await context.trackConversion("purchase", goalData: [GoalDataItem(.amount, 30)],
    ///                               settings: [.forceMultipleTransactions: true])
    /// ```
    @discardableResult
    public func trackConversion(_ goalKey: String, goalData: [GoalDataItem]? = nil, ruleData: [String: JSONValue]? = nil,
                                settings: ConversionSettings) async -> ConversionResult {
        await trackConversion(goalKey, goalData: goalData, ruleData: ruleData,
                              forceMultipleTransactions: settings.forceMultipleTransactions)
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

    /// Tracks a conversion on the goal with `goalKey`.
    ///
    /// The first conversion of a visitor on a goal is sent; later ones are dropped as duplicates
    /// unless they carry goal data and `forceMultipleTransactions` is set. Goal data turns the
    /// conversion into a transaction (a second event with the data).
    ///
    /// - Parameters:
    ///   - goalKey: the goal's key.
    ///   - goalData: amount, products count, transaction id, custom dimensions.
    ///   - ruleData: when given, the goal's rules must match it.
    ///   - forceMultipleTransactions: send the transaction even when the visitor already converted
    ///     (the JavaScript SDK's `conversionSetting.forceMultipleTransactions`; see
    ///     ``trackConversion(_:goalData:ruleData:settings:)``).
    /// - Returns: what happened, so callers can tell a duplicate from an unknown goal.
    @discardableResult
    public func trackConversion(_ goalKey: String, goalData: [GoalDataItem]? = nil, ruleData: [String: JSONValue]? = nil,
                                forceMultipleTransactions: Bool = false) async -> ConversionResult {
        let result = await recordConversion(goalKey, goalData: goalData, ruleData: ruleData,
                                            forceMultipleTransactions: forceMultipleTransactions)
        runtime.runHooks(runtime.read(visitorHash).state.hooks, .conversion) {
            try $0.conversion(goalKey, visitorId: visitorId, result: result)
        }
        return result
    }

    private func recordConversion(_ goalKey: String, goalData: [GoalDataItem]?, ruleData: [String: JSONValue]?,
                                  forceMultipleTransactions: Bool) async -> ConversionResult {
        guard let call = begin("trackConversion") else { return visitorIdProblem != nil ? .invalidVisitorId : .notReady }
        let config = call.config
        guard let goal = config.goal(key: goalKey) else {
            runtime.log.warn("trackConversion: no goal has the key \"\(goalKey)\"",
                             metadata: ["convert.call": "trackConversion", "convert.goal": goalKey, "convert.reason": "unknownGoal"])
            return .unknownGoal
        }
        if let problem = goalData?.lazy.compactMap(\.problem).first {
            runtime.log.warn("trackConversion \(goalKey): goal data rejected: \(problem)",
                             metadata: ["convert.call": "trackConversion", "convert.goal": goalKey, "convert.reason": "invalidGoalData"])
            return .invalidGoalData(problem)
        }
        // As in JavaScript, rule data given for a goal without rules matches nothing.
        if let ruleData, !(goal.rules?.matches(ruleData) ?? false) {
            runtime.log.info("trackConversion \(goalKey): rule data does not match the goal's rules")
            return .rulesNotMatched
        }
        if call.preview != nil {
            runtime.log.debug("trackConversion \(goalKey): previewing, nothing recorded")
            return .previewing
        }
        guard call.consented else {
            runtime.log.debug("trackConversion \(goalKey): no consent, nothing recorded")
            return .noConsent
        }
        let goalId = InternedId(goal.id)
        let key = call.key
        var (first, data) = runtime.ports.visitorStore.update(key) { data in
            (data.insertGoal(goalId), data)
        }
        // With a shared store, another instance may have converted this visitor already: the
        // first to record the goal there sends the conversion (unreachable: this instance decides).
        if first, let shared = runtime.sharedStore,
           await shared.recordGoalOnce(key, goalId: goal.id) == false {
            first = false
        }
        // Goal data given, even an empty list, makes a transaction, as in JavaScript.
        let sendTransaction = goalData != nil && (first || forceMultipleTransactions)
        guard first || sendTransaction else { return .duplicate }
        guard call.trackingEnabled else {
            runtime.log.debug("trackConversion \(goalKey): tracking is off")
            return .trackingDisabled
        }
        let bucketing = data.bucketing.isEmpty ? nil : data.bucketing
        let segments = data.segments.isEmpty ? nil : data.segments
        var count = 0, dropped = 0
        func send(_ payload: TrackingEvent.Payload) {
            let event = TrackingEvent(accountId: config.accountId, projectId: config.project.id, visitorId: visitorId,
                                      segments: segments, payload: payload)
            if runtime.ports.trackingSink.offer(event) {
                count += 1
                runtime.announceTracked(event, to: call.trackingHooks)
            } else {
                dropped += 1
            }
        }
        if first { send(.conversion(goalId: goal.id, goalData: nil, bucketingData: bucketing)) }
        if sendTransaction { send(.conversion(goalId: goal.id, goalData: goalData, bucketingData: bucketing)) }
        runtime.events.publish(.conversion, listening: call.listening, .conversion(ConversionPayload(visitorId: visitorId, goalId: goal.id, goalKey: goal.key)))
        return dropped > 0 ? .dropped(eventCount: dropped) : .tracked(eventCount: count)
    }
}
