import HaulStore

/// The figures of a run's batch, which cover what was asked for: the downloads already complete
/// when the run began (counted as done, with their bytes), those this run ended, and those moving
/// now. So `bytes` never passes `totalBytes`, and a relaunch's figures reach the whole batch.
/// Owned by the queue's live state; pure, tested without a network (`QueueTallyTests`).
struct QueueTally: Sendable, Equatable {
    /// Downloads counted with their bytes.
    struct Files: Sendable, Equatable {
        var count = 0
        var bytes: Int64 = 0
    }
    /// Bytes moved and their totals.
    struct Bytes: Sendable, Equatable {
        var moved: Int64 = 0
        var total: Int64 = 0
    }

    /// Downloads of the run's scope already complete when it began, with their bytes (each one's
    /// whole file).
    var alreadyComplete = Files()
    /// Downloads of the scope the run set out to do, and those it started besides (added while a
    /// long-running run goes on).
    var pending: Set<Int64> = []
    /// Bytes of the downloads this run ended (they left the active set), and their totals: a
    /// completed one's is its size, another's its announced total (else its bytes: it moves no more
    /// in this run).
    var endedSoFar = Bytes()
    /// Downloads this run completed, and those that failed.
    var completed = 0
    var failed = 0

    /// The tally at the start of a run over `scope` (the items it may run, as stored now).
    init(scope: [StoredDownload] = []) {
        for item in scope {
            if item.state == .completed {
                alreadyComplete.count += 1
                alreadyComplete.bytes += item.totalBytes ?? item.bytes
            } else if item.state == .queued || item.state.hasTransfer {
                pending.insert(item.id)
            }
        }
    }

    /// The run started `id`: counted among the files asked for, if it was not already.
    mutating func started(_ id: Int64) {
        pending.insert(id)
    }

    /// A download left the active set: completed (`completedBytes`: its size), or not, with its
    /// last figures.
    mutating func ended(last: DownloadProgress?, completedBytes: Int64?) {
        if let completedBytes {
            endedSoFar.moved += completedBytes
            endedSoFar.total += completedBytes
        } else if let last {
            endedSoFar.moved += last.bytes
            endedSoFar.total += max(last.bytes, last.totalBytes ?? last.bytes)
        }
    }

    /// The run's figures with `active` moving now, at the batch's speed (`BatchSpeed`, measured
    /// over the bytes moved: never the sum of the active downloads', which short ones never have).
    func progress(active: [Int64: DownloadProgress], bytesPerSecond: Double = 0) -> QueueProgress {
        let activeBytes = active.values.reduce(Int64(0)) { $0 + $1.bytes }
        let activeTotals = active.values.map(\.totalBytes)
        let base = alreadyComplete.bytes + endedSoFar.total
        return QueueProgress(
            filesCompleted: alreadyComplete.count + completed, filesFailed: failed,
            filesTotal: alreadyComplete.count + pending.count, bytes: alreadyComplete.bytes + endedSoFar.moved + activeBytes,
            totalBytes: activeTotals.contains(nil) ? nil : base + zip(active.values, activeTotals).reduce(0) { $0 + max($1.0.bytes, $1.1 ?? 0) },
            bytesPerSecond: bytesPerSecond, active: active)
    }
}
