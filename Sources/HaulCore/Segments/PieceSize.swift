/// How many bytes a segment connection asks for in one request (`bytes=a-b`), before it asks for
/// the next piece on the same connection. A steal never takes a piece asked for, so a piece is
/// what an idle connection cannot take over: small enough that the end of a download is shared
/// out, large enough that a request's round trip is a small part of the piece's time. It follows
/// the connection's speed, aiming at `targetSeconds` a piece, or at `latencyFactor` times the
/// shortest wait seen for a response's head where that is longer (a far server: each request idles
/// the connection for a round trip). Pure.
package struct PieceSize: Sendable, Equatable {
    /// The first piece, before the connection's speed is known.
    package static let first: Int64 = 4 << 20
    /// Never less: a request's round trip stays small next to the piece.
    package static let minimum = SegmentTable.minimumSplit
    /// Never more: the last pieces of a download stay short.
    package static let maximum: Int64 = 64 << 20
    /// The time one piece should take at the connection's speed.
    package static let targetSeconds = 0.5
    /// A piece takes at least this many times the wait for its response's head, so the round trip
    /// between two pieces costs at most about 5% of the connection's time.
    package static let latencyFactor = 20.0
    /// A piece grows at most this many times over the last one (its speed may be a burst).
    package static let maximumGrowth: Int64 = 4

    /// The size of the next piece to ask for.
    package private(set) var bytes: Int64 = Self.first
    /// `targetSeconds` of the connection's speed (at most `bytes`): near the end of a download a
    /// piece shrinks to a fair share of what is left, but never below this.
    package private(set) var tailBytes: Int64 = Self.first
    /// The shortest wait for a response's head seen so far: the round trip itself (the first
    /// request's wait also holds the connection's setup).
    private var shortestWait: Double?

    /// A connection's pieces, none fetched yet.
    package init() {}

    /// The last piece moved `moved` bytes in `seconds`, of which `waited` went by before its
    /// response's head arrived: the next one is sized by the speed of its body and by the round
    /// trip. A piece that moved nothing (it failed) leaves the size as it was.
    package mutating func observe(moved: Int64, seconds: Double, waited: Double = 0) {
        guard moved > 0, seconds > 0 else { return }
        let wait = min(shortestWait ?? .infinity, max(0, waited))
        shortestWait = wait
        // Bytes a second once the body flows: the wait is the round trip's, not the speed's.
        let rate = Double(moved) / max(seconds - max(0, waited), seconds / 1000)
        let duration = max(Self.targetSeconds, Self.latencyFactor * wait)
        let capped = min(Double(bytes * Self.maximumGrowth), Double(Self.maximum), rate * duration)
        bytes = max(Self.minimum, Int64(capped))
        tailBytes = max(Self.minimum, min(bytes, Int64(min(rate * Self.targetSeconds, Double(Self.maximum)))))
    }

    /// The piece to ask for now: `bytes`, but no more than a fair share of what nobody has asked
    /// for yet (`unrequested`, over `connections`), so near the end of a download every connection
    /// still has something to take; never below `tailBytes`, so that a far server's last pieces
    /// do not turn into round trips.
    package func next(unrequested: Int64, connections: Int) -> Int64 {
        min(bytes, max(tailBytes, unrequested / Int64(max(1, connections))))
    }
}
