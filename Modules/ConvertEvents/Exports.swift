// Tracking events and the sink port were part of this module; re-exported so code that imports
// ConvertEvents for them still compiles.
@_exported import ConvertTracking
