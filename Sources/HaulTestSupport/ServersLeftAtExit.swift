import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The servers a test process started and has not stopped yet, stopped when the process exits.
/// A fixture's `deinit` stops its server, but a test that overran its time limit is abandoned
/// while it still holds its fixture: without this, its nginx would outlive the test run (its
/// parent gone, it is adopted by init and keeps its port). Only the PIDs this process started
/// are signalled.
package enum ServersLeftAtExit {
    /// Stops a server: called with the process exiting.
    package typealias Stop = @Sendable () -> Void

    private static let servers = Mutex<[Int32: Stop]>([:])
    /// Installed once, on first use (a static's initializer runs once, whatever the thread).
    private static let exitHook: Void = { atexit { ServersLeftAtExit.stopAll() } }()

    /// `stop` ends the server of `pid` if the process exits before `forget(pid)`.
    package static func note(_ pid: Int32, stop: @escaping Stop) {
        exitHook
        servers.withLock { $0[pid] = stop }
    }

    /// The server of `pid` was stopped by its owner.
    package static func forget(_ pid: Int32) {
        _ = servers.withLock { $0.removeValue(forKey: pid) }
    }

    /// Whether the server of `pid` would be stopped at exit.
    package static func isNoted(_ pid: Int32) -> Bool {
        servers.withLock { $0[pid] != nil }
    }

    /// Stops the server of `pid` as the exit hook would, if it is still noted.
    package static func stopNoted(_ pid: Int32) {
        servers.withLock { $0.removeValue(forKey: pid) }?()
    }

    /// Stops every server still noted (what the exit hook does).
    static func stopAll() {
        let left = servers.withLock { servers in
            defer { servers.removeAll() }
            return Array(servers.values)
        }
        for stop in left { stop() }
    }
}
