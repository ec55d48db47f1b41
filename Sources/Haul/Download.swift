import Foundation
import HaulEngine
import Synchronization

/// One running download: observe it through `events`, await `result()`, control it with
/// `pause()`, `resume()` and `cancel(deletingPartial:)`.
public final class Download: Sendable {
    public let id: UUID
    public let request: DownloadRequest
    private let hub = EventHub()
    private let control = RunControl()
    private let transport: any HTTPTransport
    /// Whether a runner thread is active; `resume()` starts one only when none is.
    private let running = Mutex(false)

    init(request: DownloadRequest, transport: any HTTPTransport) {
        self.id = UUID()
        self.request = request
        self.transport = transport
    }

    /// A new stream of this download's events. It first replays the current state, then follows
    /// live, and finishes after the terminal event. Any number of streams may be open.
    public var events: AsyncStream<DownloadEvent> {
        hub.subscribe()
    }

    /// Waits for the end: the completion, or the error (`.cancelled` for a cancellation).
    public func result() async throws(DownloadError) -> DownloadCompletion {
        for await event in events {
            switch event {
            case .completed(let completion): return completion
            case .failed(let error): throw error
            case .cancelled: throw DownloadError(.cancelled, "the download was cancelled")
            default: continue
            }
        }
        throw DownloadError(.cancelled, "the download ended without a result")
    }

    /// Stops the transfer after a durable checkpoint; the partial file and its record stay for
    /// `resume()` or a later run. A `.paused` event follows.
    public func pause() {
        control.request(.pause)
    }

    /// Continues a paused download from the bytes on disk.
    public func resume() {
        start()
    }

    /// Stops the download for good. With `deletingPartial`, the partial file and its record are removed.
    public func cancel(deletingPartial: Bool = false) {
        let wasRunning = running.withLock { $0 }
        control.request(deletingPartial ? .cancelAndDelete : .cancel)
        if !wasRunning {
            // Nothing is running to notice the request: finish here.
            startRunner()
        }
    }

    func start() {
        startRunner()
    }

    private func startRunner() {
        let shouldStart = running.withLock { isRunning -> Bool in
            if isRunning { return false }
            isRunning = true
            return true
        }
        guard shouldStart else { return }
        control.clearPause()
        let thread = Thread { [self] in
            DownloadRunner(request: request, transport: transport, hub: hub, control: control).run()
            running.withLock { $0 = false }
        }
        thread.name = "haul-download"
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Starts downloads. Nothing is logged; everything a download does is in its events.
public struct Downloader: Sendable {
    private let transport: any HTTPTransport

    /// A downloader on libcurl.
    public init() {
        self.transport = CurlTransport()
    }

    /// A downloader on another transport (tests use fakes).
    public init(transport: any HTTPTransport) {
        self.transport = transport
    }

    /// Starts a download and returns at once; follow it through `events` or `result()`.
    public func download(_ request: DownloadRequest) -> Download {
        let download = Download(request: request, transport: transport)
        download.start()
        return download
    }
}
