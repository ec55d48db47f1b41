import HaulStore
import Synchronization

/// What a run's workers share: what it was asked (options, the ids it may run, the claim's rules),
/// their claims (made together), the finish groups its files are put in place with, and its summary.
final class RunState: Sendable {
    let summary = Mutex(QueueRunSummary())
    let options: QueueRunOptions
    let ids: Set<Int64>?
    let rules: ClaimRules
    let finishGroups: FinishGroups
    let claims: ClaimCombiner

    init(options: QueueRunOptions, ids: Set<Int64>?, rules: ClaimRules, finishGroups: FinishGroups, settler: QueueSettler) {
        self.options = options
        self.ids = ids
        self.rules = rules
        self.finishGroups = finishGroups
        // A long-running run takes only what a worker asks for: `haul serve` shows what runs.
        let batch = options.concurrency == nil ? options.claimBatch ?? max(1, options.maxConcurrent) : 1
        claims = ClaimCombiner(settler: settler, ids: ids, rules: rules, batch: batch)
    }
}
