import Dispatch
import Foundation
import Haul

/// The `haul` command: parse, run a single download, a batch or a queue command, exit with its code.
func runCommand() async -> ExitCode {
    let arguments = Array(CommandLine.arguments.dropFirst())
    if arguments.first == "queue" {
        return await QueueCommand.run(Array(arguments.dropFirst()))
    }
    let options: CommandOptions
    do throws(UsageError) {
        let parsed = try ArgumentParser(specs: CommandOptions.specs).parse(arguments)
        if parsed.flag("help") {
            print(CommandOptions.usage)
            return .success
        }
        if parsed.flag("version") {
            print("haul \(HaulVersion.current)")
            return .success
        }
        options = try CommandOptions(parsed)
    } catch {
        Presenter(mode: .normal).error("\(error.message)\nTry 'haul --help' for more information.")
        return .usage
    }
    let presenter = Presenter(mode: options.mode)
    if !options.requestOptions.transfer.verifyTLS && options.mode != .quiet {
        presenter.error("warning: --insecure: TLS certificates and host names are NOT verified")
    }
    switch options.work {
    case .single(let request):
        return await runSingle(request, presenter)
    case .batch(let requests, let problems, let jobs):
        return await BatchCommand(
            requests: requests, problems: problems, jobs: jobs, options: options.requestOptions,
            stateDirectory: options.stateDirectory, presenter: presenter
        ).run()
    }
}

/// One download with its record beside the partial file; no queue involved.
func runSingle(_ request: DownloadRequest, _ presenter: Presenter) async -> ExitCode {
    let download = Downloader().download(request)
    let signals = SignalWatcher { _ in
        // Stop at a checkpoint; the next run resumes.
        download.pause()
    }
    for await event in download.events {
        presenter.show(event)
        switch event {
        case .completed:
            return .success
        case .failed(let error):
            return ExitCode(error)
        case .cancelled:
            return .failure
        case .paused:
            return signals.received == SIGTERM ? .terminated : .interrupted
        default:
            continue
        }
    }
    return .failure
}

/// Turns SIGINT and SIGTERM into a callback instead of death, so downloads can checkpoint.
/// `@unchecked Sendable`: `sources` is set once in init and never changed; dispatch sources are
/// thread-safe, and `last` is behind a lock.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]
    private let last = LockedValue<Int32>(0)

    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "haul.signals")
        var sources: [DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            sources.append(source)
        }
        self.sources = sources
        for (source, number) in zip(sources, [SIGINT, SIGTERM]) {
            source.setEventHandler { [last] in
                last.set(number)
                handler(number)
            }
            source.resume()
        }
    }

    var received: Int32 { last.get() }

    /// The exit code for the signal received, if any.
    var exitCode: ExitCode? {
        switch received {
        case SIGINT: return .interrupted
        case SIGTERM: return .terminated
        default: return nil
        }
    }
}

/// A value behind a lock, for the signal handler's queue and the main flow.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
}

exit(await runCommand().rawValue)
