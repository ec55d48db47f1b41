/// Which open connection the server closes to make room for a new client when it is full. Pure:
/// the event loop hands it what each connection is doing and since when it has been idle.
///
/// A connection in the middle of something (a request being read, a call with a worker, a
/// WebSocket message begun) is never chosen. Among the rest, the least useful goes first: one
/// lingering after its last answer, then an idle HTTP connection, then an idle WebSocket that
/// never made a call with the token, then an idle one that did (a web UI's); within a kind, the
/// one idle longest. So silent sockets by the hundred cannot lock a new client out, and a flood
/// of them sheds its own before it reaches a UI that proved the token.
enum Shedding {
    /// How readily a connection may go, first to last.
    enum Rank: Int, Comparable, Sendable {
        case lingering
        case idleHTTP
        case idleWebSocket
        case idleAuthenticatedWebSocket

        static func < (left: Rank, right: Rank) -> Bool { left.rawValue < right.rawValue }

        var isWebSocket: Bool { self == .idleWebSocket || self == .idleAuthenticatedWebSocket }
    }

    struct Candidate: Sendable, Equatable {
        let id: ConnectionID
        let rank: Rank
        /// When a byte last went either way.
        let idleSince: ContinuousClock.Instant
    }

    /// The connection to close, or nil when none may go. `webSocketsOnly`: room is made for a new
    /// WebSocket, so only a WebSocket frees a slot.
    static func victim(among candidates: some Sequence<Candidate>, webSocketsOnly: Bool) -> ConnectionID? {
        var best: Candidate?
        for candidate in candidates where !webSocketsOnly || candidate.rank.isWebSocket {
            guard let current = best else {
                best = candidate
                continue
            }
            if (candidate.rank, candidate.idleSince) < (current.rank, current.idleSince) { best = candidate }
        }
        return best?.id
    }
}
