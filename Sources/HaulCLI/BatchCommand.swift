import Foundation
import Haul

/// `haul URL URL ...` and `haul -i FILE`: the downloads go into the queue store and this process
/// runs them, `-j` at a time. An interrupted batch continues when the same command runs again
/// (or with `haul queue run`).
struct BatchCommand {
    let requests: [DownloadRequest]
    let problems: [String]
    let jobs: Int
    let options: RequestOptions
    let stateDirectory: String?
    let presenter: Presenter

    func run() async -> ExitCode {
        for problem in problems {
            presenter.error("\(problem) (skipped)")
        }
        let queue: DownloadQueue
        do throws(DownloadError) {
            queue = try DownloadQueue(stateDirectory: stateDirectory)
        } catch {
            presenter.error(error.message)
            return ExitCode(error)
        }
        let ids: [Int64]
        do throws(DownloadError) {
            ids = try enqueue(queue)
        } catch {
            presenter.error(error.message)
            return ExitCode(error)
        }
        guard !ids.isEmpty else { return problems.isEmpty ? .success : .usage }
        let signals = SignalWatcher { _ in queue.stopAll() }
        let runOptions = options.runOptions(jobs: jobs)
        let batch = Set(ids)
        let summary = await QueueRunView(queue: queue, presenter: presenter, total: ids.count).run {
            await queue.run(runOptions, only: batch)
        }
        if let interrupted = signals.exitCode { return interrupted }
        if let first = summary.failed.first { return ExitCode(first.error) }
        if summary.completed.count < ids.count { return .failure }
        return problems.isEmpty ? .success : .usage
    }

    /// Adds the batch, reusing the unfinished items of an earlier run of the same batch.
    private func enqueue(_ queue: DownloadQueue) throws(DownloadError) -> [Int64] {
        var ids: [Int64] = []
        var fresh: [DownloadRequest] = []
        var seen: Set<String> = []
        for request in requests {
            let key = Self.destinationKey(request)
            guard seen.insert(key).inserted else {
                presenter.error("\(request.url.absoluteString): the same destination appears twice in the batch (skipped)")
                continue
            }
            guard let existing = try queue.existingItem(for: request) else {
                fresh.append(request)
                continue
            }
            guard existing.urlString == request.url.absoluteString else {
                throw DownloadError(.destinationExists, "\(existing.destination) is already used by queued download \(existing.id) (\(existing.urlString))")
            }
            switch existing.state {
            case .paused, .failed:
                try queue.resume(existing.id)
            case .queued, .running, .pausing:
                break
            default:
                fresh.append(request)
                continue
            }
            ids.append(existing.id)
        }
        ids += try queue.add(fresh)
        return ids
    }

    static func destinationKey(_ request: DownloadRequest) -> String {
        switch request.destination {
        case .file(let path): return "file:" + URL(fileURLWithPath: path).standardizedFileURL.path
        case .directory(let path): return "dir:" + URL(fileURLWithPath: path).standardizedFileURL.path + "|" + request.url.absoluteString
        case .standardOutput: return "-"
        }
    }
}

/// Shows a queue run: per-download lines (or JSON objects) as they finish, and on a terminal an
/// aggregate block (files done of total, bytes, speed, one line per active download).
struct QueueRunView {
    let queue: DownloadQueue
    let presenter: Presenter
    let total: Int

    func run(_ body: @Sendable () async -> QueueRunSummary) async -> QueueRunSummary {
        let events = queue.allEvents()
        let aggregate = queue.aggregateProgress()
        let presenter = self.presenter
        let total = self.total
        let eventTask = Task {
            for await tagged in events { presenter.show(tagged.event, id: tagged.id) }
        }
        let aggregateTask = Task {
            for await progress in aggregate { presenter.showAggregate(progress, total: total) }
        }
        let summary = await body()
        // The run ends both streams; what they buffered is shown before the summary.
        _ = await (eventTask.value, aggregateTask.value)
        presenter.finishAggregate(summary, total: total)
        return summary
    }
}
