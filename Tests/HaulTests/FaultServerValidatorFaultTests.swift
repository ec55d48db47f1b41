import HaulTestSupport
import Testing

// The faults that break resume validation: a server that honours Range although If-Range no longer
// matches (`.ignoreIfRange`), and one that sends no validator at all (`.withoutValidators`).

private let oldBody = Array("0123456789".utf8)
private let newBody = Array("abcdefghij".utf8)
private let oldDate = "Tue, 01 Jul 2025 10:00:00 GMT"

@Suite struct FaultServerValidatorFaultTests {
    @Test(arguments: [
        "\"v0\"",  // another strong tag
        "W/\"v1\"",  // a weak tag, which never matches
        "Wed, 02 Jul 2025 10:00:00 GMT",  // another date
    ])
    func ignoreIfRangeHonoursRangeAlthoughIfRangeDoesNotMatch(ifRange: String) throws {
        // GIVEN a resource whose validators do not match the client's If-Range
        let server = try FaultServer()
        server.setResource("/r", body: oldBody, etag: "\"v1\"", lastModified: oldDate)
        server.enqueueFaults("/r", [.ignoreIfRange])
        // WHEN the client asks for a range, twice
        let broken = try fetch(server, "/r", headers: [("Range", "bytes=4-"), ("If-Range", ifRange)])
        let correct = try fetch(server, "/r", headers: [("Range", "bytes=4-"), ("If-Range", ifRange)])
        // THEN the faulty answer is 206 with the range, the validators are still sent,
        // and once the fault is used up the mismatch sends the whole body again
        #expect(broken.status == 206)
        #expect(broken.header("Content-Range") == "bytes 4-9/10")
        #expect(broken.text == "456789")
        #expect(broken.header("ETag") == "\"v1\"")
        #expect(broken.header("Last-Modified") == oldDate)
        #expect(correct.status == 200)
        #expect(correct.header("Content-Range") == nil)
        #expect(correct.body == oldBody)
    }

    @Test func ignoreIfRangeWithoutRangeStillSendsTheWholeBody() throws {
        // GIVEN the fault but no Range header
        let server = try FaultServer()
        server.setResource("/r", body: oldBody, etag: "\"v1\"")
        server.enqueueFaults("/r", [.ignoreIfRange])
        // WHEN the client sends only If-Range
        let response = try fetch(server, "/r", headers: [("If-Range", "\"v0\"")])
        // THEN there is nothing to honour: 200 and the whole body
        #expect(response.status == 200)
        #expect(response.header("Content-Range") == nil)
        #expect(response.body == oldBody)
    }

    @Test func withoutValidatorsOmitsETagAndLastModified() throws {
        // GIVEN a resource with both validators, one of them repeated in its extra headers
        let server = try FaultServer()
        server.setResource(
            "/v", body: oldBody, etag: "\"v1\"", lastModified: oldDate, extraHeaders: [("etag", "\"v1\"")])
        server.enqueueFaults("/v", [.withoutValidators, .withoutValidators])
        // WHEN it is fetched whole, then by range, then once the faults are used up
        let whole = try fetch(server, "/v")
        let ranged = try fetch(server, "/v", headers: [("Range", "bytes=2-5")])
        let normal = try fetch(server, "/v")
        // THEN the faulty answers carry no validator but keep everything else
        #expect(whole.status == 200)
        #expect(whole.body == oldBody)
        #expect(whole.header("Accept-Ranges") == "bytes")
        #expect(whole.header("ETag") == nil)
        #expect(whole.header("Last-Modified") == nil)
        #expect(ranged.status == 206)
        #expect(ranged.header("Content-Range") == "bytes 2-5/10")
        #expect(ranged.text == "2345")
        #expect(ranged.header("ETag") == nil)
        #expect(ranged.header("Last-Modified") == nil)
        #expect(normal.header("ETag") == "\"v1\"")
        #expect(normal.header("Last-Modified") == oldDate)
    }

    @Test func changedFileAnswered206WithoutETagDespiteIfRange() throws {
        // GIVEN the client's record held ETag "v1" for the old file
        let server = try FaultServer()
        server.setResource("/f", body: oldBody, etag: "\"v1\"")
        let first = try fetch(server, "/f")
        #expect(first.header("ETag") == "\"v1\"")
        // WHEN the file changes and the server ignores If-Range and drops its validators
        let changed = Fault.replaceResource(body: newBody, etag: "\"v2\"", lastModified: nil)
        server.enqueueFaults("/f", [.combined([changed, .ignoreIfRange, .withoutValidators])])
        let resumed = try fetch(server, "/f", headers: [("Range", "bytes=5-"), ("If-Range", "\"v1\"")])
        // THEN the answer is a 206 with bytes of the new version and nothing that says it changed
        #expect(resumed.status == 206)
        #expect(resumed.header("Content-Range") == "bytes 5-9/10")
        #expect(resumed.text == "fghij")
        #expect(resumed.header("ETag") == nil)
        #expect(resumed.header("Last-Modified") == nil)
        // AND a correct server would have sent the whole new file with its new tag
        let correct = try fetch(server, "/f", headers: [("Range", "bytes=5-"), ("If-Range", "\"v1\"")])
        #expect(correct.status == 200)
        #expect(correct.header("ETag") == "\"v2\"")
        #expect(correct.body == newBody)
    }
}
