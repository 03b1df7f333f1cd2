// libFuzzer entry point over the RESP parser, fed whole and in input-chosen chunks.
//
//   swift build -c release --sanitize=fuzzer --product convert-fuzz-resp
//   .build/release/convert-fuzz-resp -runs=1000000
//
// Whole and chunked parses must agree, within small limits; a trap is a bug.
import ConvertRedis

@_cdecl("LLVMFuzzerTestOneInput")
public func respFuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    RESPFuzzCheck.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
