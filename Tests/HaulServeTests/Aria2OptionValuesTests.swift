import Foundation
import HaulCore
import Testing

@testable import HaulServe

/// `Aria2OptionValues`: every value a client can send to addUri, changeOption and
/// changeGlobalOption, read and range-checked without a server.
@Suite("aria2 option values (pure)")
struct Aria2OptionValuesTests {
    static let http = [URL(string: "http://example.org/f.iso")].compactMap { $0 }

    static func refusal(_ options: [String: JSONValue], uris: [URL] = http) -> String? {
        do {
            _ = try Aria2OptionValues.download(options, uris: uris)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func aSpeedIsAWholeNumberOfBytesUpToOneTebibytePerSecond() throws {
        // GIVEN speeds as aria2 writes them, up to the bound
        let kept: [(JSONValue, Int64)] = [
            ("0", 0), ("1", 1), ("500K", 512_000), ("500k", 512_000), ("1M", 1 << 20), (" 7 ", 7), (.int(1_234_567), 1_234_567),
            ("1048576M", SpeedLimit.maximumBytesPerSecond), ("1073741824K", SpeedLimit.maximumBytesPerSecond),
            ("1099511627776", SpeedLimit.maximumBytesPerSecond),
        ]
        for (value, bytes) in kept {
            // THEN each is kept to the byte
            #expect(try Aria2OptionValues.speed(value, "max-download-limit") == bytes, "\(value)")
        }
        // GIVEN speeds above the bound (Int64.max killed the server), ones K or M would overflow,
        // and ones that are no whole number
        let aboveBound: [JSONValue] = [
            "9223372036854775807", .int(Int64.max), "1099511627777", "1048577M", "8796093022208M", "9007199254740993K",
            "99999999999999999999999999",
        ]
        for value in aboveBound {
            // THEN each is refused with an error naming the option and the bound
            #expect {
                _ = try Aria2OptionValues.speed(value, "max-overall-download-limit")
            } throws: { error in
                let message = (error as? RPCError)?.message ?? ""
                return message.contains("max-overall-download-limit") && message.contains("1099511627776")
            }
        }
        for value: JSONValue in ["-1", .int(-5), "1.5M", "1G", "fast", "K", "0x10", "+5", .double(1.5), .array([]), .object([:])] {
            #expect(throws: RPCError.self, "\(value)") { _ = try Aria2OptionValues.speed(value, "max-download-limit") }
        }
        // AND nothing, null and "" ask for nothing
        for value: JSONValue? in [nil, .null, ""] {
            #expect(try Aria2OptionValues.speed(value, "max-download-limit") == nil)
        }
    }

    @Test func splitAboveSixteenIsClampedAndTheSmallerOfTheTwoWins() throws {
        func connections(_ options: [String: JSONValue]) throws -> Int? { try Aria2OptionValues.connections(options) }
        #expect(try connections(["split": "32"]) == 16)
        #expect(try connections(["max-connection-per-server": .int(64)]) == 16)
        #expect(try connections(["split": "99999999999999999999999"]) == 16)
        #expect(try connections(["split": "4", "max-connection-per-server": "32"]) == 4)
        #expect(try connections(["split": "016"]) == 16)
        #expect(try connections([:]) == nil)
        for bad: JSONValue in ["0", "000", "-1", "many", "1.5", " ", .int(-3), .double(2)] {
            #expect(throws: RPCError.self, "\(bad)") { try connections(["split": bad]) }
        }
    }

    @Test func everyOptionIsHonouredIgnoredOrRefusedByName() throws {
        // GIVEN options no aria2 client's download can do without Haul doing them
        for name in ["no-such-option", "max-tries", "gid", "min-split-size", "http-passwd", "conditional-get", "file-allocation"] {
            // THEN each is refused, the error naming it
            let message = try #require(Self.refusal([name: "1"]), "\(name) was taken")
            #expect(message.contains(name), "\(message)")
        }
        // AND aria2's defaults Haul cannot give are refused, the ones it keeps taken
        #expect(Self.refusal(["dry-run": "true"])?.contains("dry-run") == true)
        #expect(Self.refusal(["auto-file-renaming": "true"])?.contains("auto-file-renaming") == true)
        #expect(Self.refusal(["dry-run": "false", "auto-file-renaming": .bool(false)]) == nil)
        #expect(Self.refusal(["pause": "yes"])?.contains("pause") == true)
        // AND the options of BitTorrent, Metalink, FTP and uploading are taken and mean nothing
        let ignored: [String: JSONValue] = [
            "bt-tracker": "udp://t.example:80", "bt-max-peers": "5", "seed-time": "0", "seed-ratio": "1.0", "follow-torrent": "mem",
            "metalink-language": "en", "ftp-pasv": "true", "ftp-user": "u", "max-upload-limit": "1M", "select-file": "1-3",
        ]
        let options = try Aria2OptionValues.download(ignored, uris: Self.http)
        #expect(options == Aria2DownloadOptions())
        // AND an option name a megabyte long is refused with a short message
        let long = String(repeating: "x", count: 1 << 20)
        #expect((Self.refusal([long: "1"])?.count ?? 0) < 400)
    }

    @Test func honouredOptionsBecomeTypedValues() throws {
        let options = try Aria2OptionValues.download(
            [
                "dir": "sub", "out": "", "header": ["X-One: 1", ""], "user-agent": "agent/1", "referer": "*", "split": "32", "pause": .bool(true),
                "check-certificate": "false", "continue": "true", "allow-overwrite": "true", "max-download-limit": "2M", "no-proxy": "example.com",
            ],
            uris: [URL(string: "http://user:pw@example.org/f.iso#part")].compactMap { $0 })
        #expect(options.dir == "sub")
        #expect(options.out == nil)
        #expect(options.headers.fields.map(\.name) == ["X-One", "User-Agent", "Referer"])
        #expect(options.headers["Referer"] == "http://example.org/f.iso")
        #expect(options.headers["User-Agent"] == "agent/1")
        #expect(options.options.connections == 16)
        #expect(options.paused)
        #expect(options.options.verifyTLS == false)
        #expect(options.existingFile == .continueIt)
        #expect(options.options.bytesPerSecond == 2 << 20)
        #expect(options.options.noProxy == "example.com")
        #expect(try Aria2OptionValues.download(["allow-overwrite": "true"], uris: Self.http).existingFile == .overwrite)
        #expect(try Aria2OptionValues.download(["max-download-limit": "0"], uris: Self.http).options.bytesPerSecond == nil)
        for bad: [String: JSONValue] in [
            ["user-agent": "a\r\nX-Injected: 1"], ["referer": "x\ny"], ["header": "Range: bytes=0-"], ["no-proxy": "a\u{0}b"], ["header": .int(3)],
        ] {
            #expect(Self.refusal(bad) != nil, "\(bad)")
        }
    }

    @Test func theProxyOptionsFoldTheirLoginIntoOneProxyForEveryURI() throws {
        func proxy(_ options: [String: JSONValue], _ uris: [String] = ["http://example.org/f"]) throws -> String? {
            try Aria2OptionValues.download(options, uris: uris.compactMap(URL.init(string:))).options.proxy
        }
        // all-proxy, in aria2's form without a scheme, with its login options (encoded)
        #expect(try proxy(["all-proxy": "proxy:3128", "all-proxy-user": "bob", "all-proxy-passwd": "p@ss:w/rd"]) == "http://bob:p%40ss%3Aw%2Frd@proxy:3128")
        // the options' login over the URL's; the URL's user kept when only a password is given
        #expect(try proxy(["all-proxy": "http://old:old@proxy:3128", "all-proxy-user": "new"]) == "http://new:old@proxy:3128")
        #expect(try proxy(["all-proxy": "http://bob@proxy:3128", "all-proxy-passwd": "pw"]) == "http://bob:pw@proxy:3128")
        // the scheme's own proxy over all-proxy
        #expect(try proxy(["all-proxy": "socks5h://s:1080", "http-proxy": "h:3128"]) == "http://h:3128")
        #expect(try proxy(["all-proxy": "socks5h://s:1080", "http-proxy": "h:3128"], ["https://example.org/f"]) == "socks5h://s:1080")
        #expect(try proxy(["https-proxy": "h:3128"], ["https://a/f", "https://b/f"]) == "http://h:3128")
        // none, or "" for none at all (the environment's too)
        #expect(try proxy([:]) == nil)
        #expect(try proxy(["https-proxy": "h:3128"]) == nil)
        #expect(try proxy(["all-proxy": ""]) == "")
        // URIs that would go different ways, a login without its proxy, a proxy that is no URL
        // Haul can use: refused by name, never showing the password
        let refusals: [([String: JSONValue], [String], String)] = [
            (["http-proxy": "h:3128"], ["http://a/f", "https://a/f"], "http-proxy"),
            (["http-proxy": "h:3128", "https-proxy": "i:3128"], ["http://a/f", "https://a/f"], "https-proxy"),
            (["all-proxy-passwd": "pw-77"], ["http://a/f"], "all-proxy-passwd"),
            (["https-proxy-user": "bob"], ["http://a/f"], "https-proxy-user"),
            (["all-proxy": "ftp://u:pw-77@h:21"], ["http://a/f"], "all-proxy"),
            (["http-proxy": "socks4://h:1080", "http-proxy-passwd": "pw-77"], ["http://a/f"], "http-proxy"),
            (["all-proxy": "http://h:99999", "all-proxy-user": "u", "all-proxy-passwd": "pw-77"], ["http://a/f"], "all-proxy"),
            (["all-proxy": "http://h:3128/path"], ["http://a/f"], "all-proxy"),
            (["all-proxy": .array(["h:3128"])], ["http://a/f"], "all-proxy"),
        ]
        for (options, uris, name) in refusals {
            let message = try #require(Self.refusal(options, uris: uris.compactMap(URL.init(string:))), "\(options) was taken")
            #expect(message.contains(name), "\(message)")
            #expect(!message.contains("pw-77"), "\(message)")
        }
        #expect(Aria2OptionValues.percentEncoded("a b~ü") == "a%20b~%C3%BC")
    }

    @Test func changeOptionAndChangeGlobalOptionTakeOnlyWhatTheyChange() throws {
        #expect(try Aria2OptionValues.downloadChange(["max-download-limit": "1M"]) == 1 << 20)
        #expect(try Aria2OptionValues.downloadChange(["max-download-limit": "0"]) == 0)
        #expect(try Aria2OptionValues.downloadChange([:]) == nil)
        for bad: [String: JSONValue] in [["split": "4"], ["max-download-limit": "9223372036854775807"], ["max-download-limit": "-1"]] {
            #expect(throws: RPCError.self, "\(bad)") { _ = try Aria2OptionValues.downloadChange(bad) }
        }
        let change = try Aria2OptionValues.globalChange(
            ["max-concurrent-downloads": .int(3), "max-overall-download-limit": "1048576M"], maximumConcurrency: 16)
        #expect(change == .init(concurrency: 3, overallBytesPerSecond: SpeedLimit.maximumBytesPerSecond))
        for bad: [String: JSONValue] in [
            ["max-concurrent-downloads": "0"], ["max-concurrent-downloads": "17"], ["max-concurrent-downloads": "9223372036854775808"],
            ["max-concurrent-downloads": .int(Int64.min)], ["max-overall-download-limit": "9223372036854775807"], ["dir": "/"],
        ] {
            #expect(throws: RPCError.self, "\(bad)") { _ = try Aria2OptionValues.globalChange(bad, maximumConcurrency: 16) }
        }
    }

    @Test func aMeasuredSpeedBecomesAWholeNumberWithoutTrapping() {
        #expect(ProgressMeter.wholeBytesPerSecond(1234.9) == 1234)
        #expect(ProgressMeter.wholeBytesPerSecond(-5) == 0)
        #expect(ProgressMeter.wholeBytesPerSecond(.nan) == 0)
        #expect(ProgressMeter.wholeBytesPerSecond(-.infinity) == 0)
        #expect(ProgressMeter.wholeBytesPerSecond(.infinity) == Int64.max)
        #expect(ProgressMeter.wholeBytesPerSecond(Double(Int64.max)) == Int64.max)
        #expect(ProgressMeter.wholeBytesPerSecond(9_223_372_036_854_774_784) == 9_223_372_036_854_774_784)
    }
}
