/// Which open connection the server closes to make room for a new client when it is full, and
/// which it closes first when the unsent bytes of all of them pass the server's bound. Pure: the
/// event loop hands it what each connection is doing and since when.
///
/// Never chosen to make room: a call with a worker, an answer still being read by its client, and a WebSocket
/// that made a call with the token (a web UI's: a newcomer that proved nothing is refused rather
/// than close it). Among the rest, the least useful goes first: one lingering after its last
/// answer, then an idle HTTP connection, then one with a request or message begun and not
/// finished (a client that opened it and stopped), then an idle WebSocket that never proved the
/// token, then a streamed answer its client stopped reading; within a kind, the one idle longest. So silent or stalled sockets by the hundred
/// cannot lock a new client out, and a flood of them sheds its own before anything else.
enum Shedding {
    /// How readily a connection may go, first to last.
    enum Rank: Int, Comparable, Sendable {
        case lingering
        case idleHTTP
        case unfinished
        case idleWebSocket
        /// A file or event stream whose client has taken nothing for
        /// `HTTPServerLimits.stalledStreamSeconds`: it resumes, so it may go when nothing else can.
        case stalledStream

        static func < (left: Rank, right: Rank) -> Bool { left.rawValue < right.rawValue }
    }

    struct Candidate: Sendable, Equatable {
        let id: ConnectionID
        let rank: Rank
        /// It holds a WebSocket slot.
        let isWebSocket: Bool
        /// When a byte last went either way.
        let idleSince: ContinuousClock.Instant
    }

    /// The connection to close, or nil when none may go. `webSocketsOnly`: room is made for a new
    /// WebSocket, so only a WebSocket frees a slot (an unfinished one counts when it is one).
    static func victim(among candidates: some Sequence<Candidate>, webSocketsOnly: Bool) -> ConnectionID? {
        var best: Candidate?
        for candidate in candidates where !webSocketsOnly || candidate.isWebSocket {
            guard let current = best else {
                best = candidate
                continue
            }
            // Accepted in one turn, two may share an instant: the older id goes first.
            if (candidate.rank, candidate.idleSince, candidate.id) < (current.rank, current.idleSince, current.id) { best = candidate }
        }
        return best?.id
    }

    /// A connection's unsent output, as the bound on all of them judges it: the smaller goes first.
    struct UnsentCandidate: Comparable, Sendable {
        let isAuthenticated: Bool
        /// How long its output has not moved.
        let stalled: Duration
        let bytes: Int

        static func < (left: UnsentCandidate, right: UnsentCandidate) -> Bool {
            if left.isAuthenticated != right.isAuthenticated { return !left.isAuthenticated }
            if left.stalled != right.stalled { return left.stalled > right.stalled }
            return left.bytes > right.bytes
        }
    }
}
