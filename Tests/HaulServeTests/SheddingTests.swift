import Foundation
import HaulTestSupport
import Testing

@testable import HaulServe

/// Which connection makes room when the server is full (pure), and the idle WebSocket's ping
/// deadline on real sockets.
@Suite("HTTP server: making room and idle WebSockets", .serialized)
struct SheddingTests {
    let start = ContinuousClock.now

    func candidate(_ id: ConnectionID, _ rank: Shedding.Rank, webSocket: Bool = false, idleFor seconds: Int) -> Shedding.Candidate {
        Shedding.Candidate(id: id, rank: rank, isWebSocket: webSocket || rank == .idleWebSocket, idleSince: start - .seconds(seconds))
    }

    @Test func theLeastUsefulGoesFirstAndWithinAKindTheLongestIdle() {
        let all = [
            candidate(2, .idleWebSocket, idleFor: 10),
            candidate(3, .idleWebSocket, idleFor: 90),
            candidate(7, .unfinished, webSocket: true, idleFor: 3),
            candidate(8, .unfinished, idleFor: 4),
            candidate(4, .idleHTTP, idleFor: 5),
            candidate(5, .idleHTTP, idleFor: 20),
            candidate(6, .lingering, idleFor: 1),
        ]
        #expect(Shedding.victim(among: all, webSocketsOnly: false) == 6)
        #expect(Shedding.victim(among: all.filter { $0.id != 6 }, webSocketsOnly: false) == 5)
        // Begun and not finished, before an idle WebSocket (a listener's)
        #expect(Shedding.victim(among: all.filter { $0.rank != .lingering && $0.rank != .idleHTTP }, webSocketsOnly: false) == 8)
        #expect(Shedding.victim(among: all.filter { $0.rank == .idleWebSocket }, webSocketsOnly: false) == 3)
        // Room for a WebSocket is made among WebSockets only
        #expect(Shedding.victim(among: all, webSocketsOnly: true) == 7)
        #expect(Shedding.victim(among: all.filter { $0.id != 7 }, webSocketsOnly: true) == 3)
        #expect(Shedding.victim(among: all.filter { !$0.isWebSocket }, webSocketsOnly: true) == nil)
        #expect(Shedding.victim(among: [], webSocketsOnly: false) == nil)
    }

    @Test func theUnsentBoundClosesThoseWithoutTheTokenThatStoppedReadingFirst() {
        let reading = Shedding.UnsentCandidate(isAuthenticated: false, stalled: .zero, bytes: 7_000_000)
        let stopped = Shedding.UnsentCandidate(isAuthenticated: false, stalled: .seconds(3), bytes: 3_000_000)
        let ui = Shedding.UnsentCandidate(isAuthenticated: true, stalled: .seconds(9), bytes: 9_000_000)
        #expect([reading, ui, stopped].sorted() == [stopped, reading, ui])
    }

    @Test(.timeLimit(.minutes(1)))
    func anIdleWebSocketIsPingedAndClosedOnlyWhenItDoesNotAnswer() throws {
        var limits = HTTPServerLimits()
        limits.webSocketIdleSeconds = 0.5
        limits.pongSeconds = 0.5
        let fixture = try ServerFixture(limits: limits)
        defer { fixture.server.stop() }
        // GIVEN two idle WebSockets
        let silent = try RawClient(port: fixture.server.port)
        try silent.handshake(port: fixture.server.port)
        let live = try RawClient(port: fixture.server.port)
        try live.handshake(port: fixture.server.port)
        // WHEN they have sent nothing for the idle time
        // THEN each is pinged
        #expect(try silent.frame(timeout: 3).opcode == 9)
        #expect(try live.frame(timeout: 3).opcode == 9)
        // AND the one that answers with a pong is kept (and pinged again later)
        try live.sendFrame(10, [])
        // AND the one that does not is closed
        #expect(silent.closes(within: 3))
        #expect(try live.frame(timeout: 3).opcode == 9)
        try live.sendFrame(10, [])
        try live.sendText(ServerFixture.call("aria2.getVersion"))
        var answered = false
        for _ in 0..<4 where !answered {
            let frame = try live.frame(timeout: 3)
            if frame.opcode == 9 { try live.sendFrame(10, []) }
            answered = frame.opcode == 1 && String(decoding: frame.payload, as: UTF8.self).contains("\"version\"")
        }
        #expect(answered)
    }
}
