import Foundation
import Testing

@testable import HaulCore

@Suite("AbsolutePath")
struct AbsolutePathTests {
    @Test func resolvesRelativeDotsAndSlashes() {
        #expect(AbsolutePath.of("/a//b/./c/../d") == "/a/b/d")
        #expect(AbsolutePath.of("/..") == "/")
        #expect(AbsolutePath.of("x/y") == AbsolutePath.of(FileManager.default.currentDirectoryPath + "/x/y"))
        #expect(AbsolutePath.of("x/y").hasPrefix("/"))
    }
}

@Suite("AbsolutePath.directory")
struct DirectoryOfPathTests {
    @Test func splitsAtTheLastSlashByte() {
        #expect(AbsolutePath.directory(of: "/d/dl/file") == "/d/dl")
        #expect(AbsolutePath.directory(of: "/file") == "/")
        #expect(AbsolutePath.directory(of: "file") == ".")
        // A name starting with a combining mark must not drag the directory with it.
        #expect(AbsolutePath.directory(of: "/d/dl/\u{301}x") == "/d/dl")
    }
}
