import Foundation
import HaulCore
import HaulEngine
import HaulTestSupport
import Synchronization
import Testing

@testable import Haul

/// A transport that plays a script of responses, one per request, with no network at all.
final class ScriptedTransport: HTTPTransport {
    struct Step: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        /// Fail with this after the body (a dropped connection).
        var failure: TransportError?
    }

    private let steps: Mutex<[Step]>
    private let seen = Mutex<[TransferRequest]>([])

    init(_ steps: [Step]) {
        self.steps = Mutex(steps)
    }

    var requests: [TransferRequest] { seen.withLock { $0 } }

    func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome {
        seen.withLock { $0.append(request) }
        guard let step = steps.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
            return .failed(TransportError(.connect, "script exhausted"))
        }
        guard handler.transferDidReceiveHead(ResponseHead(status: step.status, headers: HTTPHeaders(step.headers))) == .proceed else {
            return .stoppedByHandler
        }
        var offset = 0
        while offset < step.body.count {
            let end = min(step.body.count, offset + 1000)
            let control = step.body[offset..<end].withUnsafeBytes { handler.transferDidReceiveBody($0) }
            if control == .stop { return .stoppedByHandler }
            offset = end
        }
        if let failure = step.failure { return .failed(failure) }
        return .completed
    }
}

@Suite("Download logic over a scripted transport (no network)")
struct ScriptedTransportTests {
    let content = TestData.bytes(count: 10_000, seed: 7)
    let url = URL(string: "http://scripted.test/file.bin")!

    func events(of download: Download) async -> [DownloadEvent] {
        var all: [DownloadEvent] = []
        for await event in download.events { all.append(event) }
        return all
    }

    @Test func droppedTransferResumesWithRangeAndIfRange() async throws {
        // GIVEN a server that drops after 4000 bytes, then answers the resume with a 206
        let directory = try TemporaryDirectory()
        let destination = directory.file("out.bin")
        let transport = ScriptedTransport([
            .init(
                status: 200, headers: [("Content-Length", "10000"), ("ETag", "\"abc\""), ("Accept-Ranges", "bytes")],
                body: Array(content[0..<4000]), failure: TransportError(.connectionLost, "connection reset")),
            .init(
                status: 206, headers: [("Content-Range", "bytes 4000-9999/10000"), ("Content-Length", "6000"), ("ETag", "\"abc\"")],
                body: Array(content[4000...])),
        ])
        var request = DownloadRequest(url: url, destination: .file(destination))
        request.retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, maxDelay: 0.01)
        request.progressInterval = 0

        // WHEN it runs to the end
        let download = Downloader(transport: transport).download(request)
        let seen = await events(of: download)

        // THEN the second request resumes exactly where the first stopped, guarded by the ETag
        let requests = transport.requests
        #expect(requests.count == 2)
        #expect(requests[0].headers["Range"] == nil)
        #expect(requests[1].headers["Range"] == "bytes=4000-")
        #expect(requests[1].headers["If-Range"] == "\"abc\"")
        #expect(requests[1].headers["Accept-Encoding"] == "identity")
        // AND the file is bit-exact, with nothing left beside it
        #expect(FileManager.default.contents(atPath: destination).map(Array.init) == content)
        #expect(!FileManager.default.fileExists(atPath: destination + ".haul-partial"))
        #expect(!FileManager.default.fileExists(atPath: destination + ".haul-resume"))
        // AND the events tell the story in order
        let kinds = seen.map(\.kindName)
        #expect(kinds.first == "started")
        #expect(kinds.last == "completed")
        #expect(kinds.filter { $0 == "response" }.count == 2)
        #expect(kinds.contains("retrying"))
        let progressBytes = seen.compactMap { event -> Int64? in
            if case .progress(let progress) = event { return progress.bytes }
            return nil
        }
        #expect(progressBytes == progressBytes.sorted())
        #expect(progressBytes.last == 10_000)
        guard case .response(let second) = seen.filter({ $0.kindName == "response" }).last else {
            Issue.record("no second response")
            return
        }
        #expect(second.resumedFrom == 4000)
        #expect(second.totalBytes == 10_000)
    }

    @Test func okAfterResumeRestartsAndNeverSplices() async throws {
        // GIVEN a drop after 4000 bytes, then a server that answers the resume with a NEW version (200)
        let directory = try TemporaryDirectory()
        let destination = directory.file("out.bin")
        let newContent = TestData.bytes(count: 9_000, seed: 8)
        let transport = ScriptedTransport([
            .init(
                status: 200, headers: [("Content-Length", "10000"), ("ETag", "\"v1\"")],
                body: Array(content[0..<4000]), failure: TransportError(.connectionLost, "reset")),
            .init(status: 200, headers: [("Content-Length", "9000"), ("ETag", "\"v2\"")], body: newContent),
        ])
        var request = DownloadRequest(url: url, destination: .file(destination))
        request.retry = RetryPolicy(maxRetries: 2, baseDelay: 0.01, maxDelay: 0.01)

        // WHEN it runs
        let seen = await events(of: Downloader(transport: transport).download(request))

        // THEN the file is wholly the new version and a restart was reported as a change
        #expect(FileManager.default.contents(atPath: destination).map(Array.init) == newContent)
        let reasons = seen.compactMap { event -> RestartReason.Code? in
            if case .restarted(let reason) = event { return reason.code }
            return nil
        }
        #expect(reasons == [.resourceChanged])
    }

    @Test func errorStatusBodyIsNeverWritten() async throws {
        // GIVEN a 404 with an HTML body
        let directory = try TemporaryDirectory()
        let destination = directory.file("out.bin")
        let transport = ScriptedTransport([
            .init(status: 404, headers: [("Content-Length", "9")], body: Array("not found".utf8))
        ])
        // WHEN downloading
        let download = Downloader(transport: transport).download(DownloadRequest(url: url, destination: .file(destination)))
        // THEN the error carries the status and no file of any kind is left
        await #expect(throws: DownloadError.self) { try await download.result() }
        do {
            _ = try await download.result()
        } catch {
            #expect(error.category == .httpStatus)
            #expect(error.httpStatus == 404)
        }
        #expect(!FileManager.default.fileExists(atPath: destination))
        #expect(!FileManager.default.fileExists(atPath: destination + ".haul-partial"))
        #expect(!FileManager.default.fileExists(atPath: destination + ".haul-resume"))
    }
}
