import Testing

@testable import HaulCore

@Suite("HTTPHeaders: names compared without case")
struct HTTPHeadersLookupTests {
    @Test("GIVEN fields as servers write them WHEN looked up in any case THEN the first of that name is found; other names are not")
    func lookupIgnoresASCIICase() {
        var headers = HTTPHeaders([("Content-Length", "10"), ("ETag", "\"a\""), ("content-length", "11"), ("X-Ü", "1")])

        #expect(headers["content-length"] == "10")
        #expect(headers["CONTENT-LENGTH"] == "10")
        #expect(headers["etag"] == "\"a\"")
        #expect(headers["Content-Lengt"] == nil)
        #expect(headers["Content-Lengthx"] == nil)
        #expect(headers["x-Ü"] == "1")
        headers.remove("CONTENT-length")
        #expect(headers.count == 2)
        #expect(HTTPHeaders.sameName("", ""))
        #expect(!HTTPHeaders.sameName("a", ""))
        // Only ASCII letters fold: '[' (0x5B) is not '{' (0x7B).
        #expect(!HTTPHeaders.sameName("[", "{"))
    }
}
