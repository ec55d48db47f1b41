import Foundation
import Testing

@testable import HaulCLIText

@Suite("DownloadList.parseHTTPURL: ports")
struct HTTPURLPortTests {
    @Test(
        "GIVEN a port outside 1-65535 WHEN the URL is parsed THEN it is refused naming the port as written",
        arguments: [
            ("http://127.0.0.1:70000/f", "70000"),
            ("http://h:65536/", "65536"),
            ("http://h:0/", "0"),
            ("https://u:p@h:99999999999999999999999/x", "99999999999999999999999"),
            ("http://[::1]:70000/", "70000"),
            ("http://h:00000/", "00000"),
        ])
    func portOutOfRangeIsRefused(text: String, port: String) {
        #expect(throws: DownloadList.URLProblem.portOutOfRange(port)) { try DownloadList.parseHTTPURL(text) }
        #expect(DownloadList.httpURL(text) == nil)
    }

    @Test(
        "GIVEN a port inside 1-65535, an empty one or none WHEN the URL is parsed THEN it is accepted",
        arguments: [
            "http://h:1/", "http://h:65535/", "http://h:080/", "http://h/", "http://h:/x", "http://[::1]:8080/",
            "http://h/a:70000", "http://h/?p=:0", "http://u:70000@h/",
        ])
    func validPortIsAccepted(text: String) throws {
        let url = try DownloadList.parseHTTPURL(text)
        #expect(url.absoluteString == text)
    }

    @Test("GIVEN a list line with port 70000 WHEN the list is parsed THEN that line is a problem naming the port")
    func listReportsThePort() {
        let list = DownloadList(parsing: "http://a.test:70000/x\nhttp://a.test/y\n")
        #expect(list.entries.map(\.line) == [2])
        #expect(list.problems.map(\.line) == [1])
        #expect(list.problems.first?.message == "port 70000 is out of range (1-65535): http://a.test:70000/x")
    }

    @Test("GIVEN a URL of another scheme WHEN it is parsed THEN it is refused as not http")
    func otherSchemeIsNotHTTP() {
        #expect(throws: DownloadList.URLProblem.notHTTP) { try DownloadList.parseHTTPURL("ftp://h:21/") }
    }
}
