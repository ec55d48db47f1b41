import Foundation
import HaulTestSupport
import Testing

@testable import HaulServe

@Suite("ConfinedPath: the existing prefix of a path resolved")
struct ConfinedPathTests {
    @Test func aPathNotThereYetWithRepeatedSlashesBeforeANonASCIINameResolvesItsPrefixAndKeepsTheRest() throws {
        let directory = try TemporaryDirectory()
        let real = try #require(
            realpath(directory.path, nil).map { pointer in
                defer { free(pointer) }
                return String(cString: pointer)
            })
        // GIVEN a path below an existing directory, not there yet, with repeated slashes before a
        // name with a non-ASCII letter and after it (Foundation's deletingLastPathComponent traps
        // on "…/new//é" on Linux)
        for (path, expected) in [
            (directory.path + "/new//é", real + "/new/é"),
            (directory.path + "/new//é//", real + "/new/é"),
            (directory.path + "//a///b", real + "/a/b"),
        ] {
            // WHEN its existing prefix is resolved
            // THEN the real directory, with the rest appended one name each
            #expect(ConfinedPath.resolved(path) == expected, "\(path.debugDescription)")
        }
    }
}
