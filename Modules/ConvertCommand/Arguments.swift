import Foundation

/// A usage error: names the bad argument; the command exits with status 2.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A failure while running (unreadable input, a failed fetch); the command exits with status 1.
struct RuntimeError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `--name value` options and `--flag` switches, nothing positional.
struct Arguments {
    private var values: [String: String] = [:]
    private var repeated: [String: [String]] = [:]
    private var switches: Set<String> = []

    /// Parses `arguments` against the allowed option and switch names; `repeatable` options may
    /// be given several times (``values(_:)``).
    init(_ arguments: [String], options: Set<String>, flags: Set<String>, repeatable: Set<String> = []) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--") else { throw UsageError("unexpected argument \"\(argument)\"") }
            let name = String(argument.dropFirst(2))
            if flags.contains(name) {
                switches.insert(name)
                index += 1
            } else if repeatable.contains(name) {
                guard index + 1 < arguments.count else { throw UsageError("--\(name) needs a value") }
                repeated[name, default: []].append(arguments[index + 1])
                index += 2
            } else if options.contains(name) {
                guard index + 1 < arguments.count else { throw UsageError("--\(name) needs a value") }
                guard values[name] == nil else { throw UsageError("--\(name) given twice") }
                values[name] = arguments[index + 1]
                index += 2
            } else {
                throw UsageError("unknown option --\(name)")
            }
        }
    }

    func value(_ name: String) -> String? { values[name] }

    /// Every value of a repeatable option, in order.
    func values(_ name: String) -> [String] { repeated[name] ?? [] }

    func required(_ name: String) throws -> String {
        guard let value = values[name] else { throw UsageError("--\(name) is required") }
        return value
    }

    func flag(_ name: String) -> Bool { switches.contains(name) }

    /// One of `allowed`, or `fallback` when the option is absent.
    func choice(_ name: String, of allowed: [String], default fallback: String) throws -> String {
        guard let text = values[name] else { return fallback }
        guard allowed.contains(text) else {
            throw UsageError("--\(name) must be one of \(allowed.joined(separator: ", ")), got \"\(text)\"")
        }
        return text
    }

    func integer(_ name: String, default fallback: Int) throws -> Int {
        guard let text = values[name] else { return fallback }
        guard let number = Int(text), number > 0 else { throw UsageError("--\(name) must be a positive whole number, got \"\(text)\"") }
        return number
    }
}
