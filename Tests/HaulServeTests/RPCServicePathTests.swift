import Foundation
import Haul
import HaulTestSupport
import Testing

@testable import HaulServe

/// Where `addUri` may write, judged on the file system: symlinks inside the download directory
/// that lead out are refused, a download directory given through a symlink takes its own `dir`.
/// And an error answer changes nothing.
@Suite("aria2 JSON-RPC: paths on the file system, errors without side effects")
struct RPCServicePathTests {
    typealias Fixture = RPCServiceTests.Fixture

    @Test func aSymlinkInsideTheDownloadDirectoryCannotLeadOutOfIt() throws {
        let fixture = try Fixture()
        let root = fixture.directory.file("dl")
        let outside = fixture.directory.file("outside")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        // GIVEN DL/link -> a directory outside, DL/inner -> a directory inside, DL/dangling -> nowhere
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: outside)
        try FileManager.default.createDirectory(atPath: root + "/real", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/inner", withDestinationPath: root + "/real")
        try FileManager.default.createSymbolicLink(atPath: root + "/dangling", withDestinationPath: fixture.directory.file("nowhere"))

        // WHEN a client names a place through the outside link (as dir, as out, absolute or not)
        for options: JSONValue in [
            ["dir": "link"], ["out": "link/x"], ["dir": "link/deeper"], ["dir": .string(root + "/link")], ["dir": "dangling"],
            ["out": "dangling/x"],
        ] {
            let reply = fixture.call("aria2.addUri", [["http://127.0.0.1:9/f"], options])
            // THEN it is refused and nothing is added
            #expect(reply["error"] != nil, "\(options) answered \(reply)")
        }
        #expect(try fixture.queue.items().isEmpty)
        // AND a link that stays inside is taken
        let reply = fixture.call("aria2.addUri", [["http://127.0.0.1:9/f"], ["dir": "inner", "pause": "true"]])
        #expect(reply["result"]?.string != nil, "\(reply)")
    }

    @Test func aDownloadDirectoryGivenThroughASymlinkTakesTheDirItReports() throws {
        let directory = try TemporaryDirectory(prefix: "haul-rpc-linked-root")
        try FileManager.default.createDirectory(atPath: directory.file("real-dl"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory.file("dl"), withDestinationPath: directory.file("real-dl"))
        let queue = try DownloadQueue(stateDirectory: directory.file("state"))
        // GIVEN haul serve -d through a symlink
        let settings = ServeSettings(root: directory.file("dl"), concurrency: QueueConcurrency(limit: 1), overallLimit: RateLimiter(bytesPerSecond: 0))
        let service = RPCService(queue: queue, settings: settings, secret: nil, notify: { _, _ in }, shutdown: { _ in })
        func call(_ method: String, _ params: [JSONValue]) -> JSONValue {
            let request: JSONValue = ["jsonrpc": "2.0", "id": .int(1), "method": .string(method), "params": .array(params)]
            return service.handle(request.serialized()).response.flatMap(JSONValue.parse) ?? .null
        }
        // WHEN a client adds with dir set to what getGlobalOption reports (AriaNg does, every time),
        // or to the same directory by its real path, or to a subdirectory of either
        let reported = try #require(call("aria2.getGlobalOption", [])["result"]?["dir"]?.string)
        for (index, dir) in [reported, directory.file("real-dl"), reported + "/sub", directory.file("real-dl") + "/sub"].enumerated() {
            let reply = call("aria2.addUri", [[.string("http://127.0.0.1:9/f\(index)")], ["dir": .string(dir), "pause": "true"]])
            // THEN it is taken
            #expect(reply["result"]?.string != nil, "dir \(dir): \(reply)")
        }
    }

    @Test func anErrorAnswerAddsNothing() throws {
        let fixture = try Fixture()
        // WHEN addUri's position is not an integer
        let reply = fixture.call("aria2.addUri", [["http://127.0.0.1:9/f"], ["pause": "true"], "first"])
        // THEN the answer is an error, and no download was added (adding it again is not a duplicate)
        #expect(reply["error"] != nil, "\(reply)")
        #expect(try fixture.queue.items().isEmpty)
        let again = fixture.call("aria2.addUri", [["http://127.0.0.1:9/f"], ["pause": "true"], .int(0)])
        #expect(again["result"]?.string != nil, "\(again)")
    }
}
