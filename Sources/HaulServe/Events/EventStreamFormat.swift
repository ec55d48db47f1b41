import Foundation
import HaulRPC
import HaulStore

/// The event stream's wire format (`text/event-stream`, as the HTML standard's EventSource reads
/// it) and its resume rule. Pure.
enum EventStreamFormat {
    /// The event a client gets in place of what it missed when the journal no longer holds it:
    /// it should read the state afresh (`aria2.tellActive`, `tellWaiting`, `tellStopped`).
    static let resyncEvent = "haul.resync"
    /// A running download's figures, at most twice a second each; not kept, never replayed.
    static let progressEvent = "haul.progress"

    /// One event: `id`, `event` and one `data` line (the JSON has no newline).
    static func event(id: Int64, name: String, data: Data) -> Data {
        var bytes = Data("id: \(id)\nevent: \(name)\ndata: ".utf8)
        bytes.append(data)
        bytes.append(contentsOf: Array("\n\n".utf8))
        return bytes
    }

    /// A notification as the WebSocket sends it, under its journal id.
    static func notification(_ event: JournalEvent) -> Data {
        Self.event(id: event.id, name: event.method, data: RPCServer.notification(event.method, gid: GID.string(event.item)))
    }

    /// Figures of a running download, under the id of the last durable event (a client that
    /// resumes from it misses nothing durable).
    static func progress(gid: String, completed: Int64, total: Int64?, speed: Double, lastDurable: Int64) -> Data {
        let figures = #""completedLength":"\#(completed)","totalLength":"\#(total ?? 0)","downloadSpeed":"\#(Int64(max(0, speed)))""#
        let json = #"{"gid":\#(JSONWriter.quoted(gid)),\#(figures)}"#
        return Self.event(id: lastDurable, name: progressEvent, data: Data(json.utf8))
    }

    static func resync(id: Int64, reason: String) -> Data {
        Self.event(id: id, name: resyncEvent, data: Data(#"{"reason":\#(JSONWriter.quoted(reason))}"#.utf8))
    }

    /// What a client opening the stream gets first, and the id after which live events follow.
    struct Opening: Equatable {
        let initial: Data
        let after: Int64
    }

    /// The first bytes for a client that sent `lastEventID` (nil: a new client, which gets only
    /// what comes from now on), given the journal `page` read after it. A client whose id is no
    /// longer kept (more than the journal's bound happened since), or is not one of this journal's
    /// (past its newest: another store, or one reset), gets `haul.resync` and continues from the
    /// newest.
    static func opening(lastEventID: String?, page: JournalPage, retryMilliseconds: Int = 2000) -> Opening {
        var initial = Data("retry: \(retryMilliseconds)\n\n".utf8)
        let newest = page.newest ?? 0
        guard let text = lastEventID?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return Opening(initial: initial, after: newest) }
        guard let last = Int64(text), last >= 0 else {
            initial.append(resync(id: newest, reason: "Last-Event-ID \(text) is not an id of this server's"))
            return Opening(initial: initial, after: newest)
        }
        if last > newest {
            initial.append(resync(id: newest, reason: "event \(last) is not in this server's journal (its newest is \(newest))"))
            return Opening(initial: initial, after: newest)
        }
        if let oldest = page.oldest, last < oldest - 1 {
            initial.append(resync(id: newest, reason: "events after \(last) are no longer kept (the oldest kept is \(oldest))"))
            return Opening(initial: initial, after: newest)
        }
        for event in page.events { initial.append(notification(event)) }
        return Opening(initial: initial, after: page.events.last?.id ?? last)
    }
}

/// At most one progress event per download every `interval`. Pure.
struct ProgressThrottle {
    var interval: Duration = .milliseconds(500)
    private var lastSent: [Int64: ContinuousClock.Instant] = [:]

    init(interval: Duration = .milliseconds(500)) {
        self.interval = interval
    }

    /// Whether a figure of `id` at `now` is sent (and it then counts as the last one).
    mutating func admit(_ id: Int64, now: ContinuousClock.Instant) -> Bool {
        if let last = lastSent[id], now - last < interval { return false }
        lastSent[id] = now
        return true
    }

    /// The download ended: its next figure (a new run) goes at once.
    mutating func forget(_ id: Int64) {
        lastSent[id] = nil
    }
}
