/// The markers of manual exposures, kept with the visitor's goals so every store persists and
/// shares them as it does goals, but never listed as goals: no config goal id has these
/// prefixes.
package enum ExposureMarker {
    private static let pendingPrefix = "exposure-pending:"
    private static let sentPrefix = "exposure:"
    private static let withheldPrefix = "exposure-none:"

    /// A decision made with a manual exposure whose event waits for `trackExposure`.
    package static func pending(experienceId: String, variationId: String) -> String {
        pendingPrefix + experienceId + "." + variationId
    }

    /// A decision made with no exposure: its event is never sent.
    package static func withheld(experienceId: String, variationId: String) -> String {
        withheldPrefix + experienceId + "." + variationId
    }

    /// The exposure sent.
    package static func sent(experienceId: String, variationId: String) -> String {
        sentPrefix + experienceId + "." + variationId
    }

    /// Whether `id` is a marker rather than a goal.
    package static func isMarker(_ id: String) -> Bool {
        id.hasPrefix(sentPrefix) || id.hasPrefix(pendingPrefix) || id.hasPrefix(withheldPrefix)
    }

    /// The experience id of a marker (`nil` for a goal).
    package static func experience(of id: String) -> String? {
        let rest: Substring
        if id.hasPrefix(pendingPrefix) {
            rest = id.dropFirst(pendingPrefix.count)
        } else if id.hasPrefix(withheldPrefix) {
            rest = id.dropFirst(withheldPrefix.count)
        } else if id.hasPrefix(sentPrefix) {
            rest = id.dropFirst(sentPrefix.count)
        } else {
            return nil
        }
        return rest.lastIndex(of: ".").map { String(rest[..<$0]) }
    }
}
