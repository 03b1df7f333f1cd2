// The JSON vocabulary is part of the rule engine's API: rules and the data they read are JSON.
@_exported import ConvertJSON
