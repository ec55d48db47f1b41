import Foundation
import HaulEngine
import Synchronization

/// One running download: observe it through `events`, await `result()`, control it with
/// `pause()`, `resume()` and `cancel(deletingPartial:)`.
public final class Download: Sendable {
    /// Identifies this download in this process; not stored, so the same request started again gets another.
    public let id: UUID
    /// The request it was started with.
    public let request: DownloadRequest
    let hub = EventHub()
    private let control = RunControl()
    private let transport: any HTTPTransport
    /// Whether a runner thread is active, and whether a resume arrived while it was winding down.
    private let runner = Mutex(RunnerState())

    private struct RunnerState {
        var isRunning = false
        var resumeRequested = false
    }

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
        let startNow = runner.withLock { state -> Bool in
            if state.isRunning {
                // The runner may be pausing right now: it will see this and run again.
                state.resumeRequested = true
                control.clearPause()
                return false
            }
            state.isRunning = true
            return true
        }
        if startNow { launch() }
    }

    /// Stops the download for good. With `deletingPartial`, the partial file and its record are removed.
    public func cancel(deletingPartial: Bool = false) {
        control.request(deletingPartial ? .cancelAndDelete : .cancel)
        let startNow = runner.withLock { state -> Bool in
            state.resumeRequested = false
            if state.isRunning { return false }
            // Nothing is running to notice the request: a runner finishes it.
            state.isRunning = true
            return true
        }
        if startNow { launch() }
    }

    func start() {
        resume()
    }

    private func launch() {
        control.clearPause()
        // A task, not a thread: the transfer waits on the transport's event loop.
        Task { [self] in
            while true {
                let ending = await DownloadRunner(request: request, transport: transport, hub: hub, control: control).run()
                let again = runner.withLock { state -> Bool in
                    if ending == .paused && state.resumeRequested {
                        state.resumeRequested = false
                        return true
                    }
                    state.isRunning = false
                    state.resumeRequested = false
                    return false
                }
                if !again { return }
                control.clearPause()
            }
        }
    }
}

/// Starts downloads. Nothing is logged; everything a download does is in its events.
public struct Downloader: Sendable {
    private let transport: any HTTPTransport

    /// A downloader on the platform's default engine (libcurl on Linux, URLSession on Apple platforms).
    public init() {
        self.transport = TransportEngine.platformDefault.makeTransport() ?? URLSessionTransport()
    }

    /// A downloader on the chosen engine; fails with `.engine` where this build does not have it.
    public init(engine: TransportEngine) throws(DownloadError) {
        self.transport = try engine.transportOrError()
    }

    /// A downloader on another transport (tests use fakes).
    package init(transport: any HTTPTransport) {
        self.transport = transport
    }

    /// Starts a download and returns at once; follow it through `events` or `result()`.
    public func download(_ request: DownloadRequest) -> Download {
        let download = Download(request: request, transport: transport)
        download.start()
        return download
    }
}

extension TransportEngine {
    /// A new transport of this engine, or the `.engine` error that says this build lacks it.
    func transportOrError() throws(DownloadError) -> any HTTPTransport {
        guard let transport = makeTransport() else {
            let available = Self.available.map(\.rawValue).joined(separator: ", ")
            throw DownloadError(.engine, "the \(rawValue) engine is not part of this build (available: \(available))")
        }
        return transport
    }
}
