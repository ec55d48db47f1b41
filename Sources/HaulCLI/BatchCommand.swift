import Foundation
import Haul
import HaulCore
import HaulEngine

/// `haul URL URL ...` and `haul -i FILE`: the downloads go into the queue store and this process
/// runs them, `-j` at a time. An interrupted batch continues when the same command runs again
/// (or with `haul queue run`).
struct BatchCommand {
    let requests: [DownloadRequest]
    let problems: [String]
    let runOptions: QueueRunOptions
    /// `--max-per-host`: at most this many of the batch's downloads of one host at once.
    let maxPerHost: Int?
    let store: StoreOptions
    let engine: TransportEngine
    let presenter: Presenter

    func run() async -> ExitCode {
        for problem in problems {
            presenter.error("\(problem) (skipped)")
        }
        let queue: DownloadQueue
        do throws(DownloadError) {
            queue = try DownloadQueue(store: store.location, engine: engine)
        } catch {
            presenter.error(error.shown)
            return ExitCode(error)
        }
        let batch: Enqueued
        do throws(DownloadError) {
            batch = try enqueue(queue)
        } catch {
            presenter.error(error.shown)
            return ExitCode(error)
        }
        for done in batch.alreadyDone where presenter.mode == .normal {
            presenter.error("#\(done.id) \(done.finalPath ?? done.destination) is already complete (skipped)")
        }
        let clean = problems.isEmpty && batch.duplicates == 0
        let skipped = batch.alreadyDone.count
        guard !batch.ids.isEmpty else {
            // Nothing to run, but the summary still covers every file asked for.
            presenter.finishAggregate(QueueRunSummary(), total: skipped, skipped: skipped)
            return clean ? .success : .usage
        }
        let signals = SignalWatcher { _ in queue.stopAll() }
        let runOptions = self.runOptions
        let ids = batch.ids
        let maxPerHost = self.maxPerHost
        let summary = await QueueRunView(queue: queue, presenter: presenter, total: ids.count, skipped: skipped).run {
            await queue.run(runOptions, only: Set(ids), maxPerHost: maxPerHost)
        }
        if let interrupted = signals.exitCode { return interrupted }
        if let first = summary.failed.first { return ExitCode(first.error) }
        if summary.completed.count < ids.count { return .failure }
        return clean ? .success : .usage
    }

    struct Enqueued {
        /// Items to run now.
        var ids: [Int64] = []
        /// Items an earlier run of this batch completed, whose files are still in place.
        var alreadyDone: [QueueItem] = []
        /// Entries skipped because another entry of the batch has the same destination.
        var duplicates = 0
    }

    /// How many of the batch's requests are looked up, and added, at a time: a list of 10,000 is
    /// not copied whole three times over (its peak was 72 MiB).
    static let chunkSize = 512

    /// `0..<count` cut into ranges of `chunkSize` at most, in order.
    static func chunks(_ count: Int) -> [Range<Int>] {
        stride(from: 0, to: count, by: chunkSize).map { $0..<min($0 + chunkSize, count) }
    }

    /// Adds the batch, reusing what an earlier run of the same batch left: unfinished items are
    /// resumed, completed ones (file still in place) are not fetched again.
    private func enqueue(_ queue: DownloadQueue) throws(DownloadError) -> Enqueued {
        var result = Enqueued()
        var seen: Set<String> = []
        // Every request is checked against the queue before any is added, so a conflict anywhere
        // adds none of the batch.
        var fresh: [Int] = []
        var distinct: [Int] = []
        for chunk in Self.chunks(requests.count) {
            distinct.removeAll(keepingCapacity: true)
            for index in chunk {
                let request = requests[index]
                guard seen.insert(DownloadQueue.destinationKey(of: request)).inserted else {
                    presenter.error("\(Redaction.url(request.url)): the same destination appears twice in the batch (skipped)")
                    result.duplicates += 1
                    continue
                }
                distinct.append(index)
            }
            for (index, known) in zip(distinct, try queue.known(distinct.map { requests[$0] })) {
                let request = requests[index]
                if let existing = known.existing {
                    guard existing.url?.absoluteString == request.url.absoluteString else {
                        throw DownloadError(
                            .destinationExists, "\(existing.destination) is already used by queued download \(existing.id) (\(existing.urlString))")
                    }
                    if existing.state == .paused || existing.state == .failed {
                        try queue.resume(existing.id)
                    }
                    result.ids.append(existing.id)
                } else if let done = known.completed {
                    result.alreadyDone.append(done)
                } else {
                    fresh.append(index)
                }
            }
        }
        for chunk in Self.chunks(fresh.count) {
            result.ids += try queue.add(fresh[chunk].map { requests[$0] })
        }
        return result
    }
}

/// Shows a queue run: per-download lines (or JSON objects) as they finish, and on a terminal an
/// aggregate block (files done of total, bytes, speed, one line per active download).
struct QueueRunView {
    let queue: DownloadQueue
    let presenter: Presenter
    /// The downloads this run runs.
    let total: Int
    /// Downloads asked for that an earlier run completed: not run, counted in the summary.
    var skipped = 0

    func run(_ body: @Sendable () async -> QueueRunSummary) async -> QueueRunSummary {
        let presenter = self.presenter
        let total = self.total
        // Quiet runs print only failures, which the summary holds: no per-event work at all.
        let events = presenter.mode == .quiet ? nil : queue.allEvents()
        let aggregate = presenter.mode == .normal ? queue.aggregateProgress() : nil
        let eventTask = Task {
            guard let events else { return }
            for await tagged in events { presenter.show(tagged.event, id: tagged.id) }
        }
        let aggregateTask = Task {
            guard let aggregate else { return }
            for await progress in aggregate { presenter.showAggregate(progress, total: total) }
        }
        let summary = await body()
        // The run ends both streams; what they buffered is shown before the summary.
        _ = await (eventTask.value, aggregateTask.value)
        if presenter.mode == .quiet {
            for (id, error) in summary.failed { presenter.show(.failed(error), id: id) }
        }
        presenter.finishAggregate(summary, total: total + skipped, skipped: skipped)
        return summary
    }
}
