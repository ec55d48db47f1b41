import Foundation
import HaulTestSupport
import Testing

/// The last step of a move, the old name's removal, raced by a hostile process swapping the old
/// name's parent for a symlink out of the root between the check (both names one file) and the
/// unlink: the unlink must never reach a file outside the root.
@Suite("haul serve: a move's old name removed while its parent is swapped")
struct CLIServeMoveUnlinkRaceTests {
    @Test(.timeLimit(.minutes(2)))
    func aParentSwappedForASymlinkWhileAMoveRemovesTheOldNameNeverDeletesAFileOutsideTheRoot() throws {
        let scene = try CLIServeFilesAttackTests.SwapScene(prefix: "haul-serve-move-unlink", ("done.bin", 50_000, 19), limitRate: "1m")
        defer { scene.stop() }
        let (dl, outside, serve, gid) = (scene.dl, scene.outside, scene.serve, scene.gid)
        // GIVEN someone's files outside the root, under the names the download takes in dl/sub
        let names = (0..<2_000).map { "in-\($0).bin" }
        for name in names { try Data("theirs".utf8).write(to: URL(fileURLWithPath: outside + "/" + name)) }
        // AND a hostile process swapping dl/sub for a symlink to them, over and over
        let flipper = SymlinkFlipper(directory: dl, outside: outside)
        // WHEN the download is moved into dl/sub and out again (its old name there removed) for 15 s,
        // and longer (60 s at most) until it went in three times: a loaded machine gets few moves
        // past the flips
        let deadline = Date().addingTimeInterval(15)
        let lastChance = Date().addingTimeInterval(60)
        var moves = 0
        var outs = 0
        var errors: [String] = []
        while moves < names.count, Date() < deadline || (moves < 3 && Date() < lastChance) {
            let into = Result { try serve.result("haul.move", [gid, ["dir": "sub", "out": "in-\(moves).bin"]]) }
            if case .failure(let error) = into, errors.count < 12 { errors.append("in: \(error)") }
            if (try? into.get()) != nil {
                moves += 1
                for _ in 0..<20 {
                    let back = Result { try serve.result("haul.move", [gid, ["dir": dl, "out": "back-\(moves).bin"]]) }
                    if case .failure(let error) = back, errors.count < 12 { errors.append("out: \(error)") }
                    if (try? back.get()) != nil { break }
                }
                outs += 1
            }
        }
        flipper.stop()
        // THEN every file outside the root is still there
        let gone = names.filter { !FileManager.default.fileExists(atPath: outside + "/" + $0) }
        #expect(moves >= 2, "\(moves): \(errors)")
        #expect(gone.isEmpty, "after \(moves) moves in and \(outs) out: deleted outside the root: \(gone)")
    }
}
