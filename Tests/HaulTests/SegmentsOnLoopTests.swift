import Foundation
import Haul
import HaulCore
import HaulEngine
import HaulTestSupport
import Synchronization
import Testing

/// What a watched transport saw: how many transfers came through each entry, and the threads
/// their body callbacks ran on.
private final class TransportLog: Sendable {
    let performed = Atomic<Int>(0)
    let onThreadOfTheirOwn = Atomic<Int>(0)
    let transfers = Atomic<Int>(0)
    let threads = Mutex<Set<UInt>>([])

    func noteThread() {
        let thread = UInt(bitPattern: Int(bitPattern: UInt(pthread_self())))
        threads.withLock { _ = $0.insert(thread) }
    }
}

/// The libcurl engine, watched.
private final class WatchedTransport: HTTPTransport {
    private let base = CurlTransport()
    let log = TransportLog()

    func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome {
        log.performed.add(1, ordering: .relaxed)
        return base.perform(request, options: options, handler: ThreadNoting(handler, log))
    }

    func transfer(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler, handlerMayBlock: Bool) async
        -> TransferOutcome
    {
        log.transfers.add(1, ordering: .relaxed)
        if handlerMayBlock { log.onThreadOfTheirOwn.add(1, ordering: .relaxed) }
        return await base.transfer(request, options: options, handler: ThreadNoting(handler, log), handlerMayBlock: handlerMayBlock)
    }

    var hasBackpressure: Bool { base.hasBackpressure }
    func wake() { base.wake() }
}

/// Passes every call on, noting the thread each body chunk arrived on.
private final class ThreadNoting: TransferHandler {
    private let inner: any TransferHandler
    private let log: TransportLog

    init(_ inner: any TransferHandler, _ log: TransportLog) {
        self.inner = inner
        self.log = log
    }

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl { inner.transferDidReceiveHead(head) }
    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        log.noteThread()
        return inner.transferDidReceiveBody(chunk)
    }
    func transferShouldAbort() -> Bool { inner.transferShouldAbort() }
}

/// A segmented download's connections run on the engine's event loop, limited or not.
@Suite("Segment connections on the event loop", .serialized)
struct SegmentsOnLoopTests {
    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    fileprivate static func download(_ request: DownloadRequest, on transport: WatchedTransport) async throws -> WatchedDownload {
        try await FaultHarness.watch(Downloader(transport: transport).download(request), timeout: 60)
    }

    @Test("every connection of a segmented download is a transfer on the loop: one thread for all their bytes")
    func connectionsRunOnTheLoopThread() async throws {
        // GIVEN a 16 MiB file, every connection throttled to 4 MiB/s, and four connections
        let body = TestData.bytes(count: 16 << 20, seed: 21)
        let server = try SegmentedDownloadTests.serve(body)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        let transport = WatchedTransport()
        // WHEN it downloads
        let watched = try await Self.download(SegmentedDownloadTests.request(server, to: directory.file("f")), on: transport)
        // THEN it is exact, fetched over several connections
        #expect(watched.completion != nil, "\(String(describing: watched.error))")
        FaultHarness.expectFile(directory.file("f"), equals: body)
        #expect(SegmentedDownloadTests.segmentRequests(server).count >= 3)
        // AND no connection blocked a thread of its own: every byte arrived on one thread, the loop's
        #expect(transport.log.performed.load(ordering: .relaxed) == 0)
        #expect(transport.log.onThreadOfTheirOwn.load(ordering: .relaxed) == 0)
        #expect(transport.log.transfers.load(ordering: .relaxed) >= 4)
        #expect(transport.log.threads.withLock { $0.count } == 1)
    }

    @Test("a speed-limited segmented download keeps its limit on the loop thread, its connections sharing it")
    func limitedConnectionsRunOnTheLoopThread() async throws {
        // GIVEN a 16 MiB file over four connections (about 1 s unlimited) under an 8 MiB/s limit
        let body = TestData.bytes(count: 16 << 20, seed: 22)
        let server = try SegmentedDownloadTests.serve(body)
        defer { server.stop() }
        let directory = try TemporaryDirectory()
        var request = try SegmentedDownloadTests.request(server, to: directory.file("f"))
        request.rateLimiter = RateLimiter(bytesPerSecond: 8 << 20)
        let transport = WatchedTransport()
        // WHEN it downloads
        let started = ContinuousClock.now
        let watched = try await Self.download(request, on: transport)
        let seconds = Self.seconds(ContinuousClock.now - started)
        // THEN it is exact and the connections together kept to the one limit
        #expect(watched.completion != nil, "\(String(describing: watched.error))")
        FaultHarness.expectFile(directory.file("f"), equals: body)
        #expect(seconds >= 1.6, "16 MiB at 8 MiB/s took \(seconds) s")
        #expect(SegmentedDownloadTests.segmentRequests(server).count >= 2)
        // AND every byte, limited, arrived on the loop's one thread
        #expect(transport.log.performed.load(ordering: .relaxed) == 0)
        #expect(transport.log.onThreadOfTheirOwn.load(ordering: .relaxed) == 0)
        #expect(transport.log.threads.withLock { $0.count } == 1)
    }

    @Test("a limited download does not hold up an unlimited one running beside it")
    func aLimitedDownloadBesideAnUnlimitedOne() async throws {
        // GIVEN a 2 MiB file limited to 128 KiB/s (about 16 s) and an unlimited 32 MiB file
        let server = try FaultServer()
        defer { server.stop() }
        let slowBody = TestData.bytes(count: 2 << 20, seed: 23)
        let fastBody = TestData.bytes(count: 32 << 20, seed: 24)
        server.setResource("/slow", body: slowBody)
        server.setResource("/fast", body: fastBody)
        let directory = try TemporaryDirectory()
        let transport = WatchedTransport()
        var limited = try FaultHarness.request(server, "/slow", to: .file(directory.file("slow")))
        limited.rateLimiter = RateLimiter(bytesPerSecond: 128 << 10)
        limited.connections = 1
        var unlimited = try FaultHarness.request(server, "/fast", to: .file(directory.file("fast")))
        unlimited.connections = 1
        let downloader = Downloader(transport: transport)
        let slow = downloader.download(limited)
        try await Task.sleep(for: .milliseconds(300))
        // WHEN the unlimited one runs while the limited one is held back
        let started = ContinuousClock.now
        let fast = try await FaultHarness.watch(downloader.download(unlimited), timeout: 60)
        let seconds = Self.seconds(ContinuousClock.now - started)
        // THEN it finished in about its own time, the limited one still running
        #expect(fast.completion != nil, "\(String(describing: fast.error))")
        FaultHarness.expectFile(directory.file("fast"), equals: fastBody)
        #expect(seconds < 8, "32 MiB beside a limited download took \(seconds) s")
        #expect(!FaultHarness.exists(directory.file("slow")))
        // AND both were on the one loop thread
        #expect(transport.log.threads.withLock { $0.count } == 1)
        // AND a cancel reaches the limited one at once, though it waits for its limit
        let asked = ContinuousClock.now
        slow.cancel()
        let cancelled = try await FaultHarness.watch(slow, timeout: 30)
        #expect(cancelled.completion == nil)
        let cancelSeconds = Self.seconds(ContinuousClock.now - asked)
        #expect(cancelSeconds < 3, "the cancel took \(cancelSeconds) s")
    }
}
