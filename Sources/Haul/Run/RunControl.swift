import Foundation
import HaulCore
import Synchronization

/// Requests from the API to a running download: pause, cancel. Looked at by its transfers (woken
/// by an observer, `observe`), and ends at once a wait of its tasks before a retry (`pause`).
final class RunControl: Sendable {
    enum Request: Int, Sendable {
        case none = 0
        case pause = 1
        case cancel = 2
        case cancelAndDelete = 3
    }

    private let value = Atomic<Int>(0)
    /// Ends a task's wait before a retry at once when a request arrives.
    private let signal = AsyncSignal()
    /// Told of every request (a segmented download's waits end at once).
    private let observers = Mutex<(next: Int, all: [Int: @Sendable () -> Void])>((0, [:]))

    func request(_ request: Request) {
        // A cancellation overrides a pause, never the other way round.
        var current = value.load(ordering: .acquiring)
        while request.rawValue > current {
            let (exchanged, original) = value.compareExchange(expected: current, desired: request.rawValue, ordering: .acquiringAndReleasing)
            if exchanged { break }
            current = original
        }
        signal.notify()
        for observer in observers.withLock({ Array($0.all.values) }) { observer() }
    }

    /// Calls `observer` on every request from now on, until `stopObserving` with the returned token.
    func observe(_ observer: @escaping @Sendable () -> Void) -> Int {
        observers.withLock { state in
            state.next += 1
            state.all[state.next] = observer
            return state.next
        }
    }

    /// Ends an observation `observe` began.
    func stopObserving(_ token: Int) {
        _ = observers.withLock { $0.all.removeValue(forKey: token) }
    }

    func clearPause() {
        _ = value.compareExchange(expected: Request.pause.rawValue, desired: Request.none.rawValue, ordering: .acquiringAndReleasing)
    }

    var current: Request {
        Request(rawValue: value.load(ordering: .acquiring)) ?? .none
    }

    var shouldStop: Bool { current != .none }

    /// The stop asked for, as the download's state machine knows it; nil while none is.
    var stopRequest: DownloadMachine.Stop? {
        switch current {
        case .none: return nil
        case .pause: return .pause
        case .cancel: return .cancel
        case .cancelAndDelete: return .cancelAndDelete
        }
    }

    /// Waits up to `seconds` without holding a thread, ending early when a request arrives.
    func pause(seconds: Double) async {
        await signal.wait(seconds: seconds) { [self] in shouldStop }
    }
}
