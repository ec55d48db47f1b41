import Foundation
import Haul
import HaulCore
import HaulRPC

/// `getOption` / `changeOption` for one download, and the global options.
extension RPCService {
    func getOption(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let item = try item(id, gid)
        let stored = try queue.storedOptions(id)
        var options: [String: JSONValue] = [
            "dir": .string(status(of: item).dir),
            "max-download-limit": .string(String(stored?.bytesPerSecond ?? 0)),
        ]
        if !item.destinationIsDirectory { options["out"] = .string((item.destination as NSString).lastPathComponent) }
        if let connections = stored?.connections {
            options["split"] = .string(String(connections))
            options["max-connection-per-server"] = .string(String(connections))
        }
        if let checksum = stored?.checksum { options["checksum"] = .string(checksum.description) }
        return .object(options)
    }

    /// Only `max-download-limit` changes on a download (at once when it runs); anything else is
    /// refused by name rather than ignored.
    func changeOption(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        _ = try item(id, gid)
        let options = try RPCParams.options(params, at: 1)
        for name in options.keys where name != "max-download-limit" {
            throw RPCError("option \(name) cannot be changed by haul's aria2.changeOption (only max-download-limit)")
        }
        if let limit = try Aria2Options.speed(options["max-download-limit"], "max-download-limit") {
            try queue.setSpeedLimit(id, bytesPerSecond: limit)
        }
        return "OK"
    }

    func globalOptions() -> JSONValue {
        [
            "dir": .string(settings.root),
            "max-concurrent-downloads": .string(String(settings.concurrency.limit)),
            "max-overall-download-limit": .string(String(Int64(settings.overallLimit.bytesPerSecond))),
            "max-download-limit": "0",
            "split": "8",
            "max-connection-per-server": "8",
        ]
    }

    func changeGlobalOption(_ params: [JSONValue]) throws -> JSONValue {
        let options = try RPCParams.options(params, at: 0)
        let known = ["max-concurrent-downloads", "max-overall-download-limit"]
        for name in options.keys where !known.contains(name) {
            throw RPCError("option \(name) cannot be changed by haul's aria2.changeGlobalOption (only \(known.joined(separator: ", ")))")
        }
        var concurrent: Int?
        if let text = try Aria2Options.text(options["max-concurrent-downloads"], "max-concurrent-downloads") {
            guard let value = Int(text), (1...settings.concurrency.maximum).contains(value) else {
                throw RPCError("max-concurrent-downloads must be 1 to \(settings.concurrency.maximum)")
            }
            concurrent = value
        }
        let overall = try Aria2Options.speed(options["max-overall-download-limit"], "max-overall-download-limit")
        // Checked in full before anything changes: a bad value leaves every setting as it was.
        if let concurrent { settings.concurrency.setLimit(concurrent) }
        if let overall { settings.overallLimit.setLimit(bytesPerSecond: overall) }
        return "OK"
    }
}
