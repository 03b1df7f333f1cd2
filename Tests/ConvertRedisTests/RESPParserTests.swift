import ConvertRedis
import Foundation
import Testing

/// Every value `bytes` parses into, fed in one piece or in pieces of `chunk` bytes.
private func parse(_ bytes: [UInt8], chunk: Int? = nil, limits: RESPParser.Limits = .init()) throws(RedisError) -> [RESPValue] {
    var parser = RESPParser(limits: limits)
    var values: [RESPValue] = []
    var offset = 0
    repeat {
        let end = chunk.map { min(offset + $0, bytes.count) } ?? bytes.count
        parser.append(bytes[offset..<end])
        offset = end
        while let value = try parser.next() { values.append(value) }
    } while offset < bytes.count
    return values
}

private func parse(_ text: String, chunk: Int? = nil, limits: RESPParser.Limits = .init()) throws(RedisError) -> [RESPValue] {
    try parse(Array(text.utf8), chunk: chunk, limits: limits)
}

private func protocolErrorReason(_ text: String, limits: RESPParser.Limits = .init()) -> String? {
    do {
        _ = try parse(text, limits: limits)
        return nil
    } catch {
        guard case .protocolError(let reason) = error else { return "wrong error: \(error)" }
        return reason
    }
}

@Suite struct RESPParserTests {
    static let mixed = "+OK\r\n-ERR unknown command 'FOO'\r\n:-42\r\n$5\r\nhe\r\no\r\n$0\r\n\r\n$-1\r\n*-1\r\n*0\r\n"
        + "*3\r\n:1\r\n*2\r\n$1\r\na\r\n*1\r\n+in\r\n$-1\r\n"
    static let expected: [RESPValue] = [
        .simpleString("OK"), .error("ERR unknown command 'FOO'"), .integer(-42), .bulkString(Data("he\r\no".utf8)),
        .bulkString(Data()), .bulkString(nil), .array(nil), .array([]),
        .array([.integer(1), .array([.bulkString(Data("a".utf8)), .array([.simpleString("in")])]), .bulkString(nil)]),
    ]

    @Test func encodesACommandAsAnArrayOfBulkStrings() {
        let command: RedisCommand = ["HSET", .key("v:1"), "name", .data(Data([0, 13, 10, 255])), 7]
        let bytes = RESPEncoder.encode(command, keyPrefix: "app:")
        let expected = Array("*5\r\n$4\r\nHSET\r\n$7\r\napp:v:1\r\n$4\r\nname\r\n$4\r\n".utf8) + [0, 13, 10, 255]
            + Array("\r\n$1\r\n7\r\n".utf8)
        #expect(bytes == expected)
    }

    @Test func theWriterWritesWhatTheEncoderWrites() {
        var writer = RESPWriter(keyPrefix: "app:")
        writer.command("HSET", arguments: 4)
        writer.key("v:1")
        writer.argument("name")
        writer.argument(bytes: [0, 13, 10, 255])
        writer.argument(-7)
        writer.command("PEXPIRE", arguments: 2)
        writer.key("v:1")
        writer.argument(86_400_000)
        let commands: [RedisCommand] = [["HSET", .key("v:1"), "name", .data(Data([0, 13, 10, 255])), -7],
                                        ["PEXPIRE", .key("v:1"), 86_400_000]]
        #expect(writer.encoded.bytes == EncodedCommands(commands, keyPrefix: "app:").bytes)
        #expect(writer.commandCount == 2)
    }

    @Test func aPreludeGoesBeforeEveryCommandOfAnEncodedUnit() throws {
        let asking = EncodedCommands([["ASKING"]], keyPrefix: "")
        var writer = RESPWriter(keyPrefix: "app:")
        writer.command("HSETNX", arguments: 3)
        writer.key("v:1")
        writer.argument("d:e")
        writer.argument(bytes: Array("\r\n*2$".utf8))
        writer.command("PEXPIRE", arguments: 2)
        writer.key("v:1")
        writer.argument("1000")
        let interleaved = try #require(writer.encoded.interleaving(asking))
        let expected = EncodedCommands([["ASKING"], ["HSETNX", .key("v:1"), "d:e", .data(Data("\r\n*2$".utf8))], ["ASKING"],
                                        ["PEXPIRE", .key("v:1"), "1000"]], keyPrefix: "app:")
        #expect(interleaved.bytes == expected.bytes)
        #expect(interleaved.count == 4)
        // Bytes that are not whole commands are refused rather than cut anywhere.
        #expect(EncodedCommands(bytes: Array(writer.encoded.bytes.dropLast()), count: 2).interleaving(asking) == nil)
        #expect(EncodedCommands(bytes: writer.encoded.bytes, count: 3).interleaving(asking) == nil)
        #expect(EncodedCommands(bytes: Array("+OK\r\n".utf8), count: 1).interleaving(asking) == nil)
    }

    @Test func encodedCommandsParseBackAsArrays() throws {
        let bytes = RESPEncoder.encode(["SET", "k", .data(Data("v\r\n".utf8))])
        #expect(try parse(bytes) == [.array([.bulkString(Data("SET".utf8)), .bulkString(Data("k".utf8)),
                                             .bulkString(Data("v\r\n".utf8))])])
    }

    @Test func pipelinedRepliesInOneChunkComeOutInOrder() throws {
        #expect(try parse(Self.mixed) == Self.expected)
    }

    @Test(arguments: [1, 2, 3, 7])
    func repliesSplitAnywhereParseTheSame(chunk: Int) throws {
        #expect(try parse(Self.mixed, chunk: chunk) == Self.expected)
    }

    @Test func aPartialReplyWaitsForItsBytes() throws {
        var parser = RESPParser()
        parser.append(Array("*2\r\n$3\r\nfo".utf8))
        #expect(try parser.next() == nil)
        #expect(parser.hasPendingInput)
        parser.append(Array("o\r\n:".utf8))
        #expect(try parser.next() == nil)
        parser.append(Array("9\r\n+next\r\n".utf8))
        #expect(try parser.next() == .array([.bulkString(Data("foo".utf8)), .integer(9)]))
        #expect(try parser.next() == .simpleString("next"))
        #expect(try parser.next() == nil)
        #expect(!parser.hasPendingInput)
    }

    @Test func integersCoverTheFullRange() throws {
        #expect(try parse(":9223372036854775807\r\n:-9223372036854775808\r\n:0\r\n")
            == [.integer(.max), .integer(.min), .integer(0)])
        #expect(protocolErrorReason(":9223372036854775808\r\n")?.contains("overflows") == true)
        #expect(protocolErrorReason(":-9223372036854775809\r\n")?.contains("overflows") == true)
    }

    @Test(arguments: [
        "HTTP/1.1 400 Bad Request\r\n\r\n",  // not RESP at all
        "%1\r\n+a\r\n+b\r\n",                 // a RESP3 map
        ":12a\r\n",                           // not a number
        ":\r\n",                              // empty integer
        "$-2\r\n",                            // negative length
        "*-5\r\n",
        "$3\r\nabcd\r\n",                     // bulk longer than announced
        "+OK\rX",                             // CR without LF
        "+OK\n",                              // LF without CR
        "*2\r\n:1\r\n?\r\n",                  // garbage inside an array
    ])
    func garbageIsAProtocolError(input: String) {
        #expect(protocolErrorReason(input) != nil)
    }

    @Test func aFailedParserKeepsFailing() {
        var parser = RESPParser()
        parser.append(Array("!oops\r\n+OK\r\n".utf8))
        #expect(throws: RedisError.self) { try parser.next() }
        parser.append(Array("+OK\r\n".utf8))
        #expect(throws: RedisError.self) { try parser.next() }
    }

    @Test func anOversizeBulkLengthIsRejectedBeforeItsBytesArrive() {
        // The default is sized for visitor data (4 MiB); one more byte is refused from the header alone.
        let reason = protocolErrorReason("$\(4 << 20 + 1)\r\n")
        #expect(reason?.contains("exceeds") == true)
        #expect(protocolErrorReason("$536870913\r\n")?.contains("exceeds") == true)
        #expect(protocolErrorReason("$99999999999999999999\r\n") != nil)
        let small = RESPParser.Limits(maxBulkLength: 4)
        #expect(protocolErrorReason("$5\r\n", limits: small)?.contains("exceeds") == true)
        #expect((try? parse("$4\r\nabcd\r\n", limits: small)) == [.bulkString(Data("abcd".utf8))])
    }

    @Test func anOversizeArrayOrReplyIsRejected() {
        #expect(protocolErrorReason("*4\r\n", limits: .init(maxArrayLength: 3))?.contains("exceeds") == true)
        let tight = RESPParser.Limits(maxReplyBytes: 20)
        #expect(protocolErrorReason("*3\r\n$5\r\nabcde\r\n$5\r\nabcde\r\n", limits: tight)?.contains("reply exceeds") == true)
        // The budget is per reply: many small replies in a row are fine.
        #expect((try? parse(String(repeating: "+OK\r\n", count: 10), limits: tight))?.count == 10)
    }

    @Test func amplifyingRepliesAreRefusedByDefault() {
        // 16M one-byte elements (48 MB on the wire) would cost 410 MB once parsed.
        #expect(protocolErrorReason("*16777216\r\n")?.contains("exceeds") == true)
        // Arrays within the per-array limit, nested: the values of one reply are counted.
        let wide = "*65536\r\n" + String(repeating: ":1\r\n", count: 65_536)
        #expect(protocolErrorReason("*5\r\n" + String(repeating: wide, count: 5))?.contains("more than") == true)
        // The same values as separate replies are fine: the budget is per reply.
        #expect((try? parse(String(repeating: wide, count: 5)))?.count == 5)
    }

    @Test func aReplyIsDescribedByItsTypeAndSizeOnly() {
        let secretish = RESPValue.bulkString(Data(String(repeating: "s", count: 100).utf8))
        #expect(secretish.summary == "bulk string of 100 bytes")
        #expect(RESPValue.array(Array(repeating: secretish, count: 3)).summary == "array of 3 elements")
        #expect(RESPValue.error("ERR x").summary == "error reply of 5 bytes")
    }

    @Test func deepNestingIsRejected() {
        let limits = RESPParser.Limits(maxDepth: 8)
        #expect((try? parse(String(repeating: "*1\r\n", count: 8) + ":1\r\n", limits: limits))?.count == 1)
        #expect(protocolErrorReason(String(repeating: "*1\r\n", count: 9) + ":1\r\n", limits: limits)?.contains("nested") == true)
        // The default limit holds against a stream of array headers, without recursion.
        #expect(protocolErrorReason(String(repeating: "*1\r\n", count: 100_000)) != nil)
    }

    @Test func anEndlessLineIsRejected() {
        let limits = RESPParser.Limits(maxLineLength: 16)
        #expect(protocolErrorReason("+" + String(repeating: "a", count: 17), limits: limits)?.contains("longer") == true)
        #expect(protocolErrorReason("+" + String(repeating: "a", count: 16), limits: limits) == nil)
    }
}

@Suite struct RESPFuzzHarnessTests {
    @Test func theFuzzCheckHoldsOnSeedsAndOnRandomAndMutatedReplies() {
        var generator = SystemRandomNumberGenerator()
        let seeds = [RESPParserTests.mixed, "*2\r\n$3\r\nfoo\r\n:7\r\n", "*9\r\n", "$5\r\nab", "-ERR\r\n+OK\r\n"]
        var parsed = 0
        for seed in seeds {
            for first in [0, 7, 200] as [UInt8] { parsed += RESPFuzzCheck.run([first] + Array(seed.utf8)) }
        }
        #expect(parsed > 0, "the seeds parse")
        let alphabet = Array("*$:+-\r\n0123456789-1ab".utf8)
        for _ in 0..<2_000 {
            let count = Int.random(in: 1...120, using: &generator)
            RESPFuzzCheck.run((0..<count).map { _ in alphabet.randomElement(using: &generator)! })
            var mutated = Array(RESPParserTests.mixed.utf8)
            mutated[Int.random(in: 0..<mutated.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            RESPFuzzCheck.run([UInt8.random(in: 0...255, using: &generator)] + mutated)
        }
    }
}
