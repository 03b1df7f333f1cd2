// libFuzzer entry point over the config decoder and the rule evaluator.
//
//   swift build -c release --sanitize=fuzzer --product convert-fuzz
//   mkdir -p fuzz-corpus && cp Tests/ConvertTesting/Fixtures/*.json fuzz-corpus/
//   .build/release/convert-fuzz fuzz-corpus -runs=1000000
//
// Every input must either decode (and then survive every rule and bucket table in it) or be
// rejected with a typed error; a trap is a bug.
import ConvertTesting

@_cdecl("LLVMFuzzerTestOneInput")
public func convertFuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = FuzzCheck.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
