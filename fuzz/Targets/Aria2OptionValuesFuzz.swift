// fuzz-sources: Sources/HaulJSON/*.swift Sources/HaulRPC/*.swift Sources/HaulServe/Aria2OptionValues.swift
// The option values of every aria2 method `haul serve` answers, as a client can send them:
// addUri's options object (with http and https URIs), changeOption's and changeGlobalOption's
// values, and the integers of addUri's position, changePosition and tellWaiting. Names come from
// the options Haul honours, ignores and refuses, or are arbitrary; values are arbitrary text,
// numbers at the edges of Int64 (with aria2's K and M), JSON numbers, flags, lists and objects;
// or the options object is arbitrary JSON. Checks: nothing traps; a call is either refused with
// an error or accepted with every value in range (a speed within 0...SpeedLimit's maximum and
// exact as the Double a token bucket keeps, 1 to 16 connections, a concurrency within its
// bound, a proxy `--proxy` would take, header fields that cannot break a line); an option name
// Haul does not take is always refused, and named; a proxy's password never shows in an error;
// a window and a moved position lie inside their list.

import Foundation

private let names: [String] =
    Array(Aria2OptionValues.honoured).sorted() + [
        "bt-tracker", "seed-time", "follow-torrent", "metalink-language", "ftp-pasv", "max-upload-limit", "max-tries", "gid", "min-split-size",
        "http-passwd", "remote-time", "file-allocation", "no-such-option", "", "bt-", "ftp-proxy",
    ] + Aria2OptionValues.globalNames
private let speedNames = ["max-download-limit", "max-overall-download-limit"]
private let uriChoices = ["http://example.org/f", "https://example.org/f", "http://u:pw@127.0.0.1:9/a?b#c", "HTTPS://EXAMPLE.ORG/"]
    .compactMap(URL.init(string:))
/// Passwords the target sends start with this, so an error that shows one is caught.
private let secretMark = "sekret-"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var input = FuzzInput(data, size)
    let options: [String: JSONValue]
    if input.byte() % 4 == 0 {
        // The rest as JSON: any object a client can send.
        guard let parsed = try? JSONParser.parse(Data(input.remainingText.utf8)), let object = parsed.object else { return 0 }
        options = object
    } else {
        var built: [String: JSONValue] = [:]
        for _ in 0..<Int(input.byte() % 6) {
            let name = input.bool() ? input.pick(names) : input.string(maxBytes: 24)
            built[name] = value(&input, for: name)
        }
        options = built
    }
    var uris: [URL] = []
    for _ in 0..<(1 + Int(input.byte() % 3)) { uris.append(input.pick(uriChoices)) }
    checkDownload(options, uris: uris)
    checkChange(options)
    checkGlobal(options, maximum: Int(input.byte() % 64) + 1)
    checkIntegers(&input)
    return 0
}

/// A value for option `name`: usually of the kind it takes, often at an edge.
private func value(_ input: inout FuzzInput, for name: String) -> JSONValue {
    switch input.byte() % 10 {
    case 0: return .string(input.string(maxBytes: 48))
    case 1, 2:
        let number = input.int64(in: Int64.min...Int64.max)
        return .string(String(number) + input.pick(["", "", "K", "M", "k", "m", "G", " ", "0"]))
    case 3: return .int(input.int64(in: Int64.min...Int64.max))
    case 4: return .string(input.pick(["true", "false", "", "True", "1"]))
    case 5: return .bool(input.bool())
    case 6: return .double(Double(bitPattern: input.uint64()))
    case 7:
        if name.hasSuffix("-passwd") { return .string(secretMark + input.string(maxBytes: 12)) }
        if name.hasSuffix("-proxy") {
            let user = input.bool() ? "u:\(secretMark)x@" : ""
            return .string(input.pick(["", "http://", "https://", "socks5h://", "socks4://", "ftp://"]) + user + input.string(maxBytes: 24))
        }
        return .string(input.string(maxBytes: 16))
    case 8: return .array([.string(input.string(maxBytes: 32)), .int(input.int64(in: -1...1))])
    default: return input.bool() ? .null : .object([:])
    }
}

private func checkDownload(_ options: [String: JSONValue], uris: [URL]) {
    let untaken = options.keys.sorted().first { !Aria2OptionValues.isTaken($0) }
    do throws(RPCError) {
        let result = try Aria2OptionValues.download(options, uris: uris)
        require(untaken == nil, "option \(untaken ?? "") was neither honoured nor refused")
        if let speed = result.options.bytesPerSecond { checkSpeed(speed, positive: true) }
        if let connections = result.options.connections {
            require((1...SegmentEligibility.maximumConnections).contains(connections), "\(connections) connections")
        }
        if let proxy = result.options.proxy, !proxy.isEmpty {
            do throws(ProxyURLError) {
                try ProxyRoute.validate(proxy)
            } catch {
                violated("a proxy --proxy refuses was taken: \(error.message)")
            }
        }
        if let noProxy = result.options.noProxy {
            require(!noProxy.isEmpty && !noProxy.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "no-proxy \(noProxy.debugDescription)")
        }
        for field in result.headers {
            require(!field.name.isEmpty, "an empty header name")
            let bytes = Array(field.name.utf8) + Array(field.value.utf8)
            require(!bytes.contains(0x0A) && !bytes.contains(0x0D), "a header that breaks its line: \(field.name.debugDescription)")
            require(!field.name.utf8.contains(0x20) && !field.name.utf8.contains(0x3A), "header name \(field.name.debugDescription)")
            require(!["range", "if-range"].contains(field.name.lowercased()), "header \(field.name) is Haul's own")
        }
        require(result.dir?.isEmpty != true && result.out?.isEmpty != true, "an empty path was taken as given")
    } catch {
        checkMessage(error, options)
        if let untaken {
            require(error.message.contains(Aria2OptionValues.shown(untaken)), "refusal of \(untaken.debugDescription) does not name it: \(error.message)")
        }
    }
}

private func checkChange(_ options: [String: JSONValue]) {
    do throws(RPCError) {
        if let speed = try Aria2OptionValues.downloadChange(options) { checkSpeed(speed, positive: false) }
        require(options.keys.allSatisfy { $0 == "max-download-limit" }, "changeOption took \(options.keys.sorted())")
    } catch {
        checkMessage(error, options)
    }
}

private func checkGlobal(_ options: [String: JSONValue], maximum: Int) {
    do throws(RPCError) {
        let change = try Aria2OptionValues.globalChange(options, maximumConcurrency: maximum)
        if let concurrency = change.concurrency { require((1...maximum).contains(concurrency), "concurrency \(concurrency) of \(maximum)") }
        if let speed = change.overallBytesPerSecond { checkSpeed(speed, positive: false) }
        require(options.keys.allSatisfy(Aria2OptionValues.globalNames.contains), "changeGlobalOption took \(options.keys.sorted())")
    } catch {
        checkMessage(error, options)
    }
    // Each speed alone, as a client sends one value: taken within the bound, or refused.
    for name in speedNames {
        if let speed = try? Aria2OptionValues.speed(options[name], name) { checkSpeed(speed, positive: false) }
    }
}

/// A speed a limiter will hold: within the bound, and exact as the Double its token bucket keeps
/// (Int64.max, taken once, became 2^63 there, and converting it back trapped).
private func checkSpeed(_ speed: Int64, positive: Bool) {
    require(speed >= (positive ? 1 : 0) && speed <= SpeedLimit.maximumBytesPerSecond, "speed \(speed) out of range")
    require(Int64(exactly: Double(speed)) == speed, "speed \(speed) does not survive a Double")
}

private func checkMessage(_ error: RPCError, _ options: [String: JSONValue]) {
    require(!error.message.isEmpty, "an error without a message")
    for (name, value) in options where name.hasSuffix("-passwd") {
        if case .string(let password) = value, password.hasPrefix(secretMark), password.count > secretMark.count + 2 {
            require(!error.message.contains(password), "an error shows the password \(password.debugDescription): \(error.message)")
        }
    }
}

/// addUri's position, changePosition's pos, tellWaiting's offset and num: any Int64 or string.
private func checkIntegers(_ input: inout FuzzInput) {
    let params: [JSONValue] = [
        .int(input.int64(in: Int64.min...Int64.max)), .string(input.string(maxBytes: 24)), .double(Double(bitPattern: input.uint64())),
    ]
    let list = Array(0..<Int(input.byte() % 9))
    for first in params {
        for second in params {
            guard let offset = try? RPCParams.integer([first, second], at: 0, "offset"),
                let count = try? RPCParams.integer([first, second], at: 1, "num")
            else { continue }
            let window = RPCParams.window(list, offset: offset, count: count)
            require(window.count <= list.count && window.count <= max(0, count), "window of \(window.count) for \(offset), \(count)")
            for origin in [RPCParams.Origin.set, .current, .end] where !list.isEmpty {
                let index = RPCParams.movedIndex(current: list.count / 2, count: list.count, position: offset, from: origin)
                require(list.indices.contains(index), "position \(index) for \(offset) \(origin)")
            }
        }
    }
}
