import Foundation
import HaulCore
import HaulStore
import Testing

@testable import Haul

/// Where a download's known final path goes when it moves (no file, no queue).
@Suite("DownloadQueue.movedFinalPath: a moved download's final path")
struct MovedFinalPathTests {
    @Test("GIVEN a final path not known yet WHEN the download moves THEN it stays unknown")
    func anUnknownFinalPathStaysUnknown() {
        let from = OutputLayout.file("/d/a.bin", nameMax: 255)
        #expect(DownloadQueue.movedFinalPath(nil, layout: from, to: .file("/e/b.bin", nameMax: 255)) == nil)
    }

    @Test("GIVEN a named file WHEN it moves to another name THEN its final path is the new name")
    func aNamedFileTakesItsNewName() {
        let from = OutputLayout.file("/d/a.bin", nameMax: 255)
        #expect(DownloadQueue.movedFinalPath("/d/a.bin", layout: from, to: .file("/e/b.bin", nameMax: 255)) == "/e/b.bin")
    }

    @Test("GIVEN a directory download named by its server WHEN it moves to another directory THEN it keeps the server's name there")
    func aServerNamedFileKeepsItsNameInTheNewDirectory() throws {
        let url = try #require(URL(string: "http://example.com/get?id=1"))
        let from = OutputLayout.directory("/d", url: url, nameMax: 255)
        let to = OutputLayout.directory("/d/later", url: url, nameMax: 255)
        #expect(DownloadQueue.movedFinalPath("/d/report.pdf", layout: from, to: to) == "/d/later/report.pdf")
    }
}
