// The decision room's results (variations, features, details, snapshots) are part of this
// module's API.
@_exported import ConvertDecision
