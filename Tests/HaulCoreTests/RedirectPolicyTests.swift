import Foundation
import Testing

@testable import HaulCore

@Suite("RedirectPolicy")
struct RedirectPolicyTests {
    func request(_ url: String, method: String = "GET") throws -> TransferRequest {
        var headers = HTTPHeaders()
        headers.add("Authorization", "Bearer secret")
        headers.add("Cookie", "a=b")
        headers.add("X-Keep", "1")
        return TransferRequest(url: try #require(URL(string: url)), method: method, headers: headers, body: method == "POST" ? [1, 2] : nil)
    }

    func redirect(_ status: Int, _ location: String?) -> ResponseHead {
        ResponseHead(status: status, headers: HTTPHeaders(location.map { [("Location", $0)] } ?? []))
    }

    @Test func relativeLocationResolvesAgainstTheRequest() throws {
        let first = try request("http://a.test/dir/file")
        let next = try RedirectPolicy().nextRequest(after: first, head: redirect(302, "../other?x=1"), originalOrigin: first.origin, visited: [first.url])
        #expect(next.url.absoluteString == "http://a.test/other?x=1")
        #expect(next.headers["Authorization"] == "Bearer secret")
    }

    @Test func anotherOriginLosesCredentials() throws {
        // GIVEN credentials for a.test WHEN redirected to another host, port or scheme THEN they are dropped
        let first = try request("http://a.test/file")
        for target in ["http://b.test/file", "http://a.test:8080/file", "https://a.test/file"] {
            let next = try RedirectPolicy().nextRequest(after: first, head: redirect(301, target), originalOrigin: first.origin, visited: [first.url])
            #expect(next.headers["Authorization"] == nil)
            #expect(next.headers["Cookie"] == nil)
            #expect(next.headers["X-Keep"] == "1")
        }
    }

    @Test func loopIsDetected() throws {
        let first = try request("http://a.test/a")
        let second = try #require(URL(string: "http://a.test/b"))
        #expect(throws: RedirectError.self) {
            try RedirectPolicy().nextRequest(after: first, head: redirect(302, "/a"), originalOrigin: first.origin, visited: [first.url, second])
        }
    }

    @Test func hopLimitIsEnforced() throws {
        let first = try request("http://a.test/0")
        let visited = try (0...3).map { try #require(URL(string: "http://a.test/\($0)")) }
        #expect(throws: RedirectError.self) {
            try RedirectPolicy(maxRedirects: 3).nextRequest(after: first, head: redirect(302, "/9"), originalOrigin: first.origin, visited: visited)
        }
    }

    @Test func missingOrForeignLocationIsRefused() throws {
        let first = try request("http://a.test/a")
        #expect(throws: RedirectError.self) {
            try RedirectPolicy().nextRequest(after: first, head: redirect(302, nil), originalOrigin: first.origin, visited: [first.url])
        }
        #expect(throws: RedirectError.self) {
            try RedirectPolicy().nextRequest(after: first, head: redirect(302, "file:///etc/passwd"), originalOrigin: first.origin, visited: [first.url])
        }
    }

    @Test func methodRewriteFollowsRFC9110() throws {
        let post = try request("http://a.test/form", method: "POST")
        let after303 = try RedirectPolicy().nextRequest(after: post, head: redirect(303, "/done"), originalOrigin: post.origin, visited: [post.url])
        #expect(after303.method == "GET")
        #expect(after303.body == nil)
        let after307 = try RedirectPolicy().nextRequest(after: post, head: redirect(307, "/again"), originalOrigin: post.origin, visited: [post.url])
        #expect(after307.method == "POST")
        #expect(after307.body == [1, 2])
    }
}
