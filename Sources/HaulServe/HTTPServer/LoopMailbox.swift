import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A connection's number for its whole life (descriptors are reused; these are not), so an
/// answer for a connection that has gone in the meantime is dropped, never sent to another.
typealias ConnectionID = UInt64

/// What other threads hand the event loop: workers' answers, notifications to broadcast, the
/// request to stop. Posting never blocks: a letter is queued and the loop woken through a pipe
/// (one byte per wake-up, however many letters wait).
///
/// `@unchecked Sendable`: every field but the pipe's ends (set in `init`) is guarded by `lock`;
/// the write end is written to and closed only under it, so no wake-up reaches a reused
/// descriptor after `close()`.
final class LoopMailbox: @unchecked Sendable {
    enum Letter: Sendable {
        /// An HTTP response, serialized, and whether the connection stays open after it.
        case response(ConnectionID, Data, keepAlive: Bool)
        /// A WebSocket handler returned: the frame to send (if any) and whether the message
        /// carried the token.
        case webSocketReply(ConnectionID, Data?, authenticated: Bool)
        /// A frame for every WebSocket that receives broadcasts.
        case broadcast(Data)
        /// A worker's answer to a streamed request (`HTTPRoute.stream`).
        case streamed(ConnectionID, HTTPStreamReply, head: HTTPRequestHead, keepAlive: Bool)
        /// An event for every open event stream.
        case event(StreamEvent)
    }

    private let lock = NSLock()
    private var letters: [Letter] = []
    /// The loop is in (or about to enter) poll(2) with no letter waiting: the next letter must
    /// wake it. While it is awake it takes the letters without a wake-up, so a burst of posts
    /// costs one write to the pipe, not one each.
    private var loopSleeps = false
    private var wakePending = false
    private var stopRequested = false
    private var closed = false
    /// The end the loop polls.
    let wakeDescriptor: Int32
    private let writeDescriptor: Int32

    init() throws(ServeError) {
        guard let (read, write) = Socket.pipe() else { throw ServeError("cannot start the server: no pipe (\(String(cString: strerror(errno))))") }
        wakeDescriptor = read
        writeDescriptor = write
    }

    func post(_ letter: Letter) {
        lock.withLock {
            guard !closed, !stopRequested else { return }
            letters.append(letter)
            wakeLocked()
        }
    }

    /// Asks the loop to end (after it handled the letters already posted).
    func requestStop() {
        lock.withLock {
            stopRequested = true
            wakeLocked()
        }
    }

    /// Called by the loop before it polls: false when letters (or a stop) wait, so it should
    /// not sleep; else from now on a letter wakes it.
    func willSleep() -> Bool {
        lock.withLock {
            guard letters.isEmpty, !stopRequested else { return false }
            loopSleeps = true
            return true
        }
    }

    /// The letters posted since the last call, and whether the loop is to stop. Loop thread,
    /// after every poll(2).
    func take() -> (letters: [Letter], stop: Bool) {
        let woken: Bool = lock.withLock {
            loopSleeps = false
            defer { wakePending = false }
            return wakePending
        }
        if woken {
            var sink = [UInt8](repeating: 0, count: 64)
            while read(wakeDescriptor, &sink, sink.count) > 0 {}
        }
        return lock.withLock {
            let taken = letters
            letters = []
            return (taken, stopRequested)
        }
    }

    /// Closes the pipe; later letters are dropped.
    func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            letters = []
            _ = systemClose(writeDescriptor)
            _ = systemClose(wakeDescriptor)
        }
    }

    private func wakeLocked() {
        guard loopSleeps, !wakePending else { return }
        wakePending = true
        var byte: UInt8 = 1
        _ = write(writeDescriptor, &byte, 1)
    }
}

/// `close(2)`, out of reach of the types that have a `close()` of their own.
func systemClose(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
        return Glibc.close(fd)
    #else
        return Darwin.close(fd)
    #endif
}
