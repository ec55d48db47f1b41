import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One client connection as the event loop sees it: its unread input, its unsent output, and
/// where it is in its protocol. It never blocks and never calls a handler that may: the
/// requests and messages it completes are returned to the loop, which hands them to a worker.
/// Only the loop thread touches it.
final class Connection {
    /// Where the connection is.
    enum Phase: Equatable {
        /// Waiting for a request head; `started` once a byte of it came (the request deadline runs).
        case awaitingHead(started: Bool)
        case readingBody(HTTPRequestHead, HTTPRequestFraming)
        /// A streamed request's head arrived: it goes to a worker next.
        case streamRequested(HTTPRequestHead, keepAlive: Bool)
        /// Sending a long answer (a file, an event stream; the state is in `stream`).
        case streaming
        /// A worker has the request; nothing is read until its answer is queued.
        case handling
        /// Upgraded: frames both ways (the state is in `webSocket`).
        case webSocket
        /// Sending what is left, then (once `shutDown`) reading and dropping whatever the client
        /// still sends until it closes or the linger ends, so it reads the last answer, not a reset.
        case closing(shutDown: Bool)
    }

    /// A WebSocket's side of the connection.
    struct WebSocketSession {
        var parser: WebSocketFrameParser
        /// A message of it is with a worker: the next is not read until the answer is queued.
        var busy = false
        /// It receives broadcasts.
        var subscribed: Bool
        /// It made a call with the token: it is kept over those that did not when the server
        /// makes room.
        var authenticated = false
        /// What its deadline is for, when it has one.
        var timer: WebSocketTimer?
    }

    /// Why a WebSocket has a deadline.
    enum WebSocketTimer: Equatable {
        /// It sent nothing for a while: at the deadline it is pinged.
        case idle
        /// It was pinged: at the deadline, with nothing received since, it is closed.
        case pong
        /// A message was begun: it must be whole by the deadline.
        case message
    }

    /// A long answer under way.
    enum Stream {
        /// The rest of a file, then the connection goes on (`keepAlive`) or closes.
        case file(FileBody, keepAlive: Bool)
        /// Events until the client goes; `lastSent` is the last durable id it was sent.
        case events(lastSent: Int64)
    }

    /// A request or message complete and ready for a worker.
    enum Dispatch {
        case request(HTTPRequestHead, body: Data, keepAlive: Bool)
        case stream(HTTPRequestHead, keepAlive: Bool)
        case message(Data)
    }

    /// What the loop knows when it advances a connection.
    struct Context {
        let handler: any HTTPServerHandler
        let now: ContinuousClock.Instant
        /// Whether a WebSocket slot is free, or could be made free by closing an idle one (which
        /// it then does): asked only for an upgrade.
        let webSocketRoom: () -> Bool
        let subscribeNewSockets: Bool
    }

    let id: ConnectionID
    let fd: Int32
    private let limits: HTTPServerLimits
    private var input = InputBuffer()
    /// How much of `input` was searched for a head's end already.
    private var headSearched = 0
    private(set) var output = OutputQueue()
    private(set) var phase = Phase.awaitingHead(started: false)
    private var webSocket: WebSocketSession?
    private var stream: Stream?
    /// It holds a WebSocket slot (from its upgrade until it is closed).
    private(set) var isUpgraded = false
    /// When the loop closes it if nothing moves first; nil for none.
    private(set) var deadline: ContinuousClock.Instant?
    /// To be closed now (the peer went, a deadline passed, a write failed).
    private(set) var isFinished = false
    /// When a byte last went either way (or it was accepted): who has been idle longest.
    private(set) var lastActivity: ContinuousClock.Instant

    init(id: ConnectionID, fd: Int32, limits: HTTPServerLimits, now: ContinuousClock.Instant) {
        self.id = id
        self.fd = fd
        self.limits = limits
        deadline = now + .seconds(limits.idleSeconds)
        lastActivity = now
    }

    /// How readily it may be closed at `now` to make room for a new client; nil when it must not
    /// be: a call with a worker, an answer still being sent (unless it is a stream its client
    /// stopped reading), a WebSocket that proved the token.
    func shedding(now: ContinuousClock.Instant) -> Shedding.Rank? {
        if phase == .streaming, !output.isEmpty {
            // A file or event stream whose client took nothing for a while goes last of all: its
            // client resumes (Range, Last-Event-ID). Kept at any cost, a few hundred clients that
            // stopped reading would hold every slot and lock every call out.
            guard let unsentSince, now - unsentSince >= .seconds(limits.stalledStreamSeconds) else { return nil }
            return .stalledStream
        }
        guard output.isEmpty else { return nil }
        switch phase {
        case .closing:
            return .lingering
        case .awaitingHead(started: false):
            return input.isEmpty ? .idleHTTP : .unfinished
        case .awaitingHead(started: true), .readingBody:
            return .unfinished
        case .streaming:
            // An event stream with nothing to send waits as an idle WebSocket does; a file is
            // being sent.
            guard case .events = stream else { return nil }
            return .idleWebSocket
        case .streamRequested:
            return nil
        case .webSocket:
            guard let webSocket, !webSocket.busy, !webSocket.authenticated else { return nil }
            return webSocket.parser.isMidMessage || !input.isEmpty ? .unfinished : .idleWebSocket
        case .handling:
            return nil
        }
    }

    /// It is sending a file or an event stream, which `HTTPServerLimits.streams` bounds.
    var isStreaming: Bool { phase == .streaming && stream != nil }

    /// Whether a WebSocket of it made a call with the token.
    var isAuthenticated: Bool { webSocket?.authenticated == true }

    /// Since when its unsent output has not moved (nil when it has none): a client that stopped
    /// reading has a long stall, one just given an answer none.
    private(set) var unsentSince: ContinuousClock.Instant?

    /// The loop's look at its output at the end of a turn: starts the stall clock of output that
    /// appeared, stops it for output that is gone.
    func noteOutput(now: ContinuousClock.Instant) {
        if output.isEmpty {
            unsentSince = nil
        } else if unsentSince == nil {
            unsentSince = now
        }
    }

    /// Whether the loop should read from it now. A connection that waits for a worker, or whose
    /// WebSocket output is far behind, is not read: its client waits in the kernel's buffers.
    var wantsRead: Bool {
        switch phase {
        case .awaitingHead: return output.isEmpty
        case .readingBody: return true
        case .handling, .streamRequested: return false
        // An event stream is read only to see the client go (what it sends is dropped); a file's
        // next request waits until the file is sent.
        case .streaming: if case .events = stream { return true } else { return false }
        case .webSocket: return !(webSocket?.busy ?? true) && output.bytes < limits.backlogBytes
        case .closing(let shutDown): return shutDown
        }
    }

    /// Reads once what the socket holds (into `scratch`).
    func read(using scratch: UnsafeMutableRawBufferPointer, now: ContinuousClock.Instant) {
        switch Socket.receive(fd, into: scratch) {
        case .bytes(let count):
            if case .closing = phase { return }
            if case .streaming = phase { return }
            lastActivity = now
            // Anything from the client answers a ping and ends an idle spell; a message begun
            // keeps its own deadline.
            if webSocket?.timer != .message { webSocket?.timer = nil }
            input.append(UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
        case .none:
            break
        case .ended:
            isFinished = true
        }
    }

    /// Sends what the socket takes.
    func flush(now: ContinuousClock.Instant) {
        guard !output.isEmpty else { return }
        switch output.flush({ Socket.send(fd, $0) }) {
        case .failed:
            isFinished = true
        case .sent(let count):
            if count > 0 { lastActivity = now }
            if count > 0 { unsentSince = output.isEmpty ? nil : now }
            if count > 0, phase == .awaitingHead(started: false) || phase == .closing(shutDown: false) || phase == .streaming {
                // A response still moving is not idle.
                deadline = now + .seconds(limits.idleSeconds)
            }
            if output.isEmpty, phase == .closing(shutDown: false) {
                _ = shutdown(fd, Int32(SHUT_WR))
                phase = .closing(shutDown: true)
                deadline = now + .seconds(limits.lingerSeconds)
            }
        }
        refill(now: now)
    }

    /// Reads the next chunk of a file being sent once less than a chunk is unsent; at its end the
    /// connection goes on (or closes) as after any answer.
    func refill(now: ContinuousClock.Instant) {
        guard !isFinished, phase == .streaming, case .file(let body, let keepAlive) = stream, output.bytes < limits.streamChunkBytes else { return }
        switch body.next(limit: limits.streamChunkBytes) {
        case .bytes(let chunk):
            output.append(chunk)
        case .finished:
            stream = nil
            phase = keepAlive ? .awaitingHead(started: false) : .closing(shutDown: false)
            deadline = now + .seconds(limits.idleSeconds)
            if output.isEmpty, !keepAlive {
                _ = shutdown(fd, Int32(SHUT_WR))
                phase = .closing(shutDown: true)
                deadline = now + .seconds(limits.lingerSeconds)
            }
        case .failed:
            isFinished = true
        }
    }

    func finish() {
        isFinished = true
    }

    /// Closes it at `now` if its deadline passed; a WebSocket idle that long is pinged first.
    func expire(now: ContinuousClock.Instant) {
        guard let deadline, now >= deadline else { return }
        if phase == .streaming, case .events = stream {
            // Output that has not moved for the idle time belongs to a client that stopped
            // reading; an empty one gets a comment, whose failing write finds a client gone.
            if let unsentSince, now - unsentSince >= .seconds(limits.idleSeconds) { return finish() }
            if output.isEmpty { output.append(Data(": keep-alive\n\n".utf8)) }
            self.deadline = now + .seconds(limits.streamHeartbeatSeconds)
            return
        }
        if phase == .webSocket, webSocket?.timer == .idle {
            output.append(WebSocketFrame.ping(Data()))
            webSocket?.timer = .pong
            self.deadline = now + .seconds(limits.pongSeconds)
            return
        }
        isFinished = true
    }

    /// Takes the next steps its input allows: answers what it can answer itself, and returns a
    /// request or message that needs a worker.
    func advance(_ context: Context) -> Dispatch? {
        while !isFinished {
            switch phase {
            case .awaitingHead(let started):
                guard output.isEmpty, !input.isEmpty else { return nil }
                if !started {
                    phase = .awaitingHead(started: true)
                    deadline = context.now + .seconds(limits.requestSeconds)
                }
                let verdict = HTTPHeadParser.parse(input.readable, limit: limits.headBytes, resumeAt: headSearched)
                // The end's 3 bytes before (CR LF CR) may be followed by its last LF.
                headSearched = verdict == .incomplete ? max(0, input.count - 3) : 0
                switch verdict {
                case .incomplete:
                    return nil
                case .refused(let refusal):
                    refuse(HTTPResponse.text(refusal.status, refusal.reason), context)
                case .head(let head, let length):
                    input.consume(length)
                    begin(head, context)
                }
            case .readingBody(let head, let framing):
                guard input.count >= framing.bodyLength else { return nil }
                let body = input.take(framing.bodyLength)
                phase = .handling
                deadline = nil
                return .request(head, body: body, keepAlive: framing.keepAlive)
            case .streamRequested(let head, let keepAlive):
                phase = .handling
                deadline = nil
                return .stream(head, keepAlive: keepAlive)
            case .handling, .closing, .streaming:
                return nil
            case .webSocket:
                guard webSocket?.busy == false, let step = webSocket?.parser.next(input.readable) else { return nil }
                switch step {
                case .needMore:
                    if input.isEmpty, webSocket?.parser.isMidMessage != true {
                        // Idle since its last byte: pinged after a while (broadcasts sent to it
                        // meanwhile do not count, a ping sent keeps its deadline).
                        if webSocket?.timer != .idle, webSocket?.timer != .pong {
                            arm(.idle, at: context.now + .seconds(limits.webSocketIdleSeconds))
                        }
                    } else if webSocket?.timer != .message {
                        // A message begun must be finished in time: a partial one holds memory.
                        arm(.message, at: context.now + .seconds(limits.idleSeconds))
                    }
                    return nil
                case .failed(let failure):
                    closeWebSocket(WebSocketFrame.close(code: failure.code, reason: failure.reason), context)
                case .frame(let consumed, let event):
                    input.consume(consumed)
                    switch event {
                    case .message(let payload, _)?:
                        webSocket?.busy = true
                        webSocket?.timer = nil
                        deadline = nil
                        return .message(payload)
                    case .ping(let payload)?:
                        output.append(WebSocketFrame.pong(payload))
                    case .close(let code)?:
                        closeWebSocket(WebSocketFrame.close(code: code), context)
                    case .pong?, nil:
                        break
                    }
                }
            }
        }
        return nil
    }

    /// A worker's answer to the request it had.
    func responded(_ bytes: Data, keepAlive: Bool, now: ContinuousClock.Instant) {
        guard phase == .handling else { return }
        output.append(bytes)
        phase = keepAlive ? .awaitingHead(started: false) : .closing(shutDown: false)
        deadline = now + .seconds(limits.idleSeconds)
    }

    /// A worker's answer to a streamed request. `recent`: the durable events the loop kept, oldest
    /// first, for an event stream to take those its worker's reading of the journal missed.
    func streamed(_ reply: HTTPStreamReply, head: HTTPRequestHead, keepAlive: Bool, recent: [StreamEvent], now: ContinuousClock.Instant) {
        guard phase == .handling else { return }
        let connectionHeader = HTTPRequestFraming.connectionHeader(keepAlive: keepAlive, minorVersion: head.minorVersion)
        let isHEAD = head.method == "HEAD"
        switch reply {
        case .whole(let response):
            responded(response.serialized(connection: connectionHeader, toHEAD: isHEAD), keepAlive: keepAlive, now: now)
        case .file(let response, let body):
            output.append(response.serialized(connection: connectionHeader, toHEAD: true))
            guard !isHEAD else {
                phase = keepAlive ? .awaitingHead(started: false) : .closing(shutDown: false)
                deadline = now + .seconds(limits.idleSeconds)
                return
            }
            stream = .file(body, keepAlive: keepAlive)
            phase = .streaming
            deadline = now + .seconds(limits.idleSeconds)
            refill(now: now)
        case .events(let response, let initial, let after):
            // The body runs until the connection closes: no length, and no next request.
            output.append(response.serialized(connection: "close", toHEAD: true, lengthKnown: false))
            output.append(initial)
            if recent.count >= limits.recentEvents, let oldest = recent.first?.durableID, oldest > after + 1 {
                // More events came while its worker answered than the loop keeps: some after
                // `after` are in neither. The stream ends after what it has; its client reconnects
                // with its Last-Event-ID and the journal gives it the rest, with no gap.
                phase = .closing(shutDown: false)
                deadline = now + .seconds(limits.idleSeconds)
                return
            }
            stream = .events(lastSent: after)
            phase = .streaming
            deadline = now + .seconds(limits.streamHeartbeatSeconds)
            for event in recent { self.event(event) }
        }
    }

    /// An event for an open event stream: one it was sent already (by its durable id) is not sent
    /// again; a stream whose client lets more than `streamBacklogBytes` wait is cut.
    func event(_ event: StreamEvent) {
        guard !isFinished, phase == .streaming, case .events(let lastSent) = stream else { return }
        if let id = event.durableID {
            guard id > lastSent else { return }
            stream = .events(lastSent: id)
        }
        output.append(event.bytes)
        if output.bytes > limits.streamBacklogBytes { isFinished = true }
    }

    /// A worker's answer to the WebSocket message it had, and whether that message carried the
    /// token (the socket then receives broadcasts).
    func replied(_ frame: Data?, authenticated: Bool) {
        guard phase == .webSocket, webSocket != nil else { return }
        webSocket?.busy = false
        if authenticated {
            webSocket?.subscribed = true
            webSocket?.authenticated = true
        }
        guard let frame else { return }
        output.append(frame)
        // A client that sends calls and never reads their answers is not kept: judged with this
        // answer counted, so no answer lifts a socket past the bound and stays held.
        if output.bytes > limits.answerBacklogBytes { isFinished = true }
    }

    /// A notification, unless the socket does not receive them or is too far behind.
    func broadcast(_ frame: Data) {
        guard phase == .webSocket, webSocket?.subscribed == true, output.messages < limits.backlogMessages,
            output.bytes < limits.backlogBytes
        else { return }
        output.append(frame)
    }

    /// What the server does with a request whose head just arrived.
    private func begin(_ head: HTTPRequestHead, _ context: Context) {
        let framing: HTTPRequestFraming
        switch HTTPRequestFraming.of(head) {
        case .failure(let refusal):
            refuse(HTTPResponse.text(refusal.status, refusal.reason), context, to: head)
            return
        case .success(let value):
            framing = value
        }
        switch context.handler.route(head) {
        case .answer(let response):
            // A body it announced is not read: the connection cannot be used after it.
            guard framing.bodyLength == 0, framing.keepAlive else { return refuse(response, context, to: head) }
            let connection = HTTPRequestFraming.connectionHeader(keepAlive: true, minorVersion: head.minorVersion)
            output.append(response.serialized(connection: connection, toHEAD: head.method == "HEAD"))
            phase = .awaitingHead(started: false)
            deadline = context.now + .seconds(limits.idleSeconds)
        case .read(let limit, let tooLarge):
            guard framing.bodyLength <= limit else { return refuse(tooLarge, context, to: head) }
            if framing.expectsContinue, input.count < framing.bodyLength {
                output.append(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            }
            phase = .readingBody(head, framing)
        case .stream:
            // A body it announced is not read: the connection cannot be used after it.
            guard framing.bodyLength == 0 else {
                return refuse(HTTPResponse.text(400, "this route takes no request body"), context, to: head)
            }
            phase = .streamRequested(head, keepAlive: framing.keepAlive)
        case .webSocket:
            switch WebSocketHandshake.check(head) {
            case .failure(let refusal):
                refuse(WebSocketHandshake.refusalResponse(refusal), context, to: head)
            case .success(let key):
                guard context.webSocketRoom() else { return refuse(HTTPResponse.text(503, "too many WebSockets are open"), context, to: head) }
                output.append(WebSocketHandshake.response(for: key))
                webSocket = WebSocketSession(
                    parser: WebSocketFrameParser(limit: limits.messageBytes, fragments: limits.messageFragments), subscribed: context.subscribeNewSockets)
                phase = .webSocket
                isUpgraded = true
                deadline = nil
            }
        }
    }

    /// Sends `response` (without its body when it answers a HEAD request) and closes after it.
    private func refuse(_ response: HTTPResponse, _ context: Context, to head: HTTPRequestHead? = nil) {
        output.append(response.serialized(connection: "close", toHEAD: head?.method == "HEAD"))
        phase = .closing(shutDown: false)
        deadline = context.now + .seconds(limits.idleSeconds)
    }

    /// Gives the WebSocket a deadline for `timer`.
    private func arm(_ timer: WebSocketTimer, at instant: ContinuousClock.Instant) {
        webSocket?.timer = timer
        deadline = instant
    }

    /// Sends a close frame and closes after it.
    private func closeWebSocket(_ frame: Data, _ context: Context) {
        output.append(frame)
        phase = .closing(shutDown: false)
        deadline = context.now + .seconds(limits.idleSeconds)
    }
}
