import ConvertRules
import Testing

@Suite struct EqualityOperatorTests {
    @Test(arguments: ["equals", "equalsNumber", "matches"])
    func caseInsensitiveStringEquality(match: String) {
        #expect(check(["b": "Firefox"], "b", match, "firefox") == (true, false))
        #expect(check(["b": "Chrome"], "b", match, "firefox") == (false, true))
    }

    @Test func numbersAndNumericStringsCompareByTheirJavaScriptForm() {
        #expect(check(["age": "30"], "age", "equals", 30) == (true, false))
        #expect(check(["age": 30], "age", "equals", "30") == (true, false))
        #expect(check(["age": 30.0], "age", "equals", 30) == (true, false))
        #expect(check(["age": "30.0"], "age", "equals", 30) == (false, true))
        #expect(check(["r": 1.5], "r", "equalsNumber", "1.5") == (true, false))
        #expect(check(["flag": true], "flag", "equals", "TRUE") == (true, false))
        #expect(check(["flag": "true"], "flag", "equals", true) == (true, false))
    }

    @Test func arrayVisitorValueMeansExactMembership() {
        let data: [String: JSONValue] = ["tags": ["Red", "blue", 3]]
        #expect(check(data, "tags", "equals", "blue") == (true, false))
        #expect(check(data, "tags", "equals", "red") == (false, true))
        #expect(check(data, "tags", "equals", 3) == (true, false))
        #expect(check(data, "tags", "equals", "3") == (false, true))
    }

    @Test func objectVisitorValueMeansKeyMembership() {
        let data: [String: JSONValue] = ["plan": ["pro": true, "7": 1]]
        #expect(check(data, "plan", "equals", "pro") == (true, false))
        #expect(check(data, "plan", "equals", "free") == (false, true))
        #expect(check(data, "plan", "equals", 7) == (true, false))
        #expect(check(["plan": [:]], "plan", "equals", "[object Object]") == (true, false))
    }
}

@Suite struct OrderingOperatorTests {
    @Test func numbersAndNumericStrings() {
        #expect(check(["n": "29"], "n", "less", 30) == (true, false))
        #expect(check(["n": 30], "n", "less", "30") == (false, true))
        #expect(check(["n": 30], "n", "lessEqual", "30.0") == (true, false))
        #expect(check(["n": "31"], "n", "lessEqual", 30) == (false, true))
        #expect(check(["n": "-2.5"], "n", "less", -2) == (true, false))
        #expect(check(["n": ".5"], "n", "less", 1) == (true, false))
    }

    @Test func commaNumbers() {
        #expect(check(["n": "0,500"], "n", "less", 0.6) == (true, false))
        #expect(check(["n": "0,500"], "n", "less", 0.5) == (false, true))
        #expect(check(["n": "1,000"], "n", "lessEqual", 1000) == (true, false))
        #expect(check(["n": "1,000"], "n", "less", 999) == (false, true))
        #expect(check(["n": "12,345,678.5"], "n", "less", 12_345_679) == (true, false))
        #expect(JavaScriptNumber.parseNumeric("0,500") == 0.5)
        #expect(JavaScriptNumber.parseNumeric("1,000") == 1000)
        #expect(JavaScriptNumber.parseNumeric("1,00") == nil)
        #expect(JavaScriptNumber.parseNumeric("1234,567") == nil)
        #expect(JavaScriptNumber.parseNumeric("-.5") == -0.5)
        #expect(JavaScriptNumber.parseNumeric("1.") == nil)
        #expect(JavaScriptNumber.parseNumeric("") == nil)
        #expect(JavaScriptNumber.parseNumeric("1e3") == nil)
    }

    @Test func numberAgainstNonNumberIsFalseEvenNegated() {
        #expect(check(["n": "abc"], "n", "less", 30) == (false, false))
        #expect(check(["n": 5], "n", "lessEqual", "abc") == (false, false))
        #expect(check(["n": true], "n", "less", 30) == (false, false))
        #expect(check(["n": ["1"]], "n", "less", "2") == (false, false))
    }

    @Test func nonNumericStringsCompareLexicographically() {
        #expect(check(["s": "apple"], "s", "less", "banana") == (true, false))
        #expect(check(["s": "Zebra"], "s", "less", "apple") == (true, false))
        #expect(check(["s": "b"], "s", "lessEqual", "b") == (true, false))
        #expect(check(["s": "10a"], "s", "less", "9a") == (true, false))
    }
}

@Suite struct TextOperatorTests {
    @Test func contains() {
        #expect(check(["u": "https://Example.com/Pricing"], "u", "contains", "pricing") == (true, false))
        #expect(check(["u": "https://example.com"], "u", "contains", "blog") == (false, true))
        #expect(check(["u": "anything"], "u", "contains", "") == (true, false))
        #expect(check(["u": "anything"], "u", "contains", "   ") == (true, false))
        #expect(check(["n": 12345], "n", "contains", 234) == (true, false))
    }

    @Test func startsAndEndsWith() {
        #expect(check(["p": "/Shop/cart"], "p", "startsWith", "/shop") == (true, false))
        #expect(check(["p": "/shop/cart"], "p", "startsWith", "cart") == (false, true))
        #expect(check(["p": "/shop/CART"], "p", "endsWith", "cart") == (true, false))
        #expect(check(["p": "/shop/cart"], "p", "endsWith", "shop") == (false, true))
        #expect(check(["p": "x"], "p", "endsWith", "") == (true, false))
        #expect(check(["p": "x"], "p", "startsWith", "") == (true, false))
        #expect(check(["p": "ab"], "p", "endsWith", "xab") == (false, true))
    }

    @Test func isInLowercasesCandidatesButNotTheVisitorValue() {
        #expect(check(["c": "us"], "c", "isIn", "US|GB|de") == (true, false))
        #expect(check(["c": "US"], "c", "isIn", "US|GB") == (false, true))
        #expect(check(["c": "de"], "c", "isIn", ["US", "DE"]) == (true, false))
        #expect(check(["c": "fr|gb"], "c", "isIn", "gb") == (true, false))
        #expect(check(["c": 7], "c", "isIn", [7, 8]) == (true, false))
        #expect(check(["c": ["a", "b"]], "c", "isIn", "a,b") == (true, false))
        #expect(check(["c": "us"], "c", "isIn", 5) == (false, true))
    }

    @Test func regexMatchesSearchesCaseInsensitively() {
        #expect(check(["ua": "Mozilla/5.0 (iPhone)"], "ua", "regexMatches", "iphone|ipad") == (true, false))
        #expect(check(["ua": "Mozilla/5.0 (X11)"], "ua", "regexMatches", "^mozilla.*windows") == (false, true))
        #expect(check(["ua": "ABC"], "ua", "regexMatches", "^[A-C]+$") == (true, false))
    }

    @Test func invalidRegexIsFalseEvenNegated() {
        #expect(check(["ua": "anything"], "ua", "regexMatches", "(unclosed") == (false, false))
        #expect(rule("ua", "regexMatches", "[").evaluate(["ua": "x"]).verdict == .invalidPattern)
    }
}

@Suite struct PresenceOperatorTests {
    @Test func exists() {
        #expect(check(["k": "v"], "k", "exists", "") == (true, false))
        #expect(check(["k": 0], "k", "exists", "") == (true, false))
        #expect(check(["k": ""], "k", "exists", "") == (false, true))
        #expect(check(["k": nil], "k", "exists", "") == (false, true))
        #expect(check(["other": "v"], "k", "exists", "") == (false, true))
    }

    @Test(arguments: ["not_exists", "doesNotExist"])
    func notExistsOnAPresentKey(match: String) {
        #expect(check(["k": "v"], "k", match, "") == (false, true))
        #expect(check(["k": nil], "k", match, "") == (true, false))
        #expect(check(["k": ""], "k", match, "") == (true, false))
    }

    @Test func doesNotExistOnAnAbsentKeyIsTrueAndNegatable() {
        #expect(check(["other": "v"], "k", "doesNotExist", "") == (true, false))
    }

    @Test func notExistsOnAnAbsentKeyIsFalseEvenNegated() {
        #expect(check(["other": "v"], "k", "not_exists", "") == (false, false))
    }

    @Test func onlyExistsAndDoesNotExistMayOmitTheValue() {
        #expect(rule("k", "exists", nil).matches(["k": 1]))
        #expect(rule("k", "doesNotExist", nil).matches(["j": 1]))
        #expect(rule("k", "not_exists", nil).leaves.first?.invalidReason != nil)
        #expect(!rule("k", "not_exists", nil).matches(["k": nil]))
        #expect(rule("k", "equals", nil).leaves.first?.invalidReason != nil)
    }
}
