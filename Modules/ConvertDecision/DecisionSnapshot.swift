import ConvertModel
import ConvertRules
import Foundation

/// One visitor's decisions, taken on one SDK to be rendered somewhere else: the experiences the
/// visitor is in with their variations and changes, and every feature with its variables.
///
/// Take one with ``ConvertContext/snapshot(exposure:)``, send its ``jsonData()`` to a client, and
/// answer there from it alone (``ConvertSwiftSDK/init(snapshot:configuration:ports:)``) without
/// the config.
///
/// The JSON form is stable: keys sorted, no white space, dates in ISO 8601 without fractional
/// seconds (UTC), experiences and features in the order of the config they were decided on.
/// The same snapshot always encodes to the same bytes, and decoding them gives it back.
///
/// ```swift
/// let snapshot = try #require(context.snapshot(exposure: .none))
/// let body = try snapshot.jsonData()
/// // on the client:
/// let received = try DecisionSnapshot(jsonData: body)
/// ```
public struct DecisionSnapshot: Codable, Sendable, Hashable {
    /// The visitor decided for.
    public let visitorId: String
    /// The account of the config decided on; tracking goes to it.
    public let accountId: String
    /// The project of the config decided on; tracking goes to it.
    public let projectId: String
    /// Which config the decisions were made on: a 64-bit fingerprint of its content (16 hex
    /// digits) leaving out the serving timestamp, so re-fetching an unchanged config keeps it;
    /// the revision `convert generate` writes into a keys file.
    public let configRevision: String
    /// When the snapshot was taken, to the second.
    public let takenAt: Date
    /// The experiences that gave the visitor a variation, in config order.
    public let experiences: [DecidedExperience]
    /// Every feature of the config, enabled or disabled, in config order.
    public let features: [DecidedFeature]
    /// The project's goals without their rules: an SDK made from the snapshot tracks
    /// conversions on them (a conversion with rule data is for where the snapshot was taken).
    public let goals: [SnapshotGoal]

    /// A goal a conversion can be tracked on.
    public struct SnapshotGoal: Codable, Sendable, Hashable {
        /// The goal's id, sent in conversion events.
        public let id: String
        /// The key `trackConversion` takes.
        public let key: String

        /// A goal of `id` and `key`.
        package init(id: String, key: String) {
            self.id = id
            self.key = key
        }
    }

    /// An experience decided for the visitor and the variation it gave.
    public struct DecidedExperience: Codable, Sendable, Hashable {
        /// The experience's id.
        public let experienceId: String
        /// The experience's key.
        public let experienceKey: String
        /// The variation's id.
        public let variationId: String
        /// The variation's key; `nil` when the config gives none.
        public let variationKey: String?
        /// Whether the decision's bucketing event was sent when the snapshot was taken, so a
        /// client must not send it again: queued by the snapshot's own decision (taken with
        /// ``Exposure/automatic``, tracking on, the visitor consenting), or recorded as sent by
        /// ``ConvertContext/trackExposure(forExperience:)``, on that SDK or on another sharing its
        /// visitor data. `false` means not sent yet: a decision with ``Exposure/none``, one with
        /// ``Exposure/manual`` awaiting its exposure, tracking off, no consent, a forced or a
        /// previewed variation.
        ///
        /// Of a decision stored before the snapshot, the visitor's data records a manual or a
        /// withheld (``Exposure/none``) exposure; an automatic one counts as sent when it was
        /// made if the snapshot is taken with ``Exposure/automatic`` (tracking on, the visitor
        /// consenting), as not sent otherwise.
        public let isTracked: Bool
        /// The changes the variation applies, as ``BucketedVariation/changes`` gives them.
        public let changes: [Change]

        package enum CodingKeys: String, CodingKey {
            case experienceId, experienceKey, variationId, variationKey, changes
            case isTracked = "tracked"
        }

        package init(experienceId: String, experienceKey: String, variationId: String, variationKey: String?,
                     isTracked: Bool, changes: [Change]) {
            self.experienceId = experienceId
            self.experienceKey = experienceKey
            self.variationId = variationId
            self.variationKey = variationKey
            self.isTracked = isTracked
            self.changes = changes
        }
    }

    /// One change of a variation (see ``VariationChange``).
    public struct Change: Codable, Sendable, Hashable {
        /// The change's id; `nil` when the config gives none.
        public let id: String?
        /// The change's type; `fullStackFeature` for one that carries a feature.
        public let type: String?
        /// The feature the change carries, if it carries one.
        public let featureId: String?
        /// The feature's variable values as the config writes them (uncast).
        public let variables: [String: JSONValue]

        package init(id: String?, type: String?, featureId: String?, variables: [String: JSONValue]) {
            self.id = id
            self.type = type
            self.featureId = featureId
            self.variables = variables
        }
    }

    /// A feature as the visitor got it (see ``BucketedFeature``).
    public struct DecidedFeature: Codable, Sendable, Hashable {
        /// The feature's key.
        public let key: String
        /// The feature's id.
        public let id: String
        /// The feature's name; `nil` when the config gives none.
        public let name: String?
        /// On or off.
        public let status: BucketedFeature.Status
        /// The experience whose variation switched it on; `nil` when it is off (or forced on).
        public let experienceId: String?
        /// The key of that experience.
        public let experienceKey: String?
        /// The id of the variation that switched it on.
        public let variationId: String?
        /// The key of that variation.
        public let variationKey: String?
        /// The variables, cast to their declared types; empty when the feature is off.
        public let variables: [String: JSONValue]

        package init(key: String, id: String, name: String?, status: BucketedFeature.Status, experienceId: String?,
                     experienceKey: String?, variationId: String?, variationKey: String?, variables: [String: JSONValue]) {
            self.key = key
            self.id = id
            self.name = name
            self.status = status
            self.experienceId = experienceId
            self.experienceKey = experienceKey
            self.variationId = variationId
            self.variationKey = variationKey
            self.variables = variables
        }

        /// Whether ``status`` is ``BucketedFeature/Status/enabled``.
        public var isEnabled: Bool { status == .enabled }
    }

    /// Assembles a snapshot; `takenAt` is kept to the second, as the JSON form holds it.
    package init(visitorId: String, accountId: String, projectId: String, configRevision: String, takenAt: Date,
                 experiences: [DecidedExperience], features: [DecidedFeature], goals: [SnapshotGoal]) {
        self.visitorId = visitorId
        self.accountId = accountId
        self.projectId = projectId
        self.configRevision = configRevision
        self.takenAt = Date(timeIntervalSince1970: takenAt.timeIntervalSince1970.rounded(.down))
        self.experiences = experiences
        self.features = features
        self.goals = goals
    }

    /// The experience with this key, if it gave the visitor a variation.
    public func experience(key: String) -> DecidedExperience? {
        experiences.first { $0.experienceKey == key }
    }

    /// The feature with this key, if the config declares it.
    public func feature(key: String) -> DecidedFeature? {
        features.first { $0.key == key }
    }

    /// A new encoder writing the stable form: sorted keys, no white space, slashes unescaped,
    /// dates in ISO 8601 without fractional seconds.
    public static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }

    /// A new decoder reading what ``encoder`` writes.
    public static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// The snapshot in its stable JSON form (``encoder``).
    public func jsonData() throws -> Data {
        try Self.encoder.encode(self)
    }

    /// Reads a snapshot from its JSON form (``jsonData()``).
    public init(jsonData: Data) throws {
        self = try Self.decoder.decode(DecisionSnapshot.self, from: jsonData)
    }
}
