import Foundation
import HaulCore
import Testing

@testable import HaulEngine

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The choice of engine and what each refuses: pure, no network.
@Suite("Engines: the choice, and what an engine refuses")
struct TransportEngineTests {
    @Test func libcurlIsTheDefaultWhereItIsLinked() {
        #expect(TransportEngine.platformDefault == .curl)
        #expect(TransportEngine.available == [.curl, .urlsession])
        #expect(TransportEngine.curl.makeTransport() is CurlTransport)
        #expect(TransportEngine.urlsession.makeTransport() is URLSessionTransport)
    }

    @Test func libcurlRefusesNothing() {
        var options = TransferOptions(verifyTLS: false, caFile: "/ca.pem", proxy: "socks5h://127.0.0.1:1080", noProxy: "*", netrcFile: "/n")
        options.allowsHTTP2 = true
        #expect(TransportEngine.curl.refusal(of: options, environment: [:]) == nil)
        #expect(TransportEngine.curl.limitations.isEmpty)
        #expect(TransportEngine.curl.hasBackpressure)
    }

    @Test(arguments: [
        (TransferOptions(caFile: "/ca.pem"), "CA file", DownloadSetting.caFile),
        (TransferOptions(verifyTLS: false), "verifies certificates", DownloadSetting.insecureTLS),
        (TransferOptions(proxy: "http://127.0.0.1:3128"), "no proxy setting", DownloadSetting.proxy),
        (TransferOptions(noProxy: "example.com"), "list", DownloadSetting.noProxy),
        (TransferOptions(netrcFile: "/home/me/.netrc"), "netrc", nil),
    ])
    func urlSessionOnLinuxRefusesWhatItCannotHonour(options: TransferOptions, named: String, setting: DownloadSetting?) throws {
        let refusal = try #require(TransportEngine.urlsession.refusal(of: options, environment: [:]))
        #expect(refusal.description.contains(named), "\(refusal)")
        // The settings are named as settings, so each front end shows its own names for them.
        #expect(refusal.settings == (setting.map { [$0] } ?? []) + [.curlEngine], "\(refusal)")
        #expect(refusal.description.hasSuffix("(use engine: .curl)"))
        #expect(!refusal.description.contains("--"), "\(refusal)")
    }

    @Test func turningProxiesOffIsRefusedOnlyWhenTheEnvironmentNamesOne() {
        let off = TransferOptions(proxy: "")
        #expect(TransportEngine.urlsession.refusal(of: off, environment: [:]) == nil)
        #expect(TransportEngine.urlsession.refusal(of: off, environment: ["https_proxy": "http://p:1"]) != nil)
        #expect(TransportEngine.urlsession.refusal(of: TransferOptions(), environment: ["https_proxy": "http://p:1"]) == nil)
    }

    @Test func anHTTPSDownloadThroughAnEnvironmentProxyIsRefusedHere() throws {
        let https = try #require(URL(string: "https://example.org/f"))
        let http = try #require(URL(string: "http://example.org/f"))
        let environment = ["https_proxy": "http://127.0.0.1:3128", "no_proxy": "internal.example"]
        let refusal = try #require(TransportEngine.urlsession.refusal(of: TransferOptions(), for: https, environment: environment))
        #expect(refusal.description.contains("CONNECT"), "\(refusal)")
        #expect(TransportEngine.urlsession.refusal(of: TransferOptions(), for: http, environment: environment) == nil)
        let exempt = try #require(URL(string: "https://internal.example/f"))
        #expect(TransportEngine.urlsession.refusal(of: TransferOptions(), for: exempt, environment: environment) == nil)
        #expect(TransportEngine.curl.refusal(of: TransferOptions(), for: https, environment: environment) == nil)
    }

    @Test func urlSessionOnLinuxHasNoBackpressureAndSaysSo() {
        #expect(!TransportEngine.urlsession.hasBackpressure)
        let texts = TransportEngine.urlsession.limitations.map(\.text.description)
        #expect(texts.contains { $0.contains("no backpressure") })
        #expect(texts.contains { $0.contains("decodes a compressed body") })
        #expect(texts.contains { $0.contains("merged by name") })
        #expect(texts.contains { $0.contains("Accept-Language") })
        #expect(texts.contains { $0.contains("redirect's body is buffered") })
    }

    @Test func theRefusalIsCheckedByPerformBeforeAnythingIsSent() throws {
        let url = try #require(URL(string: "http://127.0.0.1:9/never"))
        let outcome = URLSessionTransport().perform(TransferRequest(url: url), options: TransferOptions(caFile: "/ca.pem"), handler: NoHandler())
        guard case .failed(let error) = outcome else {
            Issue.record("expected a refusal, got \(outcome)")
            return
        }
        #expect(error.kind == .optionRefused)
        #expect(!error.isRetryable)
    }
}

/// A handler that must never be called.
private final class NoHandler: TransferHandler {
    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        Issue.record("head delivered")
        return .stop
    }
    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        Issue.record("body delivered")
        return .stop
    }
    func transferShouldAbort() -> Bool { true }
}

/// Foundation's errors and heads in Haul's terms.
@Suite("URLSession's errors and heads, translated")
struct URLSessionTranslationTests {
    @Test(arguments: [
        (NSURLErrorCannotConnectToHost, TransportError.Kind.connect),
        (NSURLErrorCannotFindHost, .nameResolution),
        (NSURLErrorTimedOut, .timeout),
        (NSURLErrorNetworkConnectionLost, .connectionLost),
        (NSURLErrorServerCertificateUntrusted, .tls),
        // FoundationNetworking's name for libcurl's empty reply: retryable, as on libcurl.
        (NSURLErrorBadServerResponse, .connectionLost),
        (NSURLErrorCannotParseResponse, .protocolViolation),
        (NSURLErrorUnsupportedURL, .invalidURL),
    ])
    func codes(code: Int, kind: TransportError.Kind) {
        let error = NSError(domain: NSURLErrorDomain, code: code, userInfo: [NSLocalizedDescriptionKey: "x"])
        #expect(URLSessionErrors.transportError(error, afterHead: false).kind == kind)
    }

    @Test(arguments: [
        ("Transferred a partial file", true, TransportError.Kind.connectionLost),
        ("SSL certificate problem: unable to get local issuer certificate", false, .tls),
        ("Failed to connect to 127.0.0.1 port 9", false, .connect),
        ("Could not resolve host: nowhere.invalid", false, .nameResolution),
        ("something else entirely", true, .connectionLost),
        ("something else entirely", false, .other),
    ])
    func libcurlTextOnLinux(text: String, afterHead: Bool, kind: TransportError.Kind) {
        let error = NSError(domain: NSURLErrorDomain, code: NSURLErrorUnknown, userInfo: [NSLocalizedDescriptionKey: text])
        #expect(URLSessionErrors.transportError(error, afterHead: afterHead).kind == kind)
    }

    @Test(arguments: [
        ("a=1, b=2", ["a=1", "b=2"]),
        ("a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Path=/, b=2", ["a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Path=/", "b=2"]),
        ("a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT", ["a=1; Expires=Wed, 21 Oct 2026 07:28:00 GMT"]),
        ("a=x,y", ["a=x,y"]),
        ("a=1,b=2;Secure", ["a=1", "b=2;Secure"]),
    ])
    func joinedSetCookieFieldsAreSplitAgain(joined: String, cookies: [String]) {
        #expect(URLSessionErrors.splitCookies(joined) == cookies)
    }

    @Test func theHeadKeepsStatusAndFields() throws {
        let url = try #require(URL(string: "http://127.0.0.1/f"))
        let response = try #require(
            HTTPURLResponse(url: url, statusCode: 206, httpVersion: "HTTP/1.1", headerFields: ["Content-Range": "bytes 0-9/100", "ETag": "\"a\""]))
        let head = URLSessionErrors.head(of: response)
        #expect(head.status == 206)
        #expect(head.contentRange == ContentRange(first: 0, last: 9, completeLength: 100))
        #expect(head.headers["etag"] == "\"a\"")
        // Sorted by name; FoundationNetworking may change the case of a name ("Etag").
        #expect(head.headers.fields.map { $0.name.lowercased() } == ["content-range", "etag"])
    }
}
