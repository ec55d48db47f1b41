/// One byte range of a file being fetched over its own connection: `[begin, next)` is on disk,
/// `[next, end)` is still to fetch.
package struct Segment: Sendable, Equatable, Codable {
    /// Offset of the segment's first byte in the file.
    package var begin: Int64
    /// Offset of the first byte not yet on disk; `begin` when nothing was fetched.
    package var next: Int64
    /// Offset one past the segment's last byte.
    package var end: Int64

    /// The segment `[begin, end)` with `[begin, next)` on disk (nothing when `next` is nil).
    package init(begin: Int64, next: Int64? = nil, end: Int64) {
        self.begin = begin
        self.next = next ?? begin
        self.end = end
    }

    /// Bytes still to fetch.
    package var remaining: Int64 { end - next }
    /// Whether every byte of the segment is on disk.
    package var isDone: Bool { next >= end }
}

/// The segments of a download past its sequential prefix, and the rules for sharing them out:
/// an initial split, and work stealing (a free connection splits the remaining segment it can take
/// the most of). A connection asks for its segment a piece at a time (`request`), and a steal
/// never takes bytes a connection has asked for: a steal never cuts a response short, so it never
/// makes the server send bytes nobody keeps. Pure: no I/O, no threads.
package struct SegmentTable: Sendable, Equatable {
    /// Below this, a segment is not split again: the request would cost more than it saves.
    package static let minimumSplit: Int64 = 2 << 20

    /// The segments, in file order.
    package private(set) var segments: [Segment]
    /// Which segments a connection is working on.
    package private(set) var owned: Set<Int>
    /// For each owned segment, the end of the bytes its connection last asked for: kept until it
    /// asks again, gives the request up (`forgetRequest`) or releases the segment.
    package private(set) var requestedEnds: [Int: Int64] = [:]

    /// A table of these segments, none owned by a connection.
    package init(segments: [Segment] = []) {
        self.segments = segments
        owned = []
    }

    /// Splits `[from, to)` into `count` near-equal parts; the first stays with the caller (the
    /// sequential connection) and is returned as its new end, the others become segments.
    package mutating func split(from: Int64, to: Int64, count: Int) -> Int64 {
        let parts = Int64(max(1, count))
        let size = (to - from) / parts
        guard parts > 1, size >= Self.minimumSplit else { return to }
        for index in 1..<parts {
            let begin = from + index * size
            segments.append(Segment(begin: begin, end: index == parts - 1 ? to : begin + size))
        }
        return from + size
    }

    /// Claims work for a free connection: an unowned unfinished segment if there is one, else a
    /// split of the range it can take the most of: the second half of a remaining range (the
    /// sequential connection's included, whose remaining range is `mainNext..<mainEnd`), or
    /// what lies past the piece its connection asked for when that is further. Both sides keep at
    /// least `minimumSplit`. Returns the segment's index and, when the main connection's range
    /// was split, its new end.
    package mutating func claim(mainNext: Int64, mainEnd: Int64) -> (index: Int, newMainEnd: Int64?)? {
        if let free = segments.indices.first(where: { !owned.contains($0) && !segments[$0].isDone }) {
            owned.insert(free)
            return (free, nil)
        }
        // Where each segment would be split, and how much the thief would get.
        let cuts = segments.indices.compactMap { index -> (index: Int, at: Int64)? in
            let segment = segments[index]
            guard segment.remaining >= 2 * Self.minimumSplit else { return nil }
            let at = max(segment.next + segment.remaining / 2, requestedEnds[index] ?? segment.next)
            return segment.end - at >= Self.minimumSplit ? (index, at) : nil
        }
        let best = cuts.max { segments[$0.index].end - $0.at < segments[$1.index].end - $1.at }
        let bestShare = best.map { segments[$0.index].end - $0.at } ?? 0
        let mainRemaining = mainEnd - mainNext
        if mainRemaining - mainRemaining / 2 >= bestShare, mainRemaining >= 2 * Self.minimumSplit {
            let middle = mainNext + mainRemaining / 2
            segments.append(Segment(begin: middle, end: mainEnd))
            owned.insert(segments.count - 1)
            return (segments.count - 1, middle)
        }
        guard let best else { return nil }
        let end = segments[best.index].end
        segments[best.index].end = best.at
        segments.append(Segment(begin: best.at, end: end))
        owned.insert(segments.count - 1)
        return (segments.count - 1, nil)
    }

    /// The owner of segment `index` asks for up to `size` more bytes of it: returns the end of the
    /// piece to request (`next` when the segment is done). Until the owner asks again or releases
    /// the segment, no steal takes any of the piece.
    package mutating func request(_ index: Int, upTo size: Int64) -> Int64 {
        let segment = segments[index]
        let end = segment.next + min(max(0, size), segment.remaining)
        requestedEnds[index] = end
        return end
    }

    /// Records bytes written to a segment (never past its end, which stealing may have moved).
    /// Returns how many of them belong to the segment.
    @discardableResult
    package mutating func advance(_ index: Int, by count: Int64) -> Int64 {
        let accepted = max(0, min(count, segments[index].remaining))
        segments[index].next += accepted
        return accepted
    }

    /// The owner of segment `index` gave its request up (it failed): while it waits to try again,
    /// a steal may take any of the segment's remainder.
    package mutating func forgetRequest(_ index: Int) {
        requestedEnds[index] = nil
    }

    /// Bytes of the segments that no connection has asked for yet.
    package var unrequestedBytes: Int64 {
        segments.indices.reduce(0) { sum, index in
            let segment = segments[index]
            return sum + max(0, segment.end - max(segment.next, requestedEnds[index] ?? segment.next))
        }
    }

    /// A refused connection's segment goes back to the sequential connection, which is still
    /// fetching (`mainNext < mainEnd`): when nothing of it is on disk and it starts where the
    /// sequential connection's range ends, that range grows over it (its open request goes on
    /// instead of being cut there and asked for again), and the segment is left empty and
    /// released. Returns the sequential connection's new end; nil when it cannot be given back.
    package mutating func giveBack(_ index: Int, mainNext: Int64, mainEnd: Int64) -> Int64? {
        let segment = segments[index]
        guard mainNext < mainEnd, segment.begin == mainEnd, segment.next == segment.begin, segment.end > segment.begin else { return nil }
        segments[index].end = segment.begin
        release(index)
        return segment.end
    }

    /// A connection stops working on a segment (done, failed or refused); it can be claimed again.
    package mutating func release(_ index: Int) {
        owned.remove(index)
        requestedEnds[index] = nil
    }

    /// Bytes of the segments on disk.
    package var bytesDone: Int64 {
        segments.reduce(0) { $0 + ($1.next - $1.begin) }
    }

    /// Whether every segment is on disk.
    package var isComplete: Bool { segments.allSatisfy(\.isDone) }

    /// The first byte not on disk at or after `offset`, following finished segments: how far the
    /// sequential prefix extends once it reaches the segments.
    package func contiguousEnd(from offset: Int64) -> Int64 {
        var end = offset
        var advanced = true
        while advanced {
            advanced = false
            for segment in segments where segment.begin <= end && segment.next > end {
                end = segment.next
                advanced = true
            }
        }
        return end
    }
}
