import ConvertJSON

/// Why a config document could not be decoded at all.
///
/// Problems inside a well-formed document never throw: they degrade the element they touch and
/// are reported as ``ConfigDegradation``s.
public enum ConfigDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The input is empty or only whitespace.
    case empty
    /// The bytes are not valid JSON; `offset` is the byte where parsing stopped.
    case invalidJSON(offset: Int, reason: String)
    /// The JSON nests deeper than the parser allows.
    case tooDeep(offset: Int, limit: Int)
    /// The top-level JSON value is not an object; `found` names what it is.
    case notAnObject(found: String)
    /// The document lacks what every config must have (`account_id`, `project.id`).
    case missingIdentity(String)

    public var description: String {
        switch self {
        case .empty:
            return "config is empty"
        case .invalidJSON(let offset, let reason):
            return "config is not valid JSON: \(reason) at byte \(offset)"
        case .tooDeep(let offset, let limit):
            return "config nests deeper than \(limit) levels at byte \(offset)"
        case .notAnObject(let found):
            return "config must be a JSON object, found \(found)"
        case .missingIdentity(let what):
            return "config is missing \(what)"
        }
    }
}

extension ConfigDecodingError {
    /// The config-level reading of a parse failure.
    package init(_ error: JSONParseError) {
        switch error {
        case .empty: self = .empty
        case .invalidJSON(let offset, let reason): self = .invalidJSON(offset: offset, reason: reason)
        case .tooDeep(let offset, let limit): self = .tooDeep(offset: offset, limit: limit)
        }
    }
}

extension ConfigDecodingError {
    /// ``description`` with byte offsets given as line and column in `bytes`, the document
    /// that failed.
    package func description(locatingIn bytes: [UInt8]) -> String {
        func at(_ offset: Int) -> String {
            let (line, column) = JSONParser.lineAndColumn(ofByte: offset, in: bytes)
            return "line \(line), column \(column) (byte \(offset))"
        }
        switch self {
        case .invalidJSON(let offset, let reason): return "config is not valid JSON: \(reason) at \(at(offset))"
        case .tooDeep(let offset, let limit): return "config nests deeper than \(limit) levels at \(at(offset))"
        default: return description
        }
    }
}

