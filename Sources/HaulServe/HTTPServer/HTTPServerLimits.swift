/// What one client may cost the server, and how long it may take. The defaults are the server's;
/// tests shorten the timeouts.
struct HTTPServerLimits: Sendable {
    /// Open connections at most; one more is accepted and closed at once. An idle connection
    /// costs a descriptor and a small record, so this bounds descriptors, not threads.
    var connections = 512
    /// Open WebSockets at most; one more upgrade is answered 503.
    var webSockets = 256
    /// A request head (request line and fields) at most this long, else 431.
    var headBytes = 16 * 1024
    /// A WebSocket message (whole or fragmented) at most this long, else close 1009 from its
    /// frame header.
    var messageBytes = 1 << 20
    /// A request's head and body must have arrived this long after its first byte, else the
    /// connection is closed: a slow client cannot hold a connection by trickling bytes.
    var requestSeconds = 10.0
    /// An HTTP connection with no request under way (and nothing left to send) is closed after
    /// this long; so is one whose response has not moved for as long. WebSockets may stay idle.
    var idleSeconds = 30.0
    /// After the server's last byte on a connection it closes, it reads (and drops) what the
    /// client still sends for up to this long, so the client sees the answer rather than a reset.
    var lingerSeconds = 2.0
    /// A WebSocket with more unsent messages than this, or more unsent bytes than
    /// `backlogBytes`, gets no notifications (answers to its own calls still go out) and is not
    /// read from until it catches up.
    var backlogMessages = 512
    var backlogBytes = 4 << 20
    /// A WebSocket whose unsent answers exceed this many bytes is closed.
    var answerBacklogBytes = 16 << 20
    /// Threads that run the request handlers, and the stack each gets.
    var workers = 8
    var workerStackBytes = 4 << 20
}
