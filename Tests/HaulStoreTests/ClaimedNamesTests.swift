import Foundation
import HaulTestSupport
import Testing

@testable import HaulStore

/// Which name a download into a directory claims from a response (`ClaimedNames`): unique within
/// the process, and, run again, the numbered name an earlier run gave its own finished file.
@Suite("ClaimedNames: the names downloads of one process take")
struct ClaimedNamesTests {
    @Test("GIVEN another's file at the name and the download's own at `x (1).bin` WHEN claimed THEN `x (1).bin`, unchanged")
    func anEarlierRunsNumberedNameIsFoundAgain() throws {
        let directory = try TemporaryDirectory()
        let path = { (name: String) in directory.file(name) }
        try TestData.writeFile(at: path("x.bin"), size: 10, seed: 1)
        try TestData.writeFile(at: path("x (1).bin"), size: 10, seed: 2)
        let names = ClaimedNames()
        let claim = names.claim("x.bin", replacing: false, path: path, isOwn: { $0 == path("x (1).bin") })
        #expect(claim.name == "x (1).bin" && !claim.renamed)
    }

    @Test("GIVEN another's file at the name and none of its own WHEN claimed THEN the name (to be refused), never a numbered one")
    func anotherFileAtTheNameIsNotSteppedAround() throws {
        let directory = try TemporaryDirectory()
        let path = { (name: String) in directory.file(name) }
        try TestData.writeFile(at: path("x.bin"), size: 10, seed: 1)
        try TestData.writeFile(at: path("x (1).bin"), size: 10, seed: 2)
        let names = ClaimedNames()
        let claim = names.claim("x.bin", replacing: false, path: path, isOwn: { _ in false })
        #expect(claim.name == "x.bin" && !claim.renamed)
    }

    @Test("GIVEN the name taken in this process and its own file at `x (2).bin` past another's at `x (1).bin` WHEN claimed THEN `x (2).bin`")
    func aNameTakenInThisProcessFindsItsOwnNumberedFile() throws {
        let directory = try TemporaryDirectory()
        let path = { (name: String) in directory.file(name) }
        try TestData.writeFile(at: path("x (1).bin"), size: 10, seed: 1)
        try TestData.writeFile(at: path("x (2).bin"), size: 10, seed: 2)
        let names = ClaimedNames()
        _ = names.claim("x.bin", replacing: false, path: path)
        let claim = names.claim("x.bin", replacing: false, path: path, isOwn: { $0 == path("x (2).bin") })
        #expect(claim.name == "x (2).bin" && !claim.renamed)
        // AND a third download of the same name gets the first free one
        #expect(names.claim("x.bin", replacing: false, path: path).name == "x (3).bin")
    }
}
