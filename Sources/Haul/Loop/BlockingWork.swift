import Foundation
import HaulStore
import Synchronization

/// Where a download's blocking steps run (opening and syncing files, committing to the store):
/// a small fixed pool of threads, so that no thread of Swift's cooperative pool (one per core)
/// waits for a disk or a database, and no download needs a thread of its own. Work that waits for
/// a long time (a shared store's wait for work) gets a thread of its own instead (`onThread`), so
/// it never holds a pool thread.
enum BlockingWork {
    /// Threads in the pool at most: enough for a batch's claims, opens and finish groups to
    /// overlap. Measured on 1,000 files of 64 KiB, alternated: 3 and 4 run `-j 8` alike and 3 is
    /// about 4% slower at `-j 64` (medians 0.97 and 0.93 s of 7 runs), with a process of 8
    /// threads instead of 9; 2 made such a batch 17% slower (before finish groups). Started only
    /// as jobs overlap (`WorkerPool`).
    static let width = 3

    /// Runs `body` on a pool thread; the task is suspended until it returns. `body` may touch
    /// state of the calling task: that task does nothing else meanwhile.
    static func run<T>(_ body: () -> T) async -> T {
        await withoutActuallyEscaping(body) { escaping in
            let work = Borrowed(escaping)
            return await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
                let done = Unchecked(continuation)
                pool.submit {
                    let value = work.take()()
                    done.value.resume(returning: value)
                }
            }
        }
    }

    /// Runs `job` on a pool thread, without waiting for it.
    static func submit(_ job: @escaping @Sendable () -> Void) {
        pool.submit(job)
    }

    // The two throwing forms are written for their error types: the compiler (6.3) crashes
    // emitting a specialization of one generic over the error type.

    /// `run` for a step of a download that fails with its error.
    static func step<T>(_ body: () throws(DownloadError) -> T) async throws(DownloadError) -> T {
        let result = await run { () -> Result<T, DownloadError> in
            do throws(DownloadError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// `run` for a call to the store, which fails with the store's error.
    static func storeCall<T>(_ body: () throws(StoreError) -> T) async throws(StoreError) -> T {
        let result = await run { () -> Result<T, StoreError> in
            do throws(StoreError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Runs `body` on a thread of its own (a wait that may last, which must not hold a pool thread).
    static func onThread<T>(name: String, _ body: () -> T) async -> T {
        await withoutActuallyEscaping(body) { escaping in
            let work = Borrowed(escaping)
            return await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
                let done = Unchecked(continuation)
                let thread = Thread {
                    done.value.resume(returning: work.take()())
                }
                thread.name = name
                thread.stackSize = 1 << 20
                thread.start()
            }
        }
    }

    private static let pool = WorkerPool(width: width)
}

/// A closure lent to another thread while its owner waits: taken out once, so no reference to it
/// is left once it has run (the owner's `withoutActuallyEscaping` checks that none is).
private final class Borrowed<Body>: @unchecked Sendable {
    private var body: Body?
    init(_ body: Body) { self.body = body }

    /// The closure, no longer held here; called once.
    func take() -> Body {
        defer { body = nil }
        guard let body else { preconditionFailure("a lent closure was taken twice") }
        return body
    }
}

/// A value handed to another thread while its owner waits for that thread to finish with it.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Up to `width` threads taking jobs from one queue, each started only when a job finds every
/// thread so far busy: a process whose blocking steps never overlap (one download, even over 16
/// connections) keeps one or two, a batch whose files finish together grows to `width`.
private final class WorkerPool: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var threads = 0
        /// Threads waiting for a job (or about to).
        var idle = 0
    }

    private let width: Int
    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)

    init(width: Int) {
        self.width = width
    }

    func submit(_ job: @escaping @Sendable () -> Void) {
        let started = state.withLock { state -> Int? in
            state.jobs.append(job)
            guard state.jobs.count > state.idle, state.threads < width else { return nil }
            state.threads += 1
            return state.threads
        }
        if let started { startThread(index: started) }
        // One signal per job: each wake-up takes exactly one.
        ready.signal()
    }

    private func startThread(index: Int) {
        let thread = Thread { [self] in
            while true {
                state.withLock { $0.idle += 1 }
                ready.wait()
                let job = state.withLock { state -> (@Sendable () -> Void)? in
                    state.idle -= 1
                    return state.jobs.isEmpty ? nil : state.jobs.removeFirst()
                }
                job?()
            }
        }
        thread.name = "haul-blocking-\(index)"
        thread.stackSize = 1 << 20
        thread.start()
    }
}
