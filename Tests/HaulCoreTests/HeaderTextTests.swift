import Testing

@testable import HaulCore

@Suite("Header bytes as text, losing none")
struct HeaderTextTests {
    @Test func validUTF8IsReadAsUTF8AndAnythingElseByteForByte() {
        #expect(HeaderText.decode(Array("\"v1\"".utf8)) == "\"v1\"")
        #expect(HeaderText.decode(Array("café".utf8)) == "café")
        // Two tags that differ only in bytes that are not UTF-8 stay two tags (lossy decoding made
        // both "v\u{FFFD}")
        let a = HeaderText.decode([0x22, 0x76, 0xFF, 0x22])
        let b = HeaderText.decode([0x22, 0x76, 0xFE, 0x22])
        #expect(a != b)
        #expect(a.unicodeScalars.map(\.value) == [0x22, 0x76, 0xFF, 0x22])
    }

    @Test func aValidatorBeyondASCIINeverGoesIntoIfRange() {
        let latin = Validators(etag: EntityTag(headerValue: HeaderText.decode([0x22, 0x76, 0xFF, 0x22])))
        #expect(latin.ifRangeValue == nil && !latin.canGuardResume)
        // A date can still guard when the tag cannot
        let both = Validators(etag: latin.etag, lastModified: "Tue, 01 Dec 2026 09:00:00 GMT")
        #expect(both.ifRangeValue == "Tue, 01 Dec 2026 09:00:00 GMT")
        // and two such tags that differ are two versions
        let other = Validators(etag: EntityTag(headerValue: HeaderText.decode([0x22, 0x76, 0xFE, 0x22])))
        #expect(latin.conflicts(with: other))
    }
}
