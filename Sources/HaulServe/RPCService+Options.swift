import Foundation
import Haul
import HaulCore
import HaulRPC

/// `getOption` / `changeOption` for one download, and the global options.
extension RPCService {
    func getOption(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let item = try item(id, gid)
        var options = Aria2OptionValues.shown(try queue.storedOptions(id))
        options["dir"] = .string(status(of: item).dir)
        if !item.destinationIsDirectory { options["out"] = .string(AbsolutePath.name(of: item.destination)) }
        return .object(options)
    }

    /// Only `max-download-limit` changes on a download (at once when it runs); anything else is
    /// refused by name rather than ignored (`Aria2OptionValues.downloadChange`).
    func changeOption(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        _ = try item(id, gid)
        if let limit = try Aria2OptionValues.downloadChange(try RPCParams.options(params, at: 1)) {
            try queue.setSpeedLimit(id, bytesPerSecond: limit)
        }
        return "OK"
    }

    func globalOptions() -> JSONValue {
        [
            "dir": .string(settings.root),
            "max-concurrent-downloads": .string(String(settings.concurrency.limit)),
            "max-overall-download-limit": .string(String(settings.overallLimit.bytesPerSecond)),
            "max-download-limit": "0",
            "split": "8",
            "max-connection-per-server": "8",
        ]
    }

    func changeGlobalOption(_ params: [JSONValue]) throws -> JSONValue {
        // Read in full before anything changes: a bad value leaves every setting as it was.
        let change = try Aria2OptionValues.globalChange(try RPCParams.options(params, at: 0), maximumConcurrency: settings.concurrency.maximum)
        if let concurrency = change.concurrency { settings.concurrency.setLimit(concurrency) }
        if let overall = change.overallBytesPerSecond { settings.overallLimit.setLimit(bytesPerSecond: overall) }
        return "OK"
    }
}
