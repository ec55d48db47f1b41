import Foundation
import Synchronization

/// The clock the runs' reporters look at their figures by while their connections fetch: one
/// task for the whole process, ticking every `tick` seconds while anything is registered, and
/// gone when nothing is. A task per attempt cost three thread wake-ups (its start, its first
/// sleep, its cancellation) of a small file's nine, measured with `strace -f -k`; a registration
/// costs a lock.
final class FiguresTicker: Sendable {
    /// The one ticker of the process.
    static let shared = FiguresTicker()

    /// Seconds between two looks: a report is at most this late after it is due.
    static let tick = 0.05

    /// One registered look: `stop` waits for a look under way and lets no other begin, so once it
    /// returns, nothing more is published for it.
    final class Registration: Sendable {
        private let ticker: FiguresTicker
        fileprivate let id: UInt64
        private let look: Mutex<(@Sendable () -> Void)?>

        fileprivate init(ticker: FiguresTicker, id: UInt64, look: @escaping @Sendable () -> Void) {
            self.ticker = ticker
            self.id = id
            self.look = Mutex(look)
        }

        fileprivate func fire() {
            look.withLock { $0?() }
        }

        /// Ends the looks; safe to call again.
        func stop() {
            ticker.remove(id)
            look.withLock { $0 = nil }
        }
    }

    private struct State {
        var registered: [UInt64: Registration] = [:]
        var nextID: UInt64 = 0
        /// Whether the ticking task runs (it ends at the first tick that finds nothing registered).
        var ticking = false
    }

    private let state = Mutex(State())

    /// Calls `look` every tick, from the ticker's task, until the registration is stopped.
    func register(_ look: @escaping @Sendable () -> Void) -> Registration {
        let (registration, start) = state.withLock { state -> (Registration, Bool) in
            state.nextID += 1
            let registration = Registration(ticker: self, id: state.nextID, look: look)
            state.registered[state.nextID] = registration
            defer { state.ticking = true }
            return (registration, !state.ticking)
        }
        if start { Task.detached { [self] in await ticks() } }
        return registration
    }

    /// How many looks are registered (for tests).
    var registeredCount: Int { state.withLock { $0.registered.count } }

    private func remove(_ id: UInt64) {
        _ = state.withLock { $0.registered.removeValue(forKey: id) }
    }

    private func ticks() async {
        while true {
            try? await Task.sleep(for: .seconds(Self.tick))
            let due = state.withLock { state -> [Registration]? in
                guard !state.registered.isEmpty else {
                    state.ticking = false
                    return nil
                }
                return Array(state.registered.values)
            }
            guard let due else { return }
            for registration in due { registration.fire() }
        }
    }
}
