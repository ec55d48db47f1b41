import Foundation
import HaulStore
import Testing

@testable import HaulServe

/// The file route's pure decisions: what a `Range` asks, the validators, the file's name, the
/// signed links, and how an event stream resumes.
@Suite("haul serve: file route and event stream decisions")
struct FileRouteDecisionTests {
    static let etag = "\"1-2-3-4-5\""

    @Test(
        arguments: [
            // GIVEN a Range field (or none) for a 1000-byte file, THEN this is what is sent
            (nil, nil, FileRange.whole),
            ("bytes=0-99", nil, .partial(first: 0, last: 99)),
            ("bytes=900-", nil, .partial(first: 900, last: 999)),
            ("bytes=900-5000", nil, .partial(first: 900, last: 999)),
            ("bytes=-100", nil, .partial(first: 900, last: 999)),
            ("bytes=-5000", nil, .partial(first: 0, last: 999)),
            ("BYTES = 1-1", nil, .whole),
            ("Bytes=1-1", nil, .partial(first: 1, last: 1)),
            ("bytes=1000-", nil, .unsatisfiable),
            ("bytes=-0", nil, .unsatisfiable),
            ("bytes=5-1", nil, .whole),
            ("bytes=0-1,5-9", nil, .whole),
            ("bytes=a-b", nil, .whole),
            ("bytes=+1-2", nil, .whole),
            ("items=0-1", nil, .whole),
            ("bytes=0-99", etag, .partial(first: 0, last: 99)),
            ("bytes=0-99", "\"other\"", .whole),
            ("bytes=0-99", "Sun, 06 Dec 2026 20:00:00 GMT", .whole),
        ] as [(String?, String?, FileRange)])
    func aRangeIsReadAsRFC9110Says(range: String?, ifRange: String?, expected: FileRange) {
        #expect(FileRange.of(range, ifRange: ifRange, length: 1000, etag: Self.etag) == expected)
    }

    @Test func anEmptyFileHasNoSatisfiableRange() {
        #expect(FileRange.of("bytes=0-", ifRange: nil, length: 0, etag: Self.etag) == .unsatisfiable)
        #expect(FileRange.of(nil, ifRange: nil, length: 0, etag: Self.etag) == .whole)
    }

    @Test func theETagChangesWithEachPartOfTheIdentityAndIfNoneMatchComparesWeakly() {
        // GIVEN one file's tag
        let tag = FileValidators.etag(device: 1, inode: 2, size: 3, modifiedSeconds: 4, modifiedNanoseconds: 5)
        // THEN it is strong (quoted, no W/) and another inode, size or time gives another
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\""))
        #expect(tag != FileValidators.etag(device: 1, inode: 9, size: 3, modifiedSeconds: 4, modifiedNanoseconds: 5))
        #expect(tag != FileValidators.etag(device: 1, inode: 2, size: 4, modifiedSeconds: 4, modifiedNanoseconds: 5))
        #expect(tag != FileValidators.etag(device: 1, inode: 2, size: 3, modifiedSeconds: 4, modifiedNanoseconds: 6))
        // AND If-None-Match matches it in a list, weak or not, and with *
        #expect(FileValidators.noneMatchHits("\"x\", W/\(tag)", etag: tag))
        #expect(FileValidators.noneMatchHits("*", etag: tag))
        #expect(!FileValidators.noneMatchHits("\"x\"", etag: tag))
        #expect(!FileValidators.noneMatchHits(nil, etag: tag))
    }

    @Test(arguments: [
        ("a.bin", #"attachment; filename="a.bin"; filename*=UTF-8''a.bin"#),
        ("résumé \"1\".pdf", #"attachment; filename="r_sum_ _1_.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%221%22.pdf"#),
        ("x;\r\ny.txt", #"attachment; filename="x___y.txt"; filename*=UTF-8''x%3B%0D%0Ay.txt"#),
    ])
    func theFileNameIsOfferedSafelyAsRFC6266Says(name: String, expected: String) {
        #expect(FileValidators.contentDisposition(fileName: name) == expected)
    }

    @Test func hmacIsRFC4231sSecondCase() {
        let mac = FileLink.hmac(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(mac.map { String(format: "%02x", $0) }.joined() == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func aLinkIsValidForItsGIDUntilItExpiresAndForNothingElse() {
        // GIVEN a link signed for one GID until t=1000
        let links = FileLink(secret: "s3cret")
        let signature = links.signature(gid: "0000000000000001", expires: 1000)
        // THEN it is valid before and at its expiry
        #expect(links.refusal(gid: "0000000000000001", expires: 1000, signature: signature, now: 999) == nil)
        #expect(links.refusal(gid: "0000000000000001", expires: 1000, signature: signature, now: 1000) == nil)
        // AND refused after it, for another GID, with another expiry, or another server's secret
        #expect(links.refusal(gid: "0000000000000001", expires: 1000, signature: signature, now: 1001)?.contains("expired") == true)
        #expect(links.refusal(gid: "0000000000000002", expires: 1000, signature: signature, now: 0)?.contains("signature") == true)
        #expect(links.refusal(gid: "0000000000000001", expires: 99999, signature: signature, now: 0)?.contains("signature") == true)
        #expect(FileLink(secret: "other").refusal(gid: "0000000000000001", expires: 1000, signature: signature, now: 0) != nil)
        #expect(links.refusal(gid: "0000000000000001", expires: nil, signature: nil, now: 0) != nil)
        // AND the signature does not contain the secret's own HMAC key material in the clear
        #expect(!signature.contains("s3cret"))
    }

    static func page(_ ids: ClosedRange<Int64>?, oldest: Int64?, newest: Int64?) -> JournalPage {
        JournalPage(
            events: (ids.map(Array.init) ?? []).map { JournalEvent(id: $0, item: $0, method: "aria2.onDownloadComplete") }, oldest: oldest, newest: newest)
    }

    static func ids(_ data: Data) -> [Int64] {
        String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            line.hasPrefix("id: ") ? Int64(line.dropFirst(4)) : nil
        }
    }

    @Test func aNewClientGetsOnlyWhatComesNextAndAReturningOneWhatItMissed() {
        // GIVEN a journal holding ids 1...50
        // WHEN a client without Last-Event-ID opens the stream THEN it gets nothing old, and continues after 50
        let fresh = EventStreamFormat.opening(lastEventID: nil, page: Self.page(nil, oldest: 1, newest: 50))
        #expect(Self.ids(fresh.initial).isEmpty && fresh.after == 50)
        // WHEN one that saw 40 comes back THEN it gets 41...50, in order, and continues after 50
        let back = EventStreamFormat.opening(lastEventID: "40", page: Self.page(41...50, oldest: 1, newest: 50))
        #expect(Self.ids(back.initial) == Array(41...50) && back.after == 50)
        #expect(String(decoding: back.initial, as: UTF8.self).contains("event: aria2.onDownloadComplete\ndata: {\"jsonrpc\":\"2.0\""))
        // WHEN one that saw everything comes back THEN it gets nothing and continues after 50
        let current = EventStreamFormat.opening(lastEventID: "50", page: Self.page(nil, oldest: 1, newest: 50))
        #expect(Self.ids(current.initial).isEmpty && current.after == 50)
    }

    @Test(arguments: ["3", "99", "x", "-1"])
    func aClientWhoseIdIsNotKeptIsToldToResync(last: String) {
        // GIVEN a journal that keeps ids 10...50 (older ones trimmed)
        let opening = EventStreamFormat.opening(lastEventID: last, page: Self.page(nil, oldest: 10, newest: 50))
        // THEN it gets one haul.resync under the newest id, and continues from there
        let text = String(decoding: opening.initial, as: UTF8.self)
        #expect(text.contains("event: haul.resync"))
        #expect(Self.ids(opening.initial) == [50] && opening.after == 50)
    }

    @Test func progressGoesAtMostTwiceASecondPerDownloadAndAtOnceAfterItsRunEnded() {
        var throttle = ProgressThrottle()
        let start = ContinuousClock.now
        let first = throttle.admit(1, now: start)
        let tooSoon = throttle.admit(1, now: start + .milliseconds(499))
        let other = throttle.admit(2, now: start + .milliseconds(499))
        let halfASecondLater = throttle.admit(1, now: start + .milliseconds(500))
        throttle.forget(1)
        let afterItsRun = throttle.admit(1, now: start + .milliseconds(501))
        #expect(first && !tooSoon && other && halfASecondLater && afterItsRun)
    }
}
