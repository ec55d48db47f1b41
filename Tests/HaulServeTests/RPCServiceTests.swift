import Foundation
import Haul
import HaulTestSupport
import Synchronization
import Testing

@testable import HaulServe

/// The JSON-RPC methods against a real queue store, without a server or a network: result shapes
/// as the aria2 manual gives them, the token rules, and bad input answered with errors.
@Suite("aria2 JSON-RPC methods")
struct RPCServiceTests {
    /// What the service reported through its callbacks.
    final class Recorder: Sendable {
        let notifications = Mutex<[String]>([])
        let shutdowns = Atomic<Int>(0)
    }

    final class Fixture: Sendable {
        let directory: TemporaryDirectory
        let queue: DownloadQueue
        let service: RPCService
        let recorder = Recorder()

        init(secret: String? = "s3cret") throws {
            directory = try TemporaryDirectory(prefix: "haul-rpc")
            queue = try DownloadQueue(stateDirectory: directory.file("state"))
            let settings = ServeSettings(
                root: directory.file("dl"), concurrency: QueueConcurrency(limit: 5), overallLimit: RateLimiter(bytesPerSecond: 0))
            let recorder = self.recorder
            service = RPCService(
                queue: queue, settings: settings, secret: secret,
                notify: { method, id in recorder.notifications.withLock { $0.append("\(method) \(GID.string(id))") } },
                shutdown: { _ in recorder.shutdowns.add(1, ordering: .relaxed) })
        }

        /// The parsed reply to `method` with `params` (the token first, unless `token` is nil).
        func call(_ method: String, _ params: [JSONValue] = [], token: String? = "s3cret") -> JSONValue {
            let full = (token.map { [JSONValue.string("token:" + $0)] } ?? []) + params
            let request: JSONValue = ["jsonrpc": "2.0", "id": "q1", "method": .string(method), "params": .array(full)]
            return raw(request.serialized())
        }

        func raw(_ body: Data) -> JSONValue {
            service.handle(body).response.flatMap(JSONValue.parse) ?? .null
        }

        func result(_ method: String, _ params: [JSONValue] = []) throws -> JSONValue {
            let reply = call(method, params)
            return try #require(reply["result"], "\(method): \(reply)")
        }

        func add(_ name: String, paused: Bool = true) throws -> String {
            let options: JSONValue = ["out": .string(name), "pause": paused ? "true" : "false"]
            let uri = JSONValue.string("http://127.0.0.1:9/" + name)
            return try #require(try result("aria2.addUri", [[uri], options]).string)
        }
    }

    @Test func everyCallNeedsTheTokenExceptTheTwoListings() throws {
        let fixture = try Fixture()
        #expect(fixture.call("aria2.getVersion", token: nil)["error"]?["message"] == "Unauthorized")
        #expect(fixture.call("aria2.getVersion", token: "wrong")["error"]?["message"] == "Unauthorized")
        #expect(fixture.call("aria2.getVersion", token: "s3cre")["error"]?["code"]?.integer == 1)
        let version = try fixture.result("aria2.getVersion")
        #expect(version["version"]?.string == HaulVersion.current)
        #expect(version["enabledFeatures"]?.array?.isEmpty == false)
        let methods = try #require(fixture.call("system.listMethods", token: nil)["result"]?.array)
        #expect(methods.contains("aria2.addUri") && methods.contains("system.multicall"))
        #expect(fixture.call("system.listNotifications", token: nil)["result"]?.array?.contains("aria2.onDownloadComplete") == true)
        // The id comes back as sent
        #expect(fixture.call("aria2.getVersion")["id"] == "q1")
    }

    @Test func multicallChecksEachCallsTokenAndWrapsResults() throws {
        let fixture = try Fixture()
        let calls: JSONValue = [
            ["methodName": "aria2.getVersion", "params": ["token:s3cret"]],
            ["methodName": "aria2.getVersion", "params": ["token:wrong"]],
            ["methodName": "aria2.nosuch", "params": ["token:s3cret"]],
            ["methodName": "system.multicall", "params": []],
        ]
        let reply = fixture.call("system.multicall", [calls], token: nil)
        let results = try #require(reply["result"]?.array)
        #expect(results.count == 4)
        #expect(results[0].array?.first?["version"] != nil)
        #expect(results[1]["message"] == "Unauthorized")
        #expect(results[2]["code"]?.integer == -32601)
        #expect(results[3]["code"] != nil)
    }

    @Test func badInputGetsJSONRPCErrorsNeverACrash() throws {
        let fixture = try Fixture()
        #expect(fixture.raw(Data("{not json".utf8))["error"]?["code"]?.integer == -32700)
        #expect(fixture.raw(Data("[]".utf8))["error"]?["code"]?.integer == -32600)
        #expect(fixture.raw(Data("42".utf8))["error"]?["code"]?.integer == -32600)
        #expect(fixture.raw(Data(#"{"method": 7}"#.utf8))["error"]?["code"]?.integer == -32600)
        // A JSON-RPC notification (no id) gets no answer, but its token still counts
        let silent = fixture.service.handle(Data(#"{"jsonrpc":"2.0","method":"aria2.getVersion","params":["token:s3cret"]}"#.utf8))
        #expect(silent.response == nil && silent.authenticated)
        let silentBad = fixture.service.handle(Data(#"{"jsonrpc":"2.0","method":"aria2.getVersion","params":["token:no"]}"#.utf8))
        #expect(silentBad.response == nil && !silentBad.authenticated)
        #expect(fixture.raw(Data(#"{"id": 3, "method": "aria2.getVersion", "params": {"a": 1}}"#.utf8))["error"]?["code"]?.integer == -32602)
        #expect(fixture.raw(Data(repeating: 0x20, count: RPCService.maximumBodyBytes + 1))["error"]?["message"] == "Request too large")
        #expect(fixture.call("aria2.nosuch")["error"]?["code"]?.integer == -32601)
        #expect(fixture.call("aria2.addTorrent", ["abc"])["error"]?["message"]?.string?.contains("not supported") == true)
        // Wrong types and missing parameters
        for (method, params): (String, [JSONValue]) in [
            ("aria2.addUri", []), ("aria2.addUri", ["http://x"]), ("aria2.addUri", [[.int(1)]]), ("aria2.addUri", [["http://127.0.0.1/f"], "opts"]),
            ("aria2.tellStatus", []), ("aria2.tellStatus", [.int(1)]), ("aria2.tellStatus", ["0000000000000009"]), ("aria2.tellStatus", ["zz"]),
            ("aria2.tellWaiting", ["a", "b"]), ("aria2.tellStopped", [.int(0)]), ("aria2.changePosition", ["0000000000000001", .int(0), "POS_X"]),
            ("aria2.changeGlobalOption", [["max-concurrent-downloads": "0"]]), ("aria2.changeGlobalOption", [["dir": "/"]]),
            ("aria2.tellActive", ["keys"]), ("aria2.pause", [.null]),
        ] {
            let reply = fixture.call(method, params)
            #expect(reply["error"]?["code"] != nil, "\(method) \(params) answered \(reply)")
        }
        // A batch: each request answered in order
        let batch = Data(#"[{"jsonrpc":"2.0","id":1,"method":"system.listMethods"},{"jsonrpc":"2.0","id":2,"method":"aria2.nosuch"}]"#.utf8)
        let replies = try #require(fixture.raw(batch).array)
        #expect(replies.count == 2 && replies[0]["result"] != nil && replies[1]["error"] != nil)
    }

    @Test func addedDownloadsAreListedWithAria2sFieldsAndNumbersAsStrings() throws {
        let fixture = try Fixture()
        let first = try fixture.add("a.bin")
        let second = try fixture.add("b.bin")
        #expect(first.count == 16 && second.count == 16 && first != second)
        let status = try fixture.result("aria2.tellStatus", [.string(first)])
        #expect(status["gid"]?.string == first)
        #expect(status["status"] == "paused")
        #expect(status["dir"]?.string == fixture.directory.file("dl"))
        #expect(status["files"]?.array?.first?["path"]?.string == fixture.directory.file("dl") + "/a.bin")
        #expect(status["files"]?.array?.first?["uris"]?.array?.first?["uri"] == "http://127.0.0.1:9/a.bin")
        for key in ["totalLength", "completedLength", "downloadSpeed", "uploadSpeed", "connections", "uploadLength"] {
            #expect(status[key]?.string.flatMap { Int64($0) } != nil, "\(key) is \(String(describing: status[key]))")
        }
        #expect(status["uploadSpeed"] == "0")
        // The keys filter
        let filtered = try fixture.result("aria2.tellStatus", [.string(first), ["gid", "status"]])
        #expect(filtered.object?.keys.sorted() == ["gid", "status"])
        // A paused download is waiting in aria2's sense: listed by tellWaiting, counted in numWaiting
        let waiting = try #require(try fixture.result("aria2.tellWaiting", [.int(0), .int(10), ["gid"]]).array)
        #expect(waiting.map { $0["gid"]?.string } == [first, second])
        #expect(try fixture.result("aria2.getGlobalStat")["numWaiting"] == "2")
        #expect(try fixture.result("aria2.tellActive").array?.isEmpty == true)
        #expect(try fixture.result("aria2.getFiles", [.string(first)]).array?.count == 1)
        #expect(try fixture.result("aria2.getUris", [.string(first)]).array?.first?["status"] != nil)
        #expect(try fixture.result("aria2.getPeers", [.string(first)]).array?.isEmpty == true)
        #expect(try fixture.result("aria2.getOption", [.string(first)])["out"] == "a.bin")
        // A download into the directory, before any response named its file: the URL's name (as aria2)
        let unnamed = try #require(try fixture.result("aria2.addUri", [["http://127.0.0.1:9/dir/c.bin"], ["pause": "true"]]).string)
        let path = try fixture.result("aria2.tellStatus", [.string(unnamed)])["files"]?.array?.first?["path"]
        #expect(path?.string == fixture.directory.file("dl") + "/c.bin")
    }

    @Test func pauseUnpauseRemoveAndPurgeAnswerAsAria2Does() throws {
        let fixture = try Fixture()
        let gid = try fixture.add("a.bin", paused: false)
        #expect(try fixture.result("aria2.tellStatus", [.string(gid), ["status"]])["status"] == "waiting")
        #expect(try fixture.result("aria2.pause", [.string(gid)]).string == gid)
        #expect(try fixture.result("aria2.tellStatus", [.string(gid), ["status"]])["status"] == "paused")
        #expect(fixture.recorder.notifications.withLock { $0 } == ["aria2.onDownloadPause \(gid)"])
        #expect(try fixture.result("aria2.unpause", [.string(gid)]).string == gid)
        #expect(try fixture.result("aria2.tellStatus", [.string(gid), ["status"]])["status"] == "waiting")
        #expect(fixture.call("aria2.unpause", [.string(gid)])["error"] != nil)
        #expect(try fixture.result("aria2.pauseAll") == "OK")
        #expect(try fixture.result("aria2.unpauseAll") == "OK")
        #expect(try fixture.result("aria2.remove", [.string(gid)]).string == gid)
        let stopped = try #require(try fixture.result("aria2.tellStopped", [.int(0), .int(10)]).array)
        #expect(stopped.first?["status"] == "removed" && stopped.first?["errorCode"] != nil)
        #expect(fixture.call("aria2.remove", [.string(gid)])["error"] != nil)
        #expect(try fixture.result("aria2.purgeDownloadResult") == "OK")
        #expect(try fixture.result("aria2.tellStopped", [.int(0), .int(10)]).array?.isEmpty == true)
        #expect(fixture.call("aria2.tellStatus", [.string(gid)])["error"]?["message"] == .string("GID \(gid) is not found"))
    }

    @Test func changePositionReordersTheWaitingList() throws {
        let fixture = try Fixture()
        let gids = try (0..<4).map { try fixture.add("f\($0).bin") }
        #expect(try fixture.result("aria2.changePosition", [.string(gids[3]), .int(0), "POS_SET"]) == .int(0))
        #expect(try fixture.result("aria2.changePosition", [.string(gids[0]), .int(-1), "POS_END"]) == .int(2))
        #expect(try fixture.result("aria2.changePosition", [.string(gids[1]), .int(1), "POS_CUR"]) == .int(2))
        let order = try #require(try fixture.result("aria2.tellWaiting", [.int(0), .int(10), ["gid"]]).array).compactMap { $0["gid"]?.string }
        #expect(order == [gids[3], gids[0], gids[1], gids[2]])
    }

    @Test func optionsAndGlobalOptionsChangeAndRefuseWhatTheyCannot() throws {
        let fixture = try Fixture()
        let gid = try fixture.add("a.bin")
        #expect(try fixture.result("aria2.changeOption", [.string(gid), ["max-download-limit": "2M"]]) == "OK")
        #expect(try fixture.result("aria2.getOption", [.string(gid)])["max-download-limit"] == "2097152")
        #expect(fixture.call("aria2.changeOption", [.string(gid), ["dir": "/tmp"]])["error"] != nil)
        #expect(try fixture.result("aria2.changeGlobalOption", [["max-concurrent-downloads": "3", "max-overall-download-limit": "100K"]]) == "OK")
        let global = try fixture.result("aria2.getGlobalOption")
        #expect(global["max-concurrent-downloads"] == "3")
        #expect(global["max-overall-download-limit"] == "102400")
        #expect(try fixture.result("aria2.getSessionInfo")["sessionId"]?.string?.isEmpty == false)
        #expect(try fixture.result("aria2.saveSession") == "OK")
        #expect(try fixture.result("aria2.shutdown") == "OK")
        #expect(fixture.recorder.shutdowns.load(ordering: .relaxed) == 1)
    }

    @Test func furtherURIsOfAddUriBecomeMirrors() throws {
        let fixture = try Fixture()
        let gid = try #require(
            try fixture.result("aria2.addUri", [["http://127.0.0.1:9/f.bin", "http://127.0.0.2:9/f.bin"], ["pause": "true"]]).string)
        let id = try #require(GID.id(gid))
        #expect(try fixture.queue.storedOptions(id)?.mirrors.map(\.absoluteString) == ["http://127.0.0.2:9/f.bin"])
        #expect(fixture.call("aria2.addUri", [["http://127.0.0.1:9/g.bin", "ftp://127.0.0.2/g.bin"]])["error"] != nil)
    }

    @Test func remoteTimeOfAddUriIsStoredWithTheDownloadAndShownByGetOption() throws {
        // GIVEN a download added with aria2's remote-time=true, and one without it
        let fixture = try Fixture()
        let gid = try #require(try fixture.result("aria2.addUri", [["http://127.0.0.1:9/t.bin"], ["pause": "true", "remote-time": "true"]]).string)
        let plain = try #require(try fixture.result("aria2.addUri", [["http://127.0.0.1:9/u.bin"], ["pause": "true"]]).string)

        // WHEN their stored options and getOption are read
        let stored = try fixture.queue.storedOptions(try #require(GID.id(gid)))

        // THEN the first keeps the option and shows it; the second has neither; a value that is no flag is refused
        #expect(stored?.usesRemoteTime == true)
        #expect(try fixture.result("aria2.getOption", [.string(gid)])["remote-time"] == "true")
        #expect(try fixture.queue.storedOptions(try #require(GID.id(plain)))?.usesRemoteTime == false)
        #expect(try fixture.result("aria2.getOption", [.string(plain)])["remote-time"] == nil)
        #expect(fixture.call("aria2.addUri", [["http://127.0.0.1:9/v.bin"], ["remote-time": "yes"]])["error"] != nil)
    }

    @Test func addUriCannotWriteOutsideTheDownloadDirectory() throws {
        let fixture = try Fixture()
        for options: JSONValue in [["dir": "/etc"], ["out": "../../escape"], ["dir": "..", "out": "x"]] {
            let reply = fixture.call("aria2.addUri", [["http://127.0.0.1:9/f"], options])
            #expect(reply["error"] != nil, "\(options) answered \(reply)")
        }
        #expect(try fixture.queue.items().isEmpty)
    }
}
