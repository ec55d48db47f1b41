import Foundation
import Haul
import HaulCore
import HaulStore
import HaulTestSupport
import Synchronization
import Testing

/// A step counter shared between a test and its event handler.
private final class Steps: Sendable {
    private let value = Mutex(0)

    /// Moves from `from` to `from + 1`; true only for the caller that made the move.
    func advance(from: Int) -> Bool {
        value.withLock { current in
            guard current == from else { return false }
            current += 1
            return true
        }
    }

    var current: Int { value.withLock { $0 } }
}

// Pause, resume, cancel, and subscribers that join late.
extension DownloadFaultTests {
    @Test("pause then resume in the same process continues from the bytes on disk")
    func pauseThenResume() async throws {
        // GIVEN a 4 MiB resource whose first answer is throttled to 1 MB/s
        let server = try FaultServer()
        let body = TestData.bytes(count: 4 << 20, seed: 71)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.throttle(bytesPerSecond: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("paused.bin")
        let download = Downloader().download(try FaultHarness.request(server, to: .file(destination)))

        // WHEN it is paused once bytes arrive, and resumed once the pause is reported
        let steps = Steps()
        let watched = try await FaultHarness.watch(download, timeout: 20) { event in
            switch event {
            case .progress(let progress) where progress.bytes > 0:
                if steps.advance(from: 0) { download.pause() }
            case .paused:
                if steps.advance(from: 1) { download.resume() }
            default:
                break
            }
        }

        // THEN the events tell the whole story in order
        #expect(steps.current == 2)
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        #expect(
            watched.collapsedKinds == [
                "started", "response", "progress", "paused", "started", "response", "progress", "completed",
            ])
        FaultHarness.expectFile(destination, equals: body)
        // AND the second run started where the pause left the file, with a guarded range
        let pausedAt = try #require(watched.events.compactMap { if case .paused(let p) = $0 { p.bytes } else { nil } }.first)
        #expect(pausedAt > 0 && pausedAt < Int64(body.count))
        #expect(watched.starts.map(\.resumingFrom) == [0, pausedAt])
        #expect(watched.responses.map(\.status) == [200, 206])
        #expect(watched.responses.last?.resumedFrom == pausedAt)
        let requests = FaultHarness.requests(server)
        try #require(requests.count == 2)
        #expect(requests[1].header("Range") == "bytes=\(pausedAt)-")
        #expect(requests[1].header("If-Range") == "\"v1\"")
    }

    @Test("resume() called right after pause() is not lost")
    func resumeRightAfterPause() async throws {
        // GIVEN a download that is receiving bytes slowly
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 72)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.throttle(bytesPerSecond: 2_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("pause-resume.bin")
        let download = Downloader().download(try FaultHarness.request(server, to: .file(destination)))

        // WHEN pause() and resume() are called back to back while it runs
        let steps = Steps()
        let watched = try await FaultHarness.watch(download, timeout: 15) { event in
            if case .progress(let progress) = event, progress.bytes > 0, steps.advance(from: 0) {
                download.pause()
                download.resume()
            }
        }

        // THEN the download still completes: the last request wins
        #expect(steps.current == 1)
        #expect(watched.completion != nil, "failed: \(String(describing: watched.error))")
        FaultHarness.expectFile(destination, equals: body)
    }

    @Test("cancel(deletingPartial: true) removes the partial and the record")
    func cancelDeletingPartial() async throws {
        // GIVEN a download receiving bytes slowly
        let server = try FaultServer()
        server.setResource(FaultHarness.path, body: TestData.bytes(count: 4 << 20, seed: 73))
        server.setPersistentFaults(FaultHarness.path, [.throttle(bytesPerSecond: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("cancelled.bin")
        let download = Downloader().download(try FaultHarness.request(server, to: .file(destination)))

        // WHEN it is cancelled with its partial data once bytes arrive
        let steps = Steps()
        let watched = try await FaultHarness.watch(download, timeout: 15) { event in
            if case .progress(let progress) = event, progress.bytes > 0, steps.advance(from: 0) {
                download.cancel(deletingPartial: true)
            }
        }

        // THEN it ends cancelled, result() says so, and nothing is left on disk
        #expect(watched.events.last == .cancelled)
        var thrown: DownloadError?
        do {
            _ = try await download.result()
        } catch {
            thrown = error
        }
        #expect(thrown?.category == .cancelled)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        #expect(FaultHarness.requests(server).count == 1)
    }

    @Test("cancel() keeps the partial and its record, and a later run resumes from them")
    func cancelKeepingPartial() async throws {
        // GIVEN a download whose first answer is slow
        let server = try FaultServer()
        let body = TestData.bytes(count: 4 << 20, seed: 74)
        server.setResource(FaultHarness.path, body: body)
        server.enqueueFaults(FaultHarness.path, [.throttle(bytesPerSecond: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("kept.bin")
        let request = try FaultHarness.request(server, to: .file(destination))
        let download = Downloader().download(request)

        // WHEN it is cancelled once bytes arrive
        let steps = Steps()
        let first = try await FaultHarness.watch(download, timeout: 15) { event in
            if case .progress(let progress) = event, progress.bytes >= 100_000, steps.advance(from: 0) {
                download.cancel()
            }
        }

        // THEN the bytes so far are kept as a partial with a record
        #expect(first.events.last == .cancelled)
        let kept = try #require(FaultHarness.contents(FaultHarness.partialPath(destination)))
        #expect(kept.count >= 100_000)
        #expect(kept == Array(body[0..<kept.count]))
        #expect(try RecordFile(path: FaultHarness.recordPath(destination)).load() != nil)

        // WHEN the download is run again
        let second = try await FaultHarness.run(request)

        // THEN it resumes from the kept bytes
        #expect(second.completion != nil, "failed: \(String(describing: second.error))")
        #expect(second.starts.first?.resumingFrom == Int64(kept.count))
        FaultHarness.expectFile(destination, equals: body)
        #expect(FaultHarness.requests(server).last?.header("Range") == "bytes=\(kept.count)-")
    }

    @Test("a late subscriber first receives the current state, then the live events")
    func lateSubscriberGetsCurrentState() async throws {
        // GIVEN a download running at 1 MB/s
        let server = try FaultServer()
        let body = TestData.bytes(count: 2 << 20, seed: 75)
        server.setResource(FaultHarness.path, body: body)
        server.setPersistentFaults(FaultHarness.path, [.throttle(bytesPerSecond: 1_000_000)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("late.bin")
        let download = Downloader().download(try FaultHarness.request(server, to: .file(destination)))

        let cancel: @Sendable () -> Void = { download.cancel() }
        let (early, late) = try await FaultHarness.withTimeout(seconds: 20, onTimeout: cancel) {
            var early: [DownloadEvent] = []
            for await event in download.events {
                early.append(event)
                if case .progress(let progress) = event, progress.bytes >= 300_000 { break }
            }
            // WHEN a second subscriber joins mid-download
            var late: [DownloadEvent] = []
            for await event in download.events { late.append(event) }
            return (early, late)
        }

        // THEN its first events are the start, the response and the progress so far — not zero
        let lateWatch = WatchedDownload(events: late)
        try #require(late.count >= 4)
        #expect(late[0] == early.first)
        #expect(FaultHarness.kind(of: late[1]) == "response")
        guard case .progress(let replayed) = late[2] else {
            Issue.record("third replayed event is \(late[2]), not progress")
            return
        }
        #expect(replayed.bytes >= 300_000)
        // AND it then follows live to the completion
        #expect(lateWatch.completion != nil, "failed: \(String(describing: lateWatch.error))")
        #expect(lateWatch.progress.map(\.bytes) == lateWatch.progress.map(\.bytes).sorted())
        FaultHarness.expectFile(destination, equals: body)

        // WHEN a subscriber joins after the end
        let after = try await FaultHarness.watch(download, timeout: 5)

        // THEN it receives the final state and the terminal event, then the stream ends
        #expect(after.collapsedKinds == ["started", "response", "progress", "completed"])
        #expect(after.completion == lateWatch.completion)
        #expect(FaultHarness.requests(server).count == 1)
    }
}
