import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Random (version 4) UUIDs as lowercase text, the form `UUID().uuidString.lowercased()` gives.
///
/// Foundation's `UUID()` opens, reads and closes `/dev/urandom` on every call on Linux (three
/// system calls, about 5 µs: a server's cost for each new visitor). Here the kernel's generator
/// is read 4 KiB at a time (one system call for 256 UUIDs), and a forked child reads afresh.
package enum RandomUUID {
    /// A new random UUID, e.g. `"0b3e4c9a-7f21-4d6e-9a1c-5e8f2b7d4a10"`.
    package static func string() -> String {
        let (high, low) = pool.withLock { $0.next() }
        return string(high: high, low: low)
    }

    private static let pool = Mutex(RandomPool())

    /// The UUID whose first eight bytes are `high` and last eight `low` (big-endian), with the
    /// version (4) and variant (RFC 9562) bits set.
    package static func string(high: UInt64, low: UInt64) -> String {
        let high = (high & ~0xF000) | 0x4000
        let low = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { text in
            var at = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    text[at] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xF)]
                    at += 1
                }
            }
            func dash() {
                text[at] = UInt8(ascii: "-")
                at += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return at
        }
    }
}

/// Random words from the kernel's generator, read a buffer at a time. Copies share nothing but
/// the fork count: a child process forked after a read discards what its parent had read, so
/// the two never hand out the same words.
package struct RandomPool: Sendable {
    private static let capacity = 512
    /// `/dev/urandom`, opened once; negative when it cannot be (each call then asks the system
    /// generator, as `SystemRandomNumberGenerator` does).
    private static let device: Int32 = {
        RandomPool.watchForks()
        return open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    }()
    private static let forks = Atomic<Int>(0)

    private var words: [UInt64] = []
    private var used = 0
    private var forksSeen = 0

    package init() {}

    /// Two random words.
    package mutating func next() -> (UInt64, UInt64) {
        let forks = Self.forks.load(ordering: .relaxed)
        if used + 2 > words.count || forks != forksSeen {
            forksSeen = forks
            guard refill() else {
                var system = SystemRandomNumberGenerator()
                return (system.next(), system.next())
            }
        }
        defer { used += 2 }
        return (words[used], words[used + 1])
    }

    /// What a fork does to every pool: the next call reads afresh.
    package static func noteFork() {
        forks.add(1, ordering: .relaxed)
    }

    private static func watchForks() {
        _ = pthread_atfork(nil, nil, { RandomPool.noteFork() })
    }

    private mutating func refill() -> Bool {
        let device = Self.device
        guard device >= 0 else { return false }
        if words.count != Self.capacity { words = [UInt64](repeating: 0, count: Self.capacity) }
        let complete = words.withUnsafeMutableBytes { buffer -> Bool in
            var filled = 0
            while filled < buffer.count {
                let count = read(device, buffer.baseAddress! + filled, buffer.count - filled)
                if count > 0 {
                    filled += count
                } else if count < 0 && errno == EINTR {
                    continue
                } else {
                    return false
                }
            }
            return true
        }
        guard complete else {
            words = []
            return false
        }
        used = 0
        return true
    }
}
