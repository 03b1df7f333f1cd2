import ConvertSynchronization
import Foundation

// Redirections and calls: each command sent to its slot's master, redirections followed.
extension RedisClusterClient {
    // MARK: Redirections

    /// A `MOVED` or `ASK` reply: where the slot is (`MOVED`) or where to ask once (`ASK`).
    struct Redirect: Equatable {
        let ask: Bool
        let slot: Int
        let host: String
        let port: Int

        /// The redirection in `message` (`MOVED 3999 127.0.0.1:6381`), if it is one.
        init?(_ message: String) {
            let parts = message.split(separator: " ")
            guard parts.count == 3, parts[0] == "MOVED" || parts[0] == "ASK", let slot = Int(parts[1]),
                  let colon = parts[2].lastIndex(of: ":"), let port = Int(parts[2][parts[2].index(after: colon)...])
            else { return nil }
            ask = parts[0] == "ASK"
            self.slot = slot
            var host = String(parts[2][..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            self.host = host
            self.port = port
        }
    }

    /// The first redirection among `replies`.
    static func redirect(in replies: some Collection<RESPValue>) -> Redirect? {
        for reply in replies {
            if case .error(let message) = reply, message.hasPrefix("MOVED ") || message.hasPrefix("ASK ") {
                return Redirect(message)
            }
        }
        return nil
    }

    private static let asking = EncodedCommands([["ASKING"]], keyPrefix: "")

    // MARK: Calls

    /// A call's failure, and whether it concerned one part of the cluster only when it happened
    /// (see ``isPartFailure(at:)``): told by the call, which knows the node it reached, rather
    /// than by a look at the map afterwards, which may have moved on since.
    package struct CallFailure: Error, Sendable {
        /// What the call met.
        package let error: RedisError
        /// Whether the node the call reached could not be reached, was no longer a master, or
        /// did not answer in time, while another master answered.
        package let isPart: Bool
    }

    /// `error`, met by a call at `node`, as the call's failure.
    private func failure(_ error: RedisError, at node: RedisClient) -> CallFailure {
        switch error {
        case .connectionFailed: CallFailure(error: error, isPart: isPartFailure(at: node))
        // A timeout is one part's while another master answers: the node is down (its pool took
        // the wait for an outage), or it was not, and the call's budget went waiting for a
        // pooled connection or a redirection, which says nothing about the rest of the cluster.
        case .timeout: CallFailure(error: error, isPart: othersAnswer(beside: node))
        default: CallFailure(error: error, isPart: false)
        }
    }

    /// Commands for one slot (`nil`: any node), sent together.
    struct Unit: Sendable {
        var slot: Int?
        var payload: RedisClient.Payload
        var count: Int
    }

    /// Sends `commands` (all about one slot) to that slot's master, blocking the calling thread,
    /// following one redirection; within one `commandTimeout`.
    private func perform(_ commands: [RedisCommand], slot: Int?) throws(CallFailure) -> [RESPValue] {
        let deadline = ContinuousClock.now + configuration.commandTimeout
        let node = owner(of: slot)
        let replies: [RESPValue]
        do {
            replies = try node.perform(.commands(commands), count: commands.count, deadline: deadline)
        } catch {
            throw failure(error, at: node)
        }
        guard let redirect = Self.redirect(in: replies) else { return replies }
        let target = follow(redirect)
        do {
            if redirect.ask {
                // `ASKING` holds for one command: it goes before each.
                let asked = try target.perform(.commands(commands.flatMap { [["ASKING"], $0] }), count: 2 * commands.count,
                                               deadline: deadline)
                return asked.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            }
            return try target.perform(.commands(commands), count: commands.count, deadline: deadline)
        } catch {
            throw failure(error, at: target)
        }
    }

    /// Sends each unit to its slot's master: the units of one master in one pipeline, the masters
    /// at once; a unit redirected is sent once more where it was told. One reply list per unit,
    /// in order; within one `commandTimeout`.
    func perform(_ units: [Unit], slow: Bool) async throws(CallFailure) -> [[RESPValue]] {
        let deadline = ContinuousClock.now + configuration.commandTimeout
        var replies = [[RESPValue]](repeating: [], count: units.count)
        var groups: [(node: RedisClient, asking: Bool, units: [Int])] = []
        var index: [ObjectIdentifier: Int] = [:]
        for (unit, value) in units.enumerated() {
            let node = owner(of: value.slot)
            if let group = index[ObjectIdentifier(node)] { groups[group].units.append(unit) } else {
                index[ObjectIdentifier(node)] = groups.count
                groups.append((node, false, [unit]))
            }
        }
        try await send(groups, units, slow: slow, deadline: deadline, into: &replies)
        var retries: [(node: RedisClient, asking: Bool, units: [Int])] = []
        var retryIndex: [String: Int] = [:]
        for unit in units.indices {
            guard let redirect = Self.redirect(in: replies[unit]) else { continue }
            let node = follow(redirect)
            let key = "\(ObjectIdentifier(node).hashValue)-\(redirect.ask)"
            if let group = retryIndex[key] { retries[group].units.append(unit) } else {
                retryIndex[key] = retries.count
                retries.append((node, redirect.ask, [unit]))
            }
        }
        if !retries.isEmpty { try await send(retries, units, slow: slow, deadline: deadline, into: &replies) }
        return replies
    }

    private func send(_ groups: [(node: RedisClient, asking: Bool, units: [Int])], _ units: [Unit], slow: Bool,
                      deadline: ContinuousClock.Instant, into replies: inout [[RESPValue]]) async throws(CallFailure) {
        let prefix = configuration.keyPrefix
        // How each unit was sent after `ASKING`: before each of its commands (`ASKING` holds
        // for one), or, for bytes this package did not write, once before the unit.
        enum Asked { case not, eachCommand, once }
        func payload(_ group: (node: RedisClient, asking: Bool, units: [Int])) -> (RedisClient.Payload, Int, [Asked]) {
            if !group.asking, group.units.count == 1 {
                return (units[group.units[0]].payload, units[group.units[0]].count, [.not])
            }
            var bytes: [UInt8] = []
            var count = 0
            var layout: [Asked] = []
            for unit in group.units {
                let encoded = units[unit].payload.encoded(keyPrefix: prefix)
                if !group.asking {
                    bytes += encoded.bytes
                    count += encoded.count
                    layout.append(.not)
                } else if let interleaved = encoded.interleaving(Self.asking) {
                    bytes += interleaved.bytes
                    count += interleaved.count
                    layout.append(.eachCommand)
                } else {
                    bytes += Self.asking.bytes + encoded.bytes
                    count += 1 + encoded.count
                    layout.append(.once)
                }
            }
            return (.encoded(EncodedCommands(bytes: bytes, count: count)), count, layout)
        }
        func split(_ group: (node: RedisClient, asking: Bool, units: [Int]), _ layout: [Asked], _ flat: [RESPValue],
                   into replies: inout [[RESPValue]]) {
            var position = 0
            for (unit, asked) in zip(group.units, layout) {
                let sent = switch asked {
                case .not: units[unit].count
                case .eachCommand: 2 * units[unit].count
                case .once: 1 + units[unit].count
                }
                let end = min(position + sent, flat.count)
                let answered = flat[min(position, end)..<end]
                replies[unit] = switch asked {
                case .not: Array(answered)
                case .eachCommand: answered.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
                case .once: Array(answered.dropFirst())
                }
                position = end
            }
        }
        if groups.count == 1 {
            let (payload, count, layout) = payload(groups[0])
            let flat: [RESPValue]
            do {
                flat = try await groups[0].node.perform(payload, count: count, slow: slow, deadline: deadline)
            } catch {
                throw failure(error, at: groups[0].node)
            }
            split(groups[0], layout, flat, into: &replies)
            return
        }
        let built = groups.map(payload)
        let outcomes = await withTaskGroup(of: Outcome.self) { tasks in
            for (number, group) in groups.enumerated() {
                let (payload, count, _) = built[number]
                let node = group.node
                // The outcome built after the call, not returned from inside a typed `do`/`catch`:
                // Swift 6.3's optimised build returned a garbage group number from the latter.
                tasks.addTask {
                    let result: Result<[RESPValue], RedisError>
                    do {
                        result = .success(try await node.perform(payload, count: count, slow: slow, deadline: deadline))
                    } catch {
                        result = .failure(error as? RedisError ?? .connectionFailed(reason: "\(error)"))
                    }
                    return Outcome(group: number, result: result)
                }
            }
            var outcomes: [Outcome] = []
            for await outcome in tasks { outcomes.append(outcome) }
            return outcomes
        }
        for outcome in outcomes.sorted(by: { $0.group < $1.group }) {
            switch outcome.result {
            case .success(let flat): split(groups[outcome.group], built[outcome.group].2, flat, into: &replies)
            case .failure(let error): throw failure(error, at: groups[outcome.group].node)
            }
        }
    }

    /// What one master answered to its group of a pipeline.
    private struct Outcome: Sendable {
        let group: Int
        let result: Result<[RESPValue], RedisError>
    }

    /// Units of `commands`: one when every key is in one slot, else one per command.
    private func units(_ commands: [RedisCommand]) -> [Unit] {
        let slots = commands.map(slot(of:))
        let keyed = Set(slots.compactMap { $0 })
        if keyed.count <= 1 { return [Unit(slot: keyed.first, payload: .commands(commands), count: commands.count)] }
        return zip(commands, slots).map { Unit(slot: $1, payload: .commands([$0]), count: 1) }
    }

    /// Sends one command to its key's master; an error reply throws
    /// ``RedisError/serverError(message:)`` (in a ``CallFailure``).
    @discardableResult
    package func send(_ command: RedisCommand) async throws(CallFailure) -> RESPValue {
        let reply = try await perform([Unit(slot: slot(of: command), payload: .commands([command]), count: 1)], slow: false)[0][0]
        if let message = reply.errorMessage { throw CallFailure(error: .reply(message), isPart: false) }
        return reply
    }

    /// `commands`, each to its key's master (in one pipeline per master), one result per
    /// command, in order. Throws only when a connection fails.
    package func pipeline(_ commands: [RedisCommand], slow: Bool = false) async throws(CallFailure) -> [Result<RESPValue, RedisError>] {
        guard !commands.isEmpty else { return [] }
        return try await perform(units(commands), slow: slow).flatMap { $0 }.map(RedisClient.result)
    }

    /// ``pipeline(_:slow:)`` blocking the calling thread (for the claims made while a decision is
    /// answered): commands in one slot in one pipeline, else one after the other.
    package func pipeline(_ commands: [RedisCommand]) throws(CallFailure) -> [Result<RESPValue, RedisError>] {
        var replies: [RESPValue] = []
        for unit in units(commands) {
            guard case .commands(let part) = unit.payload else { continue }
            replies += try perform(part, slot: unit.slot)
        }
        return replies.map(RedisClient.result)
    }

    /// Encoded commands per key (the key with its prefix), one pipeline per master: one result
    /// list per entry, in order.
    package func pipeline(keyed entries: [(key: String, commands: EncodedCommands)], slow: Bool) async throws(CallFailure)
        -> [[Result<RESPValue, RedisError>]] {
        guard !entries.isEmpty else { return [] }
        let units = entries.map { Unit(slot: Self.slot(of: $0.key), payload: .encoded($0.commands), count: $0.commands.count) }
        return try await perform(units, slow: slow).map { $0.map(RedisClient.result) }
    }
}
