import Foundation
import Testing

@testable import HaulCLIText

@Suite("DownloadList: the -i input file")
struct DownloadListTests {
    @Test func urlsNamesCommentsAndBlankLines() {
        // GIVEN a list with comments, blank lines, names and tabs
        let list = DownloadList(
            parsing: """
                # images
                http://a.test/1.png

                https://a.test/2.png  second.png
                http://a.test/3\tthird.bin
                """)
        // THEN three entries with their line numbers and names, and no problem
        #expect(list.entries.map(\.line) == [2, 4, 5])
        #expect(list.entries.map(\.name) == [nil, "second.png", "third.bin"])
        #expect(list.entries.map(\.url.absoluteString) == ["http://a.test/1.png", "https://a.test/2.png", "http://a.test/3"])
        #expect(list.problems.isEmpty)
    }

    @Test func crlfLineEndsEndLinesToo() {
        // GIVEN a list written on Windows: every line ends with CR LF, one line with a name
        let list = DownloadList(parsing: "http://a.test/1.png\r\n# note\r\nhttp://a.test/2.png  two.png\r\n\r\nhttp://a.test/3.png")
        // THEN one entry per line, with no CR left in a URL or a name
        #expect(list.entries.map(\.line) == [1, 3, 5])
        #expect(list.entries.map(\.url.absoluteString) == ["http://a.test/1.png", "http://a.test/2.png", "http://a.test/3.png"])
        #expect(list.entries.map(\.name) == [nil, "two.png", nil])
        #expect(list.problems.isEmpty)
    }

    @Test func malformedLinesAreReportedWithTheirNumberAndSkipped() {
        let list = DownloadList(parsing: "http://a.test/ok\nftp://a.test/no\nnot a url\nhttp://a.test/x ../../etc/passwd\nhttp://a.test/y\n")
        #expect(list.entries.map(\.line) == [1, 5])
        #expect(list.problems.map(\.line) == [2, 3, 4])
        #expect(list.problems[2].description.contains("line 4"))
    }

    @Test func emptyInputHasNothing() {
        let list = DownloadList(parsing: "\n\n# only comments\n")
        #expect(list.entries.isEmpty)
        #expect(list.problems.isEmpty)
    }
}
