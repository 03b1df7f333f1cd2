import ConvertSwiftSDK
import Foundation
import OpenFeature

/// An OpenFeature provider that decides with the Convert SDK.
///
/// Flag keys name what the SDK decides:
/// - a **feature key** (`"new-checkout"`): a boolean, whether the feature is on for the visitor;
///   resolved with an ``ObjectValue`` default, all its variables;
/// - **`feature.variable`** (`"new-checkout.button-color"`): one variable, as a boolean, string,
///   integer, double or object, checked against the variable's declared type;
/// - an **experience key** (`"checkout-test"`): a string, the variation's key.
///
/// The evaluation context's targeting key is the visitor id, its fields the visitor's attributes
/// (audience data), except the object field ``Options/locationPropertiesField``, which holds the
/// location properties experiences' locations are matched against. Reasons and error codes are the SDK's decision details
/// (``VariationDetail``, ``FeatureDetail``) in OpenFeature's words.
///
/// ```swift
/// let sdk = ConvertSwiftSDK(configuration: ConvertConfiguration(sdkKey: "..."))
/// let provider = ConvertOpenFeatureProvider(sdk: sdk)
/// try await provider.ready()
/// OpenFeatureSystem.setProvider(provider)
/// let client = OpenFeatureSystem.client()
/// let context = OpenFeatureEvaluationContext(targetingKey: "visitor-42", fields: ["plan": "premium"])
/// let on = await client.value(for: "new-checkout", defaultingTo: false, context: context)
/// ```
public struct ConvertOpenFeatureProvider: OpenFeatureProvider, CustomStringConvertible {
    /// Choices for the provider.
    public struct Options: Sendable {
        /// Between a feature key and a variable key in a flag key (default `.`).
        public var variableSeparator: Character
        /// Whether evaluations send the SDK's bucketing events, as the SDK's own calls do by
        /// default (default `true`).
        public var tracksDecisions: Bool
        /// How long ``run()`` and ``shutdown()`` let pending tracking events be delivered.
        public var shutdownTimeout: Duration
        /// The context field whose object holds the visitor's location properties (default
        /// `locationProperties`); `nil` makes every field an attribute.
        public var locationPropertiesField: String?

        /// Options with the defaults above.
        public init(variableSeparator: Character = ".", tracksDecisions: Bool = true, shutdownTimeout: Duration = .seconds(5),
                    locationPropertiesField: String? = "locationProperties") {
            self.variableSeparator = variableSeparator
            self.tracksDecisions = tracksDecisions
            self.shutdownTimeout = shutdownTimeout
            self.locationPropertiesField = locationPropertiesField
        }
    }

    /// An object flag's value: a feature's variables, or a `json` variable.
    ///
    /// The OpenFeature client evaluates booleans, strings, integers and doubles; objects are
    /// resolved on the provider itself.
    public struct ObjectValue: OpenFeatureValue, Hashable {
        /// The value as JSON.
        public var json: JSONValue

        /// Wraps a JSON value.
        public init(_ json: JSONValue) {
            self.json = json
        }
    }

    /// What a conversion carries beside its goal, in OpenFeature's shape.
    public struct TrackingDetails: Sendable {
        /// The conversion's value: the goal's `amount`.
        public var value: Double?
        /// Fields named after a ``GoalDataKey`` (`productsCount`, `transactionId`,
        /// `customDimension1`...): the goal's data. Other fields are ignored.
        public var fields: [String: OpenFeatureFieldValue]

        /// Details with a value and goal data fields.
        public init(value: Double? = nil, fields: [String: OpenFeatureFieldValue] = [:]) {
            self.value = value
            self.fields = fields
        }
    }

    /// The SDK the provider decides with.
    public let sdk: ConvertSwiftSDK
    /// The provider's choices.
    public let options: Options
    /// Names the provider: "Convert".
    public let metadata = OpenFeatureProviderMetadata(name: "Convert")
    /// The provider's name, for logs.
    public var description: String { "ConvertOpenFeatureProvider" }

    /// A provider over `sdk`; the SDK keeps being usable directly.
    public init(sdk: ConvertSwiftSDK, options: Options = Options()) {
        self.sdk = sdk
        self.options = options
    }

    // MARK: Lifecycle

    /// Returns once the SDK has a config; until then every resolution answers
    /// `PROVIDER_NOT_READY` with the default value.
    ///
    /// - Throws: ``ConvertError`` when no config can ever come, or after `timeout`.
    public func ready(timeout: Duration? = nil) async throws {
        if let timeout {
            try await sdk.ready(timeout: timeout)
        } else {
            try await sdk.ready()
        }
    }

    /// Delivers pending tracking events (at most ``Options/shutdownTimeout``) and stops the SDK's
    /// background work; resolutions keep answering from the installed config.
    @discardableResult
    public func shutdown() async -> TrackingShutdown {
        await sdk.shutdown(timeout: options.shutdownTimeout)
    }

    /// Runs the provider as a service: waits for ``ready(timeout:)``, then holds until the task
    /// running it is cancelled, then calls ``shutdown()``.
    public func run() async throws {
        try await ready()
        // Only cancellation ends a sleep that long; that is the signal to shut down.
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(86_400))
        }
        await shutdown()
    }

    // MARK: Resolution

    /// A feature's state (a feature key) or a boolean variable (`feature.variable`).
    public func resolution(of flag: String, defaultValue: Bool,
                           context: OpenFeatureEvaluationContext?) async -> OpenFeatureResolution<Bool> {
        resolve(flag, defaultValue, context) { target, visitor in
            switch target {
            case .feature(let feature):
                return .feature(visitor.featureDetail(feature.key, enableTracking: options.tracksDecisions)) { $0.isEnabled }
            case .variable(let feature, let variable):
                return variableOutcome(feature, variable, visitor, accepts: [.boolean]) { $0.bool(variable.key) }
            case .experience:
                return .mismatch("\"\(flag)\" is an experience: its variation is a string")
            }
        }
    }

    /// An experience's variation key (an experience key) or a string variable (`feature.variable`).
    public func resolution(of flag: String, defaultValue: String,
                           context: OpenFeatureEvaluationContext?) async -> OpenFeatureResolution<String> {
        resolve(flag, defaultValue, context) { target, visitor in
            switch target {
            case .experience(let experience):
                return .variation(visitor.variationDetail(forExperience: experience.key, enableTracking: options.tracksDecisions))
            case .variable(let feature, let variable):
                return variableOutcome(feature, variable, visitor, accepts: [.string]) { $0.string(variable.key) }
            case .feature:
                return .mismatch("\"\(flag)\" is a feature: its state is a boolean")
            }
        }
    }

    /// An integer variable (`feature.variable`).
    public func resolution(of flag: String, defaultValue: Int,
                           context: OpenFeatureEvaluationContext?) async -> OpenFeatureResolution<Int> {
        resolve(flag, defaultValue, context) { target, visitor in
            guard case .variable(let feature, let variable) = target else { return .mismatch("\"\(flag)\" is not a variable") }
            return variableOutcome(feature, variable, visitor, accepts: [.integer]) { $0.int(variable.key) }
        }
    }

    /// A floating-point variable (`feature.variable`); integer variables are read as doubles too.
    public func resolution(of flag: String, defaultValue: Double,
                           context: OpenFeatureEvaluationContext?) async -> OpenFeatureResolution<Double> {
        resolve(flag, defaultValue, context) { target, visitor in
            guard case .variable(let feature, let variable) = target else { return .mismatch("\"\(flag)\" is not a variable") }
            return variableOutcome(feature, variable, visitor, accepts: [.float, .integer]) { $0.double(variable.key) }
        }
    }

    /// A feature's variables as one object (a feature key) or a `json` variable (`feature.variable`).
    public func resolution(of flag: String, defaultValue: ObjectValue,
                           context: OpenFeatureEvaluationContext?) async -> OpenFeatureResolution<ObjectValue> {
        resolve(flag, defaultValue, context) { target, visitor in
            switch target {
            case .feature(let feature):
                return .feature(visitor.featureDetail(feature.key, enableTracking: options.tracksDecisions)) { decided in
                    decided.isEnabled ? ObjectValue(.object(decided.variables)) : nil
                }
            case .variable(let feature, let variable):
                return variableOutcome(feature, variable, visitor, accepts: [.json]) { $0.json(variable.key).map(ObjectValue.init) }
            case .experience:
                return .mismatch("\"\(flag)\" is an experience: its variation is a string")
            }
        }
    }

    // MARK: Tracking

    /// Tracks a conversion on `goalKey` for the context's visitor (the SDK's `trackConversion`).
    ///
    /// - Returns: what the SDK did; ``ConversionResult/invalidVisitorId`` without a targeting key.
    @discardableResult
    public func track(_ goalKey: String, context: OpenFeatureEvaluationContext?,
                      details: TrackingDetails = TrackingDetails()) async -> ConversionResult {
        guard let visitorId = context?.targetingKey, !visitorId.isEmpty else { return .invalidVisitorId }
        let visitor = visitorContext(visitorId, context)
        var goalData: [GoalDataItem] = []
        if let value = details.value { goalData.append(GoalDataItem(.amount, .number(value))) }
        for key in GoalDataKey.allCases where key != .amount || details.value == nil {
            if let field = details.fields[key.rawValue] { goalData.append(GoalDataItem(key, Self.json(field))) }
        }
        return await visitor.trackConversion(goalKey, goalData: goalData.isEmpty ? nil : goalData)
    }

    // MARK: Mapping

    /// What a flag key names in the installed config.
    enum Target {
        case feature(Feature)
        case variable(Feature, Feature.Variable)
        case experience(Experience)
    }

    /// What a decision gave, before it becomes a resolution.
    enum Outcome<Value> {
        case value(Value, reason: EvaluationReason, variant: String?, metadata: [String: OpenFeatureFlagMetadataValue])
        /// The decision gave no value (a feature off, no variation): the default, with this reason.
        case none(reason: EvaluationReason, variant: String?, metadata: [String: OpenFeatureFlagMetadataValue])
        case error(OpenFeatureResolutionError.Code, String)

        static func mismatch(_ message: String) -> Outcome { .error(.typeMismatch, message) }

        static func feature(_ detail: FeatureDetail, _ value: (BucketedFeature) -> Value?) -> Outcome {
            if let code = detail.errorCode { return .error(ConvertOpenFeatureProvider.code(code), "feature \"\(detail.featureKey)\": \(code.rawValue)") }
            let metadata = ConvertOpenFeatureProvider.metadata(detail.value)
            guard let decided = value(detail.value) else { return .none(reason: detail.reason, variant: detail.variant, metadata: metadata) }
            return .value(decided, reason: detail.reason, variant: detail.variant, metadata: metadata)
        }
    }

    private func resolve<Value: OpenFeatureValue>(
        _ flag: String, _ defaultValue: Value, _ context: OpenFeatureEvaluationContext?,
        _ decide: (Target, ConvertContext) -> Outcome<Value>
    ) -> OpenFeatureResolution<Value> {
        func failure(_ code: OpenFeatureResolutionError.Code, _ message: String) -> OpenFeatureResolution<Value> {
            OpenFeatureResolution(value: defaultValue, error: OpenFeatureResolutionError(code: code, message: message), reason: .error)
        }
        guard let config = sdk.config else { return failure(.providerNotReady, "the Convert SDK has no config yet") }
        guard let visitorId = context?.targetingKey, !visitorId.isEmpty else {
            return failure(.targetingKeyMissing, "the evaluation context has no targeting key (the visitor id)")
        }
        guard let target = target(of: flag, in: config) else {
            return failure(.flagNotFound, "no feature, feature variable or experience has the key \"\(flag)\"")
        }
        let visitor = visitorContext(visitorId, context)
        if let problem = visitor.visitorIdProblem { return failure(.invalidContext, "targeting key: \(problem)") }
        switch decide(target, visitor) {
        case .value(let value, let reason, let variant, let metadata):
            return OpenFeatureResolution(value: value, reason: Self.reason(reason), variant: variant, flagMetadata: metadata)
        case .none(let reason, let variant, let metadata):
            return OpenFeatureResolution(value: defaultValue, reason: Self.reason(reason), variant: variant, flagMetadata: metadata)
        case .error(let code, let message):
            return failure(code, message)
        }
    }

    /// The feature or experience a flag key names: the whole key first, then `feature.variable`
    /// split at each separator from the left.
    func target(of flag: String, in config: ProjectConfig) -> Target? {
        if let feature = config.feature(key: flag) { return .feature(feature) }
        if let experience = config.experience(key: flag) { return .experience(experience) }
        var start = flag.startIndex
        while let separator = flag[start...].firstIndex(of: options.variableSeparator) {
            if let feature = config.feature(key: String(flag[..<separator])) {
                let name = String(flag[flag.index(after: separator)...])
                return feature.variables.first { $0.key == name }.map { .variable(feature, $0) }
            }
            start = flag.index(after: separator)
        }
        return nil
    }

    private func variableOutcome<Value>(_ feature: Feature, _ variable: Feature.Variable, _ visitor: ConvertContext,
                                        accepts types: [VariableType], _ read: (BucketedFeature) -> Value?) -> Outcome<Value> {
        if case .other = variable.type {
            // A type this SDK does not know: the value decides.
        } else if !types.contains(variable.type) {
            return .mismatch("variable \"\(variable.key)\" of feature \"\(feature.key)\" is declared \(variable.type.name)")
        }
        let detail = visitor.featureDetail(feature.key, enableTracking: options.tracksDecisions)
        if let code = detail.errorCode { return .error(Self.code(code), "feature \"\(feature.key)\": \(code.rawValue)") }
        let metadata = Self.metadata(detail.value)
        guard detail.value.isEnabled, detail.value.variables[variable.key] != nil else {
            return .none(reason: detail.reason, variant: detail.variant, metadata: metadata)
        }
        guard let value = read(detail.value) else {
            return .mismatch("variable \"\(variable.key)\" of feature \"\(feature.key)\" does not read as \(Value.self)")
        }
        return .value(value, reason: detail.reason, variant: detail.variant, metadata: metadata)
    }

    /// The SDK's reason in OpenFeature's words.
    static func reason(_ reason: EvaluationReason) -> OpenFeatureResolutionReason {
        switch reason {
        case .targetingMatch: return .targetingMatch
        case .split: return .split
        case .cached: return .cached
        case .static: return .static
        case .disabled: return .disabled
        case .default: return .default
        case .error: return .error
        }
    }

    /// The SDK's error code in OpenFeature's words.
    static func code(_ code: EvaluationErrorCode) -> OpenFeatureResolutionError.Code {
        switch code {
        case .flagNotFound: return .flagNotFound
        case .notReady: return .providerNotReady
        case .invalidVisitorId: return .invalidContext
        case .typeMismatch: return .typeMismatch
        }
    }

    private static func metadata(_ feature: BucketedFeature) -> [String: OpenFeatureFlagMetadataValue] {
        var metadata: [String: OpenFeatureFlagMetadataValue] = [:]
        if let id = feature.id { metadata["featureId"] = .string(id) }
        if let key = feature.experienceKey { metadata["experienceKey"] = .string(key) }
        if let id = feature.experienceId { metadata["experienceId"] = .string(id) }
        if let id = feature.variationId { metadata["variationId"] = .string(id) }
        return metadata
    }

    fileprivate static func metadata(_ detail: VariationDetail) -> [String: OpenFeatureFlagMetadataValue] {
        var metadata: [String: OpenFeatureFlagMetadataValue] = ["decisionReason": .string(detail.decisionReason.rawValue)]
        if let variation = detail.value {
            metadata["experienceId"] = .string(variation.experienceId)
            metadata["variationId"] = .string(variation.variation.id)
        }
        return metadata
    }

    /// A context for the visitor, with the evaluation context's attributes and location properties.
    private func visitorContext(_ visitorId: String, _ context: OpenFeatureEvaluationContext?) -> ConvertContext {
        var attributes = (context?.fields ?? [:]).mapValues(Self.json)
        var location: [String: JSONValue] = [:]
        if let field = options.locationPropertiesField, case .object(let members)? = attributes[field] {
            location = members
            attributes[field] = nil
        }
        let visitor = sdk.createContext(visitorId: visitorId, attributes: attributes)
        if !location.isEmpty { visitor.setLocationProperties(location) }
        return visitor
    }

    /// A field as JSON: numbers as numbers, dates as ISO 8601 text, objects as they encode.
    static func json(_ field: OpenFeatureFieldValue) -> JSONValue {
        switch field {
        case .bool(let value): return .bool(value)
        case .string(let value): return .string(value)
        case .int(let value): return .number(Double(value))
        case .double(let value): return .number(value)
        case .date(let value): return .string(ISO8601DateFormatter().string(from: value))
        case .object(let value):
            guard let data = try? JSONEncoder().encode(value),
                  let json = try? JSONDecoder().decode(JSONValue.self, from: data) else { return .null }
            return json
        }
    }
}

extension ConvertOpenFeatureProvider.Outcome where Value == String {
    /// An experience decision: the variation's key, or the default without a variation.
    static func variation(_ detail: VariationDetail) -> Self {
        if let code = detail.errorCode {
            return .error(ConvertOpenFeatureProvider.code(code), "experience \"\(detail.experienceKey)\": \(code.rawValue)")
        }
        let metadata = ConvertOpenFeatureProvider.metadata(detail)
        guard let variant = detail.variant else { return .none(reason: detail.reason, variant: nil, metadata: metadata) }
        return .value(variant, reason: detail.reason, variant: variant, metadata: metadata)
    }
}
