import Foundation

/// A thread with a stack of a chosen size that can be waited for.
final class JoinableThread: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    init(name: String, stackBytes: Int, _ body: @escaping @Sendable () -> Void) {
        let finished = self.finished
        let thread = Thread {
            body()
            finished.signal()
        }
        thread.name = name
        thread.stackSize = stackBytes
        thread.start()
    }

    /// Waits until its body returned. Call once.
    func join() {
        finished.wait()
    }
}

/// The threads that run request handlers (JSON-RPC calls may be slow: the store, the disk), so
/// the event loop never does. Each has a stack of its own size (a deep request cannot overflow
/// a small one). Jobs run in the order given within their lane, and a worker takes the first
/// lane's before the second's: `.first` for HTTP requests and streams, and for the messages of a
/// WebSocket that proved the token; `.later` for the messages of one that has not (which never
/// delay a client that did: 48 such sockets sending batches of 1,000 open calls held a call with
/// the token for seconds behind them). Each job is released as soon as a worker takes it (its
/// captures, a request's head and body, go when it returns, not when the queue next runs empty:
/// under steady load it never does).
///
/// `@unchecked Sendable`: `lanes` and `stopping` are guarded by `condition`.
final class WorkerPool: @unchecked Sendable {
    typealias Job = @Sendable () -> Void

    /// Which jobs a worker takes first.
    enum Lane: Int, CaseIterable { case first, later }

    private let condition = NSCondition()
    private var lanes = [JobQueue](repeating: JobQueue(), count: Lane.allCases.count)
    private var stopping = false
    private var threads: [JoinableThread] = []
    /// Marks this pool's threads (in their thread dictionary), so `stop()` from one of them does
    /// not wait for itself.
    private let marker: String

    init(count: Int, stackBytes: Int) {
        marker = "haul.workers.\(UUID().uuidString)"
        threads = (0..<max(1, count)).map { index in
            JoinableThread(name: "haul-serve-worker-\(index)", stackBytes: stackBytes) { [self] in run(index) }
        }
    }

    /// Queues `job` in `lane`; false (and not queued) once the pool is stopping.
    @discardableResult
    func submit(_ lane: Lane = .first, _ job: @escaping Job) -> Bool {
        condition.withLock {
            guard !stopping else { return false }
            lanes[lane.rawValue].append(job)
            condition.signal()
            return true
        }
    }

    /// Takes no more jobs, drops the queued ones, and waits for the running ones to return.
    func stop() {
        let waitFor: [JoinableThread] = condition.withLock {
            guard !stopping else { return [] }
            stopping = true
            lanes = [JobQueue](repeating: JobQueue(), count: Lane.allCases.count)
            condition.broadcast()
            return threads
        }
        // A worker that stops the pool (a handler that stops the server) cannot wait for itself.
        let current = Thread.current.threadDictionary[marker] as? Int
        for (index, thread) in waitFor.enumerated() where index != current { thread.join() }
    }

    private func run(_ index: Int) {
        Thread.current.threadDictionary[marker] = index
        while let job = take() { job() }
    }

    private func take() -> Job? {
        condition.withLock {
            while true {
                guard !stopping else { return nil }
                for lane in lanes.indices {
                    if let job = lanes[lane].take() { return job }
                }
                condition.wait()
            }
        }
    }
}

/// One lane's jobs in order: the slots before `next` are taken (nil), and compacted once half
/// the array is taken slots.
private struct JobQueue {
    private var jobs: [WorkerPool.Job?] = []
    private var next = 0

    mutating func append(_ job: @escaping WorkerPool.Job) {
        jobs.append(job)
    }

    mutating func take() -> WorkerPool.Job? {
        guard next < jobs.count else { return nil }
        let job = jobs[next]
        jobs[next] = nil
        next += 1
        if next == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            next = 0
        } else if next >= 64, next * 2 >= jobs.count {
            jobs.removeFirst(next)
            next = 0
        }
        return job
    }
}
