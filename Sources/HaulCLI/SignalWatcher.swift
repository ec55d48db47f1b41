import Dispatch
import Foundation

/// Turns SIGINT and SIGTERM into a callback instead of death, so downloads can checkpoint.
/// `@unchecked Sendable`: `sources` is set once in init and never changed; dispatch sources are
/// thread-safe, and `last` is behind a lock.
final class SignalWatcher: @unchecked Sendable {
    private let sources: [DispatchSourceSignal]
    private let last = LockedValue<Int32>(0)

    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        // On a global queue's threads, not an overcommit one: the handler is short, and
        // the sources' cancellation at exit starts no thread of its own (a batch's last moment had
        // 11 threads, now 9).
        let queue = DispatchQueue(label: "haul.signals", target: .global(qos: .utility))
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
