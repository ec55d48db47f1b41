import Dispatch
import Foundation
import Synchronization

extension DownloadRunner {
    /// The result of an async hook (the URL refresher), waited for on the download's own thread:
    /// the hook runs as a task of its own (on the main actor when it is isolated there), and no
    /// thread of the cooperative pool waits for it.
    static func awaited(_ body: @escaping @Sendable () async -> URL?) -> URL? {
        let result = Mutex<URL?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }
}
