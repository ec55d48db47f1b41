import Foundation
import HaulCore
import HaulEngine
import HaulTestSupport
import Synchronization
import Testing

/// Collects a body and counts the threads its callbacks ran on; can be told to stop.
private final class Collector: TransferHandler, @unchecked Sendable {
    var status: Int?
    var body: [UInt8] = []
    /// The ids of the threads the callbacks ran on.
    var threads: Set<UInt> = []
    let stop = Atomic<Bool>(false)

    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        status = head.status
        threads.insert(UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))))
        return .proceed
    }
    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl {
        body.append(contentsOf: chunk)
        return .proceed
    }
    func transferShouldAbort() -> Bool { stop.load(ordering: .relaxed) }
}

/// `CurlTransport.transfer`: every transfer of the process on one event loop thread.
@Suite("libcurl event loop: many transfers on one thread", .serialized)
struct CurlEventLoopTests {
    @Test func twoHundredConcurrentTransfersAllArriveWholeFromOneThread() async throws {
        // GIVEN 200 distinct files
        let server = try FaultServer()
        var bodies: [String: [UInt8]] = [:]
        for index in 0..<200 {
            let body = (0..<(1000 + index * 37)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
            bodies["/f\(index)"] = body
            server.setResource("/f\(index)", body: body)
        }
        let transport = CurlTransport()
        // WHEN all are transferred at once
        let results = await withTaskGroup(of: (String, TransferOutcome, Collector).self) { group in
            for path in bodies.keys {
                group.addTask {
                    let collector = Collector()
                    let request = TransferRequest(url: URL(string: server.url(path))!)
                    let outcome = await transport.transfer(request, options: TransferOptions(), handler: collector, handlerMayBlock: false)
                    return (path, outcome, collector)
                }
            }
            var all: [(String, TransferOutcome, Collector)] = []
            for await result in group { all.append(result) }
            return all
        }
        // THEN every body is exact, and every callback of the 200 ran on one thread (the loop's)
        #expect(results.count == 200)
        for (path, outcome, collector) in results {
            #expect(outcome == .completed, "\(path)")
            #expect(collector.status == 200)
            #expect(collector.body == bodies[path], "\(path)")
        }
        #expect(Set(results.flatMap(\.2.threads)).count == 1)
    }

    @Test func aStopReachesAStalledTransferWhenTheLoopIsWoken() async throws {
        // GIVEN a transfer the server stalls for 20 s after 1,000 bytes
        let server = try FaultServer()
        server.setResource("/slow", body: Array(repeating: 5, count: 100_000))
        server.enqueueFaults("/slow", [.stall(afterBytes: 1000, seconds: 20)])
        let transport = CurlTransport()
        let collector = Collector()
        let request = TransferRequest(url: URL(string: server.url("/slow"))!)
        let started = ContinuousClock.now
        async let outcome = transport.transfer(request, options: TransferOptions(), handler: collector, handlerMayBlock: false)
        // WHEN it is asked to stop once the first bytes arrived, and the loop is woken
        try await Task.sleep(for: .milliseconds(300))
        collector.stop.store(true, ordering: .relaxed)
        transport.wake()
        // THEN it ends as stopped, at once, not after the stall
        #expect(await outcome == .stoppedByHandler)
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(collector.body.count == 1000)
    }

    @Test func aStallIsStillJudgedOnTheLoop() async throws {
        // GIVEN a stall timeout of 1 s and a server that stalls for 20 s
        let server = try FaultServer()
        server.setResource("/slow", body: Array(repeating: 5, count: 10_000))
        server.enqueueFaults("/slow", [.stall(afterBytes: 500, seconds: 20)])
        let transport = CurlTransport()
        var options = TransferOptions()
        options.stallTimeout = 1
        let started = ContinuousClock.now
        let outcome = await transport.transfer(
            TransferRequest(url: URL(string: server.url("/slow"))!), options: options, handler: Collector(), handlerMayBlock: false)
        // THEN it fails as stalled after about a second
        guard case .failed(let error) = outcome else {
            Issue.record("expected a stall, got \(outcome)")
            return
        }
        #expect(error.kind == .stalled)
        #expect(ContinuousClock.now - started < .seconds(6))
    }
}
