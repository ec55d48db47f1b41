import Foundation
import Haul
import HaulCore
import HaulRPC

/// The lists (active, waiting, stopped), the queue's order and the methods on all downloads.
extension RPCService {
    /// The waiting list in aria2's sense: queued and paused downloads, in the order they will run.
    func waiting(_ items: [QueueItem]) -> [QueueItem] {
        items.filter { $0.state == .queued || $0.state == .paused || $0.state == .pausing }
            .sorted { ($0.priority, -$0.id) > ($1.priority, -$1.id) }
    }

    func stopped(_ items: [QueueItem]) -> [QueueItem] {
        items.filter { $0.state == .completed || $0.state == .failed || $0.state == .cancelled || $0.state == .cancelling }
    }

    func tellActive(_ params: [JSONValue]) throws -> JSONValue {
        let keys = try RPCParams.keys(params.first)
        let live = queue.liveProgress()
        return .array(try queue.items().filter { $0.state == .running }.map { status(of: $0, live: live).json(keys: keys) })
    }

    /// `tellWaiting` / `tellStopped (offset, num, keys)`: a negative offset counts from the end and
    /// lists backwards, as aria2 does.
    func tellList(_ params: [JSONValue], waiting: Bool) throws -> JSONValue {
        let offset = try RPCParams.integer(params, at: 0, "offset")
        let count = try RPCParams.integer(params, at: 1, "num")
        let keys = try RPCParams.keys(params.count > 2 ? params[2] : nil)
        let items = try queue.items()
        let list = waiting ? self.waiting(items) : stopped(items)
        let live = queue.liveProgress()
        return .array(RPCParams.window(list, offset: offset, count: count).map { status(of: $0, live: live).json(keys: keys) })
    }

    func changePosition(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let position = try RPCParams.integer(params, at: 1, "pos")
        guard params.count > 2, let how = params[2].string.flatMap(RPCParams.Origin.init(rawValue:)) else {
            throw RPCError.invalidParams("how must be POS_SET, POS_CUR or POS_END")
        }
        _ = try item(id, gid)
        return .int(Int64(try move(id, to: position, from: how)))
    }

    /// Moves a waiting download within the waiting list; returns its new index.
    @discardableResult
    func move(_ id: Int64, to position: Int64, from origin: RPCParams.Origin) throws -> Int {
        var order = waiting(try queue.items()).map(\.id)
        guard let current = order.firstIndex(of: id) else { throw RPCError("GID \(GID.string(id)) is not waiting") }
        let index = RPCParams.movedIndex(current: current, count: order.count, position: position, from: origin)
        order.remove(at: current)
        order.insert(id, at: index)
        try queue.setOrder(order)
        return index
    }

    /// Pauses every waiting and running download; answered once the running ones stopped at
    /// their checkpoints (briefly waited for, as `pause` waits).
    func pauseAll(_ params: [JSONValue]) throws -> JSONValue {
        var paused: [Int64] = []
        for item in try queue.items() where item.state == .queued || item.state == .running {
            guard (try? queue.pause(item.id)) != nil else { continue }
            paused.append(item.id)
            if item.state == .queued { notify("aria2.onDownloadPause", item.id) }
        }
        _ = try settledAfterPausing(paused)
        return "OK"
    }

    /// Every paused download goes back to the queue, also those a `pauseAll` just asked to stop
    /// (still `pausing`: waited for, as `unpause` waits).
    func unpauseAll(_ params: [JSONValue]) throws -> JSONValue {
        let candidates = try queue.items().filter { $0.state == .paused || $0.state == .pausing }.map(\.id)
        for item in try settledAfterPausing(candidates).values where item.state == .paused {
            try? queue.resume(item.id)
        }
        return "OK"
    }

    /// Forgets every stopped download's result; never deletes data (aria2's contract: a partial
    /// kept after a failed checksum stays on disk).
    func purge(_ params: [JSONValue]) throws -> JSONValue {
        for item in stopped(try queue.items()) where item.state != .cancelling {
            try? queue.remove(item.id, keepingData: true)
        }
        return "OK"
    }

    func globalStat(_ params: [JSONValue]) throws -> JSONValue {
        let items = try queue.items()
        let live = queue.liveProgress()
        let active = items.filter { $0.state == .running }
        let speed = active.reduce(Int64(0)) { $0 + status(of: $1, live: live).downloadSpeed }
        let stopped = stopped(items).count
        return [
            "downloadSpeed": .string(String(speed)), "uploadSpeed": "0",
            "numActive": .string(String(active.count)), "numWaiting": .string(String(waiting(items).count)),
            "numStopped": .string(String(stopped)), "numStoppedTotal": .string(String(stopped)),
        ]
    }

    func version() -> JSONValue {
        [
            "version": .string(HaulVersion.current),
            "enabledFeatures": ["HTTPS", "Message Digest", "Async DNS", "Segmented Download", "Durable Queue"],
        ]
    }

    func requestShutdown(force: Bool) -> JSONValue {
        shutdown(force)
        return "OK"
    }
}
