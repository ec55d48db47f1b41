import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The transport's event loop thread, which every transfer of the process shares: nothing that
/// may block (a store call, a sync, opening a file) may run on it, or one slow disk or database
/// holds up every transfer. The loop marks itself; the blocking calls ask `mustNotBlock` first,
/// and in debug builds a call on the loop is reported (the process stops, naming the call), so a
/// change that puts one there fails the tests. Release builds only keep the mark.
package enum LoopThread {
    /// The marked threads (the loop's; tests mark their own), by `pthread_t` as a number.
    private static let marked = Mutex<Set<UInt>>([])
    /// What a debug build does with a blocking call on the loop; tests replace it to observe.
    private static let onViolation = Mutex<(@Sendable (String) -> Void)?>(nil)

    private static var currentID: UInt {
        #if canImport(Glibc)
            UInt(pthread_self())
        #else
            UInt(bitPattern: pthread_self())
        #endif
    }

    /// The calling thread is an event loop's.
    package static func markCurrent() {
        let id = currentID
        _ = marked.withLock { $0.insert(id) }
    }

    /// The calling thread is no longer an event loop's (tests).
    package static func unmarkCurrent() {
        let id = currentID
        _ = marked.withLock { $0.remove(id) }
    }

    /// Whether the calling thread is an event loop's.
    package static var isCurrent: Bool {
        let id = currentID
        return marked.withLock { $0.contains(id) }
    }

    /// Says that `call` may block: in a debug build, reached on the loop's thread, it is reported.
    @inlinable
    package static func mustNotBlock(_ call: @autoclosure () -> String) {
        #if DEBUG
            if isCurrent { violated(call()) }
        #endif
    }

    /// Reports a blocking call on the loop: to the handler a test set, else by stopping the process.
    package static func violated(_ call: String) {
        if let handler = onViolation.withLock({ $0 }) {
            handler(call)
            return
        }
        let message = "haul: internal error: \(call) ran on the event loop's thread, where it holds up every transfer\n"
        FileHandle.standardError.write(Data(message.utf8))
        abort()
    }

    /// Tests: reports violations to `handler` instead of stopping (nil: stop again).
    package static func reportViolations(to handler: (@Sendable (String) -> Void)?) {
        onViolation.withLock { $0 = handler }
    }
}
