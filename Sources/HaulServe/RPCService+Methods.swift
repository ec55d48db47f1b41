import Foundation
import Haul
import HaulCore
import HaulRPC

/// The method table and the methods on one download.
extension RPCService {
    typealias Method = @Sendable (RPCService, [JSONValue]) throws -> JSONValue

    static let methods: [String: Method] = aria2Methods.merging(haulMethods) { aria2, _ in aria2 }

    static let aria2Methods: [String: Method] = [
        "aria2.addUri": { try $0.addUri($1) },
        "aria2.remove": { try $0.remove($1) },
        "aria2.forceRemove": { try $0.remove($1) },
        "aria2.pause": { try $0.pause($1) },
        "aria2.forcePause": { try $0.pause($1) },
        "aria2.pauseAll": { try $0.pauseAll($1) },
        "aria2.forcePauseAll": { try $0.pauseAll($1) },
        "aria2.unpause": { try $0.unpause($1) },
        "aria2.unpauseAll": { try $0.unpauseAll($1) },
        "aria2.tellStatus": { try $0.tellStatus($1) },
        "aria2.getUris": { try $0.status($1).uris },
        "aria2.getFiles": { try $0.status($1).files },
        "aria2.getPeers": {
            _ = try $0.status($1)
            return []
        },
        "aria2.getServers": { try $0.servers($1) },
        "aria2.tellActive": { try $0.tellActive($1) },
        "aria2.tellWaiting": { try $0.tellList($1, waiting: true) },
        "aria2.tellStopped": { try $0.tellList($1, waiting: false) },
        "aria2.changePosition": { try $0.changePosition($1) },
        "aria2.getOption": { try $0.getOption($1) },
        "aria2.changeOption": { try $0.changeOption($1) },
        "aria2.getGlobalOption": { service, _ in service.globalOptions() },
        "aria2.changeGlobalOption": { try $0.changeGlobalOption($1) },
        "aria2.getGlobalStat": { try $0.globalStat($1) },
        "aria2.purgeDownloadResult": { try $0.purge($1) },
        "aria2.removeDownloadResult": { try $0.removeResult($1) },
        "aria2.getVersion": { service, _ in service.version() },
        "aria2.getSessionInfo": { service, _ in ["sessionId": .string(service.settings.sessionID)] },
        "aria2.saveSession": { _, _ in "OK" },
        "aria2.shutdown": { service, _ in service.requestShutdown(force: false) },
        "aria2.forceShutdown": { service, _ in service.requestShutdown(force: true) },
        "system.listMethods": { _, _ in .array((Array(methods.keys) + ["system.multicall"]).sorted().map(JSONValue.string)) },
        "system.listNotifications": { _, _ in .array(notifications.map(JSONValue.string)) },
    ]

    /// aria2 methods for what Haul does not download; answered with a clear error.
    static let unsupported: Set<String> = ["aria2.addTorrent", "aria2.addMetalink"]

    // MARK: items

    func item(_ id: Int64, _ gid: String) throws -> QueueItem {
        guard let item = try queue.item(id) else { throw RPCError.notFound(gid) }
        return item
    }

    func status(of item: QueueItem, live: [Int64: DownloadProgress]? = nil) -> Aria2Status {
        Aria2Status(item: item, live: (live ?? queue.liveProgress())[item.id], directory: settings.root)
    }

    func status(_ params: [JSONValue]) throws -> Aria2Status {
        let (gid, id) = try RPCParams.gid(params)
        return status(of: try item(id, gid))
    }

    // MARK: methods

    func addUri(_ params: [JSONValue]) throws -> JSONValue {
        guard let list = params.first?.array, !list.isEmpty, list.allSatisfy({ $0.string != nil }) else {
            throw RPCError.invalidParams("aria2.addUri takes a list of URIs first")
        }
        let (request, paused) = try Aria2Options(root: settings.root).request(for: list.compactMap(\.string), try RPCParams.options(params, at: 1))
        // Every parameter is read before anything changes: an error reply adds nothing.
        let position = params.count > 2 ? try RPCParams.integer(params, at: 2, "position") : nil
        if let existing = try queue.existingItem(for: request) {
            throw RPCError("an unfinished download (GID \(GID.string(existing.id))) already writes to \(existing.destination)")
        }
        let id = try queue.add(request, paused: paused)
        if let position {
            // Added already, so the answer is its GID whatever happens here: a download claimed
            // at once is no longer waiting, and has no place in the waiting list to take.
            _ = try? move(id, to: position, from: .set)
        }
        return .string(GID.string(id))
    }

    func tellStatus(_ params: [JSONValue]) throws -> JSONValue {
        try status(params).json(keys: try RPCParams.keys(params.count > 1 ? params[1] : nil))
    }

    func pause(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let before = try item(id, gid)
        guard before.state == .queued || before.state == .running else {
            throw RPCError("GID \(gid) cannot be paused now (it is \(Aria2Status.status(of: before.state)))")
        }
        try queue.pause(id)
        if before.state == .queued { notify("aria2.onDownloadPause", id) }
        // Answered once the transfer stopped at its checkpoint (briefly waited for): from then on
        // its figures are the checkpoint's and stay put, as a paused download's must.
        _ = try settledAfterPausing([id])
        return .string(gid)
    }

    func unpause(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        _ = try item(id, gid)
        guard try settledAfterPausing([id])[id]?.state == .paused else { throw RPCError("GID \(gid) is not paused") }
        try queue.resume(id)
        return .string(gid)
    }

    /// The items of `ids` (those that exist), once none is still `pausing`, or after 3 s. A
    /// download paused a moment ago stops at its next checkpoint, but aria2 reports it paused at
    /// once, so clients unpause it at once: the unpause waits for the pause, briefly.
    func settledAfterPausing(_ ids: [Int64]) throws -> [Int64: QueueItem] {
        let deadline = ContinuousClock.now + .seconds(3)
        while true {
            var items: [Int64: QueueItem] = [:]
            for id in ids {
                if let item = try queue.item(id) { items[id] = item }
            }
            guard items.values.contains(where: { $0.state == .pausing }), ContinuousClock.now < deadline else { return items }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    func remove(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let before = try item(id, gid)
        guard !before.state.isSettled || before.state == .paused else {
            throw RPCError("GID \(gid) is already stopped; use aria2.removeDownloadResult")
        }
        try queue.cancel(id)
        if before.state != .running { notify("aria2.onDownloadStop", id) }
        return .string(gid)
    }

    func servers(_ params: [JSONValue]) throws -> JSONValue {
        let status = try status(params)
        guard status.item.state == .running else { throw RPCError("No active download for GID#\(GID.string(status.item.id))") }
        let server: JSONValue = [
            "uri": .string(status.item.urlString), "currentUri": .string(status.item.urlString),
            "downloadSpeed": .string(String(status.downloadSpeed)),
        ]
        return [["index": "1", "servers": [server]]]
    }

    func removeResult(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let before = try item(id, gid)
        guard before.state == .completed || before.state == .failed || before.state == .cancelled else {
            throw RPCError("GID \(gid) has not stopped; use aria2.remove")
        }
        try queue.remove(id, keepingData: true)
        return "OK"
    }
}
