import ConvertRules
import Testing

@Suite struct JavaScriptFormTests {
    @Test(arguments: [
        (30.0, "30"), (30.5, "30.5"), (-0.0, "0"), (1.5, "1.5"), (0.1, "0.1"), (1e21, "1e+21"),
        (1e20, "100000000000000000000"), (123456789012345680000.0, "123456789012345680000"),
        (0.000001, "0.000001"), (0.0000001, "1e-7"), (1.5e-10, "1.5e-10"), (-42.25, "-42.25"),
        (8.333333333333334, "8.333333333333334"), (100299456, "100299456"), (2.5e25, "2.5e+25"),
        (Double.nan, "NaN"), (Double.infinity, "Infinity"), (-Double.infinity, "-Infinity"),
    ])
    func numberToString(value: Double, expected: String) {
        #expect(JavaScriptNumber.string(value) == expected)
    }

    @Test func stringification() {
        #expect(JSONValue.bool(true).javaScriptString == "true")
        #expect(JSONValue.null.javaScriptString == "null")
        #expect(JSONValue.array(["a", 1, .null, ["b", 2.5]]).javaScriptString == "a,1,,b,2.5")
        #expect(JSONValue.object(["a": 1]).javaScriptString == "[object Object]")
    }

    @Test func truthiness() {
        for falsy: JSONValue in [false, 0, "", .null, .number(.nan)] { #expect(!falsy.isTruthy) }
        for truthy: JSONValue in [true, 1, "0", "false", [], [:]] { #expect(truthy.isTruthy) }
    }
}
