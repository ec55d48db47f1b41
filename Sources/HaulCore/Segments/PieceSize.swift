/// How many bytes a segment connection asks for in one request (`bytes=a-b`), before it asks for
/// the next piece on the same connection. A piece is never cut by a steal, so its size is what an
/// idle connection cannot take over: small enough that the end of a download is shared out, large
/// enough that a request's round trip is a small part of the piece's time. It follows the
/// connection's speed, aiming at `targetSeconds` a piece. Pure.
public struct PieceSize: Sendable, Equatable {
    /// The first piece, before the connection's speed is known.
    public static let first: Int64 = 4 << 20
    /// Never less: a request's round trip stays small next to the piece.
    public static let minimum = SegmentTable.minimumSplit
    /// Never more: the last pieces of a download stay short.
    public static let maximum: Int64 = 64 << 20
    /// The time one piece should take at the connection's speed.
    public static let targetSeconds = 0.5
    /// A piece grows at most this many times over the last one (its speed may be a burst).
    public static let maximumGrowth: Int64 = 4

    /// The size of the next piece to ask for.
    public private(set) var bytes: Int64 = Self.first

    /// A connection's pieces, none fetched yet.
    public init() {}

    /// The last piece moved `moved` bytes in `seconds`: the next one is sized by that speed.
    /// A piece that moved nothing (it failed) leaves the size as it was.
    public mutating func observe(moved: Int64, seconds: Double) {
        guard moved > 0, seconds > 0 else { return }
        let wanted = Double(moved) / seconds * Self.targetSeconds
        let capped = min(Double(bytes * Self.maximumGrowth), Double(Self.maximum), wanted)
        bytes = max(Self.minimum, Int64(capped))
    }
}
