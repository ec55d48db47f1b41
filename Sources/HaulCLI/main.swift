import Dispatch
import Foundation
import Haul

/// The `haul` command: parse, start one download, show its events, exit with its code.
func runCommand() async -> ExitCode {
    let arguments = Array(CommandLine.arguments.dropFirst())
    let parser = ArgumentParser(specs: CommandOptions.specs)
    let options: CommandOptions
    do throws(UsageError) {
        let parsed = try parser.parse(arguments)
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
    if !options.request.transfer.verifyTLS && options.mode != .quiet {
        presenter.error("warning: --insecure: TLS certificates and host names are NOT verified")
    }
    let download = Downloader().download(options.request)
    let signals = SignalWatcher { signal in
        // Stop at a checkpoint; the next run resumes.
        download.pause()
        _ = signal
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

/// Turns SIGINT and SIGTERM into a callback instead of death, so the download can checkpoint.
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
