/// What one client may cost the server, and how long it may take. The defaults are the server's;
/// tests shorten the timeouts.
struct HTTPServerLimits: Sendable {
    /// Open connections at most. One more makes room by closing the connection that matters
    /// least (`Shedding`): one lingering after its last answer, else the longest idle HTTP
    /// connection, else the longest idle WebSocket that never proved the token, else the longest
    /// idle one that did; with none of those (every one mid-request) it is closed at once. An
    /// idle connection costs a descriptor and a small record, so this bounds descriptors, not threads.
    var connections = 512
    /// Open WebSockets at most. One more upgrade makes room the same way among the idle
    /// WebSockets; with none idle it is answered 503.
    var webSockets = 256
    /// A request head (request line and fields) at most this long, else 431.
    var headBytes = 16 * 1024
    /// A WebSocket message (whole or fragmented) at most this long, else close 1009 from its
    /// frame header.
    var messageBytes = 1 << 20
    /// A WebSocket message in at most this many frames, else close 1009 at the next one.
    var messageFragments = 1024
    /// A request's head and body must have arrived this long after its first byte, else the
    /// connection is closed: a slow client cannot hold a connection by trickling bytes.
    var requestSeconds = 10.0
    /// An HTTP connection with no request under way (and nothing left to send) is closed after
    /// this long; so is one whose response has not moved for as long.
    var idleSeconds = 30.0
    /// A WebSocket that sent nothing for this long is pinged; one that then sends nothing (no
    /// pong) for `pongSeconds` more is closed. A live client's WebSocket library answers pings
    /// by itself, so only dead and stuck sockets (or a client that stopped reading) go.
    var webSocketIdleSeconds = 60.0
    var pongSeconds = 30.0
    /// After the server's last byte on a connection it closes, it reads (and drops) what the
    /// client still sends for up to this long, so the client sees the answer rather than a reset.
    var lingerSeconds = 2.0
    /// A WebSocket with more unsent messages than this, or more unsent bytes than
    /// `backlogBytes`, gets no notifications (answers to its own calls still go out) and is not
    /// read from until it catches up.
    var backlogMessages = 512
    var backlogBytes = 4 << 20
    /// A WebSocket whose unsent answers exceed this many bytes is closed (judged whenever an
    /// answer is queued, after it is).
    var answerBacklogBytes = 16 << 20
    /// Unsent bytes of every connection together at most: past this, the connections with the
    /// most unsent are closed until the rest fits (clients that stopped reading, each within its
    /// own bounds, cannot add up to gigabytes).
    var unsentBytes = 64 << 20
    /// A streamed file is read this much at a time, and only while less than this is unsent: a
    /// download of any size holds one chunk of memory, and no thread.
    var streamChunkBytes = 64 * 1024
    /// Streamed answers (files and event streams) at once at most: one connection in eight (at
    /// least one) is never a stream's. A stream request past it takes the slot of a stream that
    /// may go (its client took nothing for `stalledStreamSeconds`, or an event stream with nothing
    /// to send), else it is answered 503 with `Retry-After`. A client that reads slowly but steadily is never stalled
    /// (`stalledStreamSeconds`) and so never closed to make room: without this bound a few hundred
    /// of them (a file's, or an event stream's on a busy server) would hold every connection and
    /// lock every call (and the dashboard) out.
    var streams: Int { max(1, connections - max(1, connections / 8)) }
    /// An event stream whose unsent bytes pass this is closed: a client that stopped reading is
    /// cut (it reconnects with `Last-Event-ID` and misses nothing durable).
    var streamBacklogBytes = 4 << 20
    /// A file or event stream whose client has taken none of its unsent bytes for this long may
    /// be closed to make room for a new client when the server is full (after every other kind
    /// `Shedding` may close): its client resumes with `Range` or `Last-Event-ID`.
    var stalledStreamSeconds = 2.0
    /// An event stream with nothing to send for this long gets a comment line, so a client that
    /// went away without a word is found by the write that fails.
    var streamHeartbeatSeconds = 15.0
    /// Durable events the loop keeps to give a stream that opens the ones published while its
    /// worker read the journal.
    var recentEvents = 1024
    /// Threads that run the request handlers, and the stack each gets.
    var workers = 8
    var workerStackBytes = 4 << 20
}
