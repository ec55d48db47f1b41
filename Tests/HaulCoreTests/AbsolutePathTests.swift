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
        #expect(AbsolutePath.of("/") == "/")
        #expect(AbsolutePath.of("//") == "/")
        #expect(AbsolutePath.of("/a/b/../../..") == "/")
        #expect(AbsolutePath.of("/a/./b/.") == "/a/b")
        #expect(AbsolutePath.of("/a/.b/..c/...") == "/a/.b/..c/...")
        #expect(AbsolutePath.of("/é/ü/../ß") == "/é/ß")
    }

    @Test func splitsAtSlashBytesOnly() {
        // A component starting with a combining mark is its own component, as the kernel reads
        // it; split over Characters, "/\u{301}" is one Character and the ".." before it would
        // not be resolved.
        #expect(AbsolutePath.of("/a/b/..//\u{301}c") == "/a/\u{301}c")
        #expect(AbsolutePath.of("/a/../\u{301}") == "/\u{301}")
        // "." followed by a combining mark is a name, not the current directory.
        #expect(AbsolutePath.of("/a/.\u{301}/b") == "/a/.\u{301}/b")
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
