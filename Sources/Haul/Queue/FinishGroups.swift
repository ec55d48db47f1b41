import HaulStore
import Synchronization

/// Gathers the downloads of a queue run that finish at about the same time and puts them in place
/// together (`FinishGroup`: one data sync, one commit of their finished marks, one sync per
/// directory for all of them). While one group is being finished on `BlockingWork`'s pool, the
/// downloads that finish meanwhile wait and form the next: a group starts as soon as the one
/// before it is done, so a download never waits for another to finish, and one that finishes
/// alone is a group of one.
final class FinishGroups: Sendable {
    /// One download waiting for its group.
    private struct Waiting: @unchecked Sendable {
        // @unchecked: the member's file keeper belongs to a runner that is suspended until
        // `done` is resumed; only the group touches it meanwhile.
        let member: FinishGroup.Member
        /// The queue item it is, if any.
        let item: Int64?
        let done: CheckedContinuation<Result<String, OutputError>, Never>
    }

    /// A queue item of a group, put in place.
    struct Placed: Sendable {
        let item: Int64
        let path: String
        let bytes: Int64
    }

    private struct State {
        var waiting: [Waiting] = []
        /// A group is being finished (and will take whatever waits when it is done).
        var finishing = false
        var figures = FinishGroupFigures()
    }

    private let state = Mutex(State())
    /// Finishes one group; `FinishGroup.finish` but for tests.
    private let finishGroup: @Sendable ([FinishGroup.Member]) -> [Result<String, OutputError>]
    /// Told the queue items of a group once they are in place, before any of them hears so: the
    /// queue settles their completion then, so that a completion is announced only when every
    /// read of the store already says so.
    private let afterGroup: (@Sendable ([Placed]) -> Void)?

    init(
        afterGroup: (@Sendable ([Placed]) -> Void)? = nil,
        finishGroup: @escaping @Sendable ([FinishGroup.Member]) -> [Result<String, OutputError>] = { FinishGroup.finish($0) }
    ) {
        self.afterGroup = afterGroup
        self.finishGroup = finishGroup
    }

    /// The groups so far.
    var figures: FinishGroupFigures { state.withLock { $0.figures } }

    /// Puts `member`'s file in place with the group it joins; returns its final path. The caller
    /// leaves the file keeper alone until this returns.
    func finish(_ member: FinishGroup.Member, item: Int64? = nil) async -> Result<String, OutputError> {
        await withCheckedContinuation { (done: CheckedContinuation<Result<String, OutputError>, Never>) in
            let starts = state.withLock { state -> Bool in
                state.waiting.append(Waiting(member: member, item: item, done: done))
                guard !state.finishing else { return false }
                state.finishing = true
                return true
            }
            if starts { BlockingWork.submit { self.finishWhatWaits() } }
        }
    }

    /// Puts `member`'s file in place: with `groups` when given (a queue run's), else on its own,
    /// as a group of one on the pool.
    static func place(_ member: FinishGroup.Member, with groups: FinishGroups?, item: Int64? = nil) async -> Result<String, OutputError> {
        if let groups { return await groups.finish(member, item: item) }
        return await BlockingWork.run { () -> Result<String, OutputError> in
            do throws(OutputError) {
                return .success(try member.output.finish(replacing: member.replacing, hash: member.hash))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Finishes groups until none waits.
    private func finishWhatWaits() {
        while true {
            let group = state.withLock { state -> [Waiting] in
                let group = state.waiting
                state.waiting = []
                if group.isEmpty {
                    state.finishing = false
                } else {
                    state.figures.groups += 1
                    state.figures.members += group.count
                    state.figures.largest = max(state.figures.largest, group.count)
                }
                return group
            }
            guard !group.isEmpty else { return }
            let results = finishGroup(group.map(\.member))
            if let afterGroup {
                let placed = zip(group, results).compactMap { waiting, result -> Placed? in
                    guard let item = waiting.item, case .success(let path) = result else { return nil }
                    return Placed(item: item, path: path, bytes: waiting.member.output.sink.prefixLength)
                }
                if !placed.isEmpty { afterGroup(placed) }
            }
            for (index, waiting) in group.enumerated() {
                waiting.done.resume(returning: index < results.count ? results[index] : .failure(OutputError(.io, "internal: no outcome")))
            }
        }
    }
}
