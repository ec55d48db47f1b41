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

@Suite("AbsolutePath.name and joining")
struct PathNameAndJoiningTests {
    @Test("GIVEN paths with and without trailing, repeated or no slashes WHEN named THEN as NSString's lastPathComponent names them")
    func nameIsNSStringsLastComponent() {
        for path in ["/a/b", "/a/b/", "/a/b//", "a", "a/", "/", "//", "", "/a//b", "/d/.haul-0123.haul-partial", "/é/ß", "x y/z w"] {
            #expect(AbsolutePath.name(of: path) == (path as NSString).lastPathComponent, "\(path)")
        }
    }

    @Test("GIVEN a name after a combining mark WHEN named THEN split at the slash byte, not fused with it")
    func nameSplitsAtTheSlashByte() {
        #expect(AbsolutePath.name(of: "/d/dl/\u{301}x") == "\u{301}x")
    }

    @Test("GIVEN directories tidy and untidy and plain names WHEN joined THEN as NSString's appendingPathComponent joins them")
    func joiningIsNSStringsAppending() {
        let directories = ["/d/dl", "/", "d", "/d/dl/", "/d//dl", "//", "", "/é/ß", "/d/ x"]
        let names = ["f.bin", ".haul-0123.haul-partial", "é", "a b", ""]
        for directory in directories {
            for name in names {
                #expect(AbsolutePath.joining(directory, name) == (directory as NSString).appendingPathComponent(name), "\(directory) + \(name)")
            }
        }
    }

    @Test func aParentIsWhatNSStringGivesForSingleSlashesAndNoTrapForRepeatedOnes() {
        // GIVEN paths with single slashes THEN the parent is NSString's deletingLastPathComponent
        for path in ["/a/b", "/a/b/", "/a", "/", "a/b", "", "/é/ü", "/a/.b", "/tmp/x/é.bin"] {
            #expect(AbsolutePath.parent(of: path) == (path as NSString).deletingLastPathComponent, "\(path.debugDescription)")
        }
        // GIVEN a lone name, or repeated slashes (where Foundation's own traps on Linux: "a",
        // "/a//é") THEN "" for the name, and the slashes before the last name and after it dropped
        #expect(AbsolutePath.parent(of: "a") == "")
        #expect(AbsolutePath.parent(of: "/a//é") == "/a")
        #expect(AbsolutePath.parent(of: "/a//b//") == "/a")
        #expect(AbsolutePath.parent(of: "a///b//") == "a")
        #expect(AbsolutePath.parent(of: "//a") == "/")
        #expect(AbsolutePath.parent(of: "///") == "/")
    }
}
