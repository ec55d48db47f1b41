import Foundation
import Testing

@testable import HaulServe

@Suite("GIDs, request policy and aria2 options (pure)")
struct ServePureTests {
    @Test func gidsAreSixteenHexDigitsOfTheStoreID() {
        #expect(GID.string(1) == "0000000000000001")
        #expect(GID.string(0x2a_ffff) == "00000000002affff")
        #expect(GID.id("0000000000000001") == 1)
        #expect(GID.id("00000000002AFFFF") == 0x2a_ffff)
        for bad in ["", "1", "000000000000001", "00000000000000001", "000000000000000g", "0000000000000000", "ffffffffffffffff", " 000000000000001"] {
            #expect(GID.id(bad) == nil, "\(bad)")
        }
    }

    @Test func loopbackServerAnswersOnlyLoopbackHostsAndItsOwnOrigin() {
        let policy = RequestPolicy(loopbackOnly: true, allowedOrigins: ["http://127.0.0.1:8080"])
        // Scripts (no Origin) on a loopback Host
        #expect(policy.refusal(host: "127.0.0.1:6800", origin: nil) == nil)
        #expect(policy.refusal(host: "localhost:6800", origin: nil) == nil)
        #expect(policy.refusal(host: "[::1]:6800", origin: nil) == nil)
        // The dashboard itself, and a web UI the user allowed
        #expect(policy.refusal(host: "127.0.0.1:6800", origin: "http://127.0.0.1:6800") == nil)
        #expect(policy.refusal(host: "127.0.0.1:6800", origin: "http://127.0.0.1:8080") == nil)
        // Another page (CSRF), a page whose domain resolves to 127.0.0.1 (DNS rebinding), no Host
        #expect(policy.refusal(host: "127.0.0.1:6800", origin: "http://evil.example") != nil)
        #expect(policy.refusal(host: "evil.example:6800", origin: "http://evil.example:6800") != nil)
        #expect(policy.refusal(host: "127.0.0.1.evil.example:6800", origin: nil) != nil)
        #expect(policy.refusal(host: nil, origin: nil) != nil)
        #expect(policy.refusal(host: "127.0.0.1:6800", origin: "null") != nil)
        // What --listen is judged by: the same names, bare
        for name in ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]"] {
            #expect(RequestPolicy.isLoopbackName(name), "\(name)")
        }
        for name in ["0.0.0.0", "192.168.1.5", "127.0.0.1.evil.example", "::", "example.com", ""] {
            #expect(!RequestPolicy.isLoopbackName(name), "\(name)")
        }
        // Listening beyond loopback (with a secret), any Host, still no foreign Origin
        let open = RequestPolicy(loopbackOnly: false, allowedOrigins: [])
        #expect(open.refusal(host: "192.168.1.5:6800", origin: nil) == nil)
        #expect(open.refusal(host: "192.168.1.5:6800", origin: "http://192.168.1.5:6800") == nil)
        #expect(open.refusal(host: "192.168.1.5:6800", origin: "http://evil.example") != nil)
    }

    @Test func clientPathsStayInsideTheDownloadDirectory() throws {
        let options = Aria2Options(root: "/srv/dl")
        let url = "http://127.0.0.1:1/f.bin"
        func destination(_ given: [String: JSONValue]) throws -> String {
            switch try options.request(for: [url], given).request.destination {
            case .file(let path): return path
            case .directory(let path): return path + "/"
            case .standardOutput: return "-"
            }
        }
        #expect(try destination([:]) == "/srv/dl/")
        #expect(try destination(["dir": "sub/inner"]) == "/srv/dl/sub/inner/")
        #expect(try destination(["dir": "/srv/dl/sub"]) == "/srv/dl/sub/")
        #expect(try destination(["out": "a.bin"]) == "/srv/dl/a.bin")
        #expect(try destination(["dir": "x", "out": "y/z.bin"]) == "/srv/dl/x/y/z.bin")
        // Unsafe characters are made safe by the same sanitizer as server-supplied names
        #expect(try destination(["out": "re\u{202E}port|1.pdf"]) == "/srv/dl/report_1.pdf")
        for escape: [String: JSONValue] in [
            ["dir": "../etc"], ["dir": "/etc"], ["dir": "/srv/dl/../etc"], ["dir": "/srv/dlx"], ["out": "../x"], ["out": "a/../../x"],
            ["out": ".."], ["dir": "a/./b"],
        ] {
            #expect(throws: RPCError.self, "\(escape)") { try destination(escape) }
        }
    }

    @Test func aria2OptionsBecomeTheRequest() throws {
        let options = Aria2Options(root: "/srv/dl")
        let (request, paused) = try options.request(
            for: ["https://example.org/f.iso"],
            [
                "header": ["X-One: 1", "Authorization: Bearer t"], "split": "4", "max-connection-per-server": "2",
                "checksum": .string("sha-256=" + String(repeating: "ab", count: 32)), "max-download-limit": "1M", "pause": "true",
            ])
        #expect(paused)
        #expect(request.headers.contains("X-One"))
        #expect(request.headers.contains("Authorization"))
        #expect(request.connections == 2)
        #expect(request.checksum?.expectedHex == String(repeating: "ab", count: 32))
        #expect(request.bytesPerSecond == 1_048_576)
        #expect(try Aria2OptionValues.speed("500K", "x") == 512_000)
        #expect(try Aria2OptionValues.speed("0", "x") == 0)
        for bad: [String: JSONValue] in [
            ["header": "Range: bytes=0-"], ["header": "X: a\r\nInjected: b"], ["header": "nocolon"], ["split": "0"], ["split": "many"],
            ["checksum": "sha-256=zz"], ["max-download-limit": "fast"], ["header": .int(3)], ["dir": ["a"]],
        ] {
            #expect(throws: RPCError.self, "\(bad)") { _ = try options.request(for: ["http://127.0.0.1/f"], bad) }
        }
        for uri in ["ftp://example.org/f", "file:///etc/passwd", "not a uri", "http://"] {
            #expect(throws: RPCError.self, "\(uri)") { _ = try options.request(for: [uri], [:]) }
        }
    }

    @Test func listWindowsFollowAria2OffsetRules() {
        let list = [1, 2, 3, 4, 5]
        #expect(RPCParams.window(list, offset: 0, count: 2) == [1, 2])
        #expect(RPCParams.window(list, offset: 3, count: 10) == [4, 5])
        #expect(RPCParams.window(list, offset: 9, count: 2) == [])
        #expect(RPCParams.window(list, offset: -1, count: 2) == [5, 4])
        #expect(RPCParams.window(list, offset: -5, count: 3) == [1])
        #expect(RPCParams.window(list, offset: -9, count: 3) == [])
        #expect(RPCParams.window(list, offset: 0, count: 0) == [])
    }
}
