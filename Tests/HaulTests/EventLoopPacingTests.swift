import Foundation
import HaulCore
import HaulEngine
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// Collects a body, accounts for it with its limiter (as the download's writers do), and notes the
/// threads its callbacks ran on; can be told to stop.
private final class PacedCollector: TransferHandler, @unchecked Sendable {
    let limiter: RateLimiter?
    var body: [UInt8] = []
    var threads: Set<UInt> = []
    let stop = Atomic<Bool>(false)
    /// Ends the transfer from the body callback at this chunk (counting from 1).
    var stopAtChunk: Int?
    private var chunks = 0

    init(_ limiter: RateLimiter?) { self.limiter = limiter }

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl { .proceed }
    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        threads.insert(UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))))
        chunks += 1
        if chunks == stopAtChunk { return .stop }
        body.append(contentsOf: chunk)
        limiter?.account(chunk.count)
        return .proceed
    }
    func transferShouldAbort() -> Bool { stop.load(ordering: .relaxed) }
}

/// A speed limit on the event loop: a chunk the limiter holds back pauses that transfer alone.
@Suite("libcurl event loop: speed limits without blocking the loop", .serialized)
struct EventLoopPacingTests {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    fileprivate static func transfer(
        _ transport: CurlTransport, _ server: FaultServer, _ path: String, _ collector: PacedCollector, stallTimeout: Double = 30
    ) async -> TransferOutcome {
        var options = TransferOptions(stallTimeout: stallTimeout).paced(by: collector.limiter)
        options.connectTimeout = 5
        let request = TransferRequest(url: URL(string: server.url(path))!)
        return await transport.transfer(request, options: options, handler: collector, handlerMayBlock: false)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLimitedTransferDoesNotHoldUpAnUnlimitedOneOnTheSameLoop() async throws {
        // GIVEN a 1 MiB file limited to 256 KiB/s (about 4 s) and an unlimited 16 MiB file
        let server = try FaultServer()
        defer { server.stop() }
        let slowBody = TestData.bytes(count: 1 << 20, seed: 11)
        let fastBody = TestData.bytes(count: 16 << 20, seed: 12)
        server.setResource("/slow", body: slowBody)
        server.setResource("/fast", body: fastBody)
        let transport = CurlTransport()
        let limited = PacedCollector(RateLimiter(bytesPerSecond: 256 << 10))
        let unlimited = PacedCollector(nil)
        let started = ContinuousClock.now
        // WHEN both run at once on the loop
        async let slow = Self.transfer(transport, server, "/slow", limited)
        try await Task.sleep(for: .milliseconds(200))
        let fast = await Self.transfer(transport, server, "/fast", unlimited)
        let fastSeconds = Self.seconds(ContinuousClock.now - started)
        let slowOutcome = await slow
        let slowSeconds = Self.seconds(ContinuousClock.now - started)
        // THEN the unlimited one finished in its own time, long before the limited one
        #expect(fast == .completed)
        #expect(unlimited.body == fastBody)
        #expect(fastSeconds < 2.5, "the unlimited 16 MiB took \(fastSeconds) s beside a limited transfer")
        // AND the limited one kept to its limit and arrived whole
        #expect(slowOutcome == .completed)
        #expect(limited.body == slowBody)
        #expect(slowSeconds >= 2.5, "1 MiB at 256 KiB/s took \(slowSeconds) s")
        // AND every callback of both ran on one thread: the loop's (a limit gets no thread of its own)
        #expect(limited.threads.union(unlimited.threads).count == 1)
    }

    @Test(.timeLimit(.minutes(1)))
    func aLimitChangeReachesATransferHeldBackByTheLimit() async throws {
        // GIVEN a 2 MiB transfer limited to 16 KiB/s (over two minutes)
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 2 << 20, seed: 13)
        server.setResource("/f", body: body)
        let limiter = RateLimiter(bytesPerSecond: 16 << 10)
        let collector = PacedCollector(limiter)
        async let outcome = Self.transfer(CurlTransport(), server, "/f", collector)
        try await Task.sleep(for: .milliseconds(500))
        // WHEN the limit is lifted while it is held back
        let lifted = ContinuousClock.now
        limiter.setLimit(bytesPerSecond: 0)
        // THEN it goes on at once and completes in a moment, whole
        #expect(await outcome == .completed)
        let seconds = Self.seconds(ContinuousClock.now - lifted)
        #expect(seconds < 5, "the rest took \(seconds) s after the limit was lifted")
        #expect(collector.body == body)
    }

    @Test(.timeLimit(.minutes(1)))
    func aStopReachesATransferHeldBackByTheLimit() async throws {
        // GIVEN a 2 MiB transfer limited to 16 KiB/s, held back after its first chunk
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/f", body: TestData.bytes(count: 2 << 20, seed: 14))
        let collector = PacedCollector(RateLimiter(bytesPerSecond: 16 << 10))
        let transport = CurlTransport()
        async let outcome = Self.transfer(transport, server, "/f", collector)
        try await Task.sleep(for: .milliseconds(500))
        // WHEN it is asked to stop and the loop woken (as a pause or cancel does)
        let asked = ContinuousClock.now
        collector.stop.store(true, ordering: .relaxed)
        transport.wake()
        // THEN it ends as stopped at once, not when the limit's wait is over
        #expect(await outcome == .stoppedByHandler)
        let seconds = Self.seconds(ContinuousClock.now - asked)
        #expect(seconds < 2, "the stop took \(seconds) s to reach a held transfer")
        #expect(collector.body.count < 2 << 20)
    }

    @Test(.timeLimit(.minutes(1)))
    func aHandlerEndingTheTransferOnAChunkOfferedAgainEndsIt() async throws {
        // GIVEN a transfer whose every chunk after the first is held back by a 64 KiB/s limit,
        // and a handler that ends the transfer on its second chunk (the first one offered again)
        let server = try FaultServer()
        defer { server.stop() }
        server.setResource("/f", body: TestData.bytes(count: 4 << 20, seed: 16))
        let collector = PacedCollector(RateLimiter(bytesPerSecond: 64 << 10))
        collector.stopAtChunk = 2
        // WHEN it runs
        let started = ContinuousClock.now
        let outcome = await Self.transfer(CurlTransport(), server, "/f", collector)
        // THEN it ends as stopped by the handler, once that chunk's wait was over, not at the file's end
        #expect(outcome == .stoppedByHandler)
        let seconds = Self.seconds(ContinuousClock.now - started)
        #expect(seconds < 10, "the transfer took \(seconds) s to end")
    }

    @Test(.timeLimit(.minutes(1)))
    func aWaitForTheLimitIsNoStall() async throws {
        // GIVEN a 1 s stall timeout and a limit that holds each chunk back for longer than that
        let server = try FaultServer()
        defer { server.stop() }
        let body = TestData.bytes(count: 200 << 10, seed: 15)
        server.setResource("/f", body: body)
        let collector = PacedCollector(RateLimiter(bytesPerSecond: 64 << 10))
        // WHEN it runs
        let outcome = await Self.transfer(CurlTransport(), server, "/f", collector, stallTimeout: 1)
        // THEN the silence the limit makes is not judged a stall
        #expect(outcome == .completed)
        #expect(collector.body == body)
    }

    @Test func anEnclosingLimitHoldsBackTheTransfersWithin() {
        // GIVEN a download's limiter without a limit of its own, within a run's of 1000 B/s
        let run = RateLimiter(bytesPerSecond: 1000)
        let download = RateLimiter(bytesPerSecond: 0, within: run)
        #expect(download.secondsBeforeNextChunk() == 0)
        // WHEN the download accounts for 2000 bytes
        download.account(2000)
        // THEN the run's debt holds its next chunk back for about 2 s, and the run's other downloads too
        #expect(download.secondsBeforeNextChunk() > 1.5)
        #expect(RateLimiter(bytesPerSecond: 0, within: run).secondsBeforeNextChunk() > 1.5)
        // AND lifting the run's limit lets everything through
        run.setLimit(bytesPerSecond: 0)
        #expect(download.secondsBeforeNextChunk() == 0)
    }
}
