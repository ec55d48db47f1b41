import Foundation
import Haul
import HaulCore

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
        let keys = try Self.keys(params.first)
        let live = queue.liveProgress()
        return .array(try queue.items().filter { $0.state == .running }.map { status(of: $0, live: live).json(keys: keys) })
    }

    /// `tellWaiting` / `tellStopped (offset, num, keys)`: a negative offset counts from the end and
    /// lists backwards, as aria2 does.
    func tellList(_ params: [JSONValue], waiting: Bool) throws -> JSONValue {
        let offset = try Self.integer(params, at: 0, "offset")
        let count = try Self.integer(params, at: 1, "num")
        let keys = try Self.keys(params.count > 2 ? params[2] : nil)
        let items = try queue.items()
        let list = waiting ? self.waiting(items) : stopped(items)
        let live = queue.liveProgress()
        return .array(Self.window(list, offset: offset, count: count).map { status(of: $0, live: live).json(keys: keys) })
    }

    static func window<T>(_ list: [T], offset: Int, count: Int) -> [T] {
        guard count > 0, !list.isEmpty else { return [] }
        if offset >= 0 {
            guard offset < list.count else { return [] }
            return Array(list[offset..<min(list.count, offset + count)])
        }
        let start = list.count + offset
        guard start >= 0 else { return [] }
        return Array(list[max(0, start - count + 1)...start].reversed())
    }

    func changePosition(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try Self.gid(params)
        let position = try Self.integer(params, at: 1, "pos")
        guard params.count > 2, let how = params[2].string, ["POS_SET", "POS_CUR", "POS_END"].contains(how) else {
            throw RPCError.invalidParams("how must be POS_SET, POS_CUR or POS_END")
        }
        _ = try item(id, gid)
        return .int(Int64(try move(id, to: position, how: how)))
    }

    /// Moves a waiting download within the waiting list; returns its new index.
    @discardableResult
    func move(_ id: Int64, to position: Int, how: String) throws -> Int {
        var order = waiting(try queue.items()).map(\.id)
        guard let current = order.firstIndex(of: id) else { throw RPCError("GID \(GID.string(id)) is not waiting") }
        let target: Int
        switch how {
        case "POS_CUR": target = current + position
        case "POS_END": target = order.count - 1 + position
        default: target = position
        }
        order.remove(at: current)
        let index = min(max(0, target), order.count)
        order.insert(id, at: index)
        try queue.setOrder(order)
        return index
    }

    func pauseAll(_ params: [JSONValue]) throws -> JSONValue {
        for item in try queue.items() where item.state == .queued || item.state == .running {
            try? queue.pause(item.id)
            if item.state == .queued { notify("aria2.onDownloadPause", item.id) }
        }
        return "OK"
    }

    func unpauseAll(_ params: [JSONValue]) throws -> JSONValue {
        for item in try queue.items() where item.state == .paused {
            try? queue.resume(item.id)
        }
        return "OK"
    }

    func purge(_ params: [JSONValue]) throws -> JSONValue {
        for item in stopped(try queue.items()) where item.state != .cancelling {
            try? queue.remove(item.id)
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
