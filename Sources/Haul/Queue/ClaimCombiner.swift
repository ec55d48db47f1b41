import Dispatch
import HaulStore
import Synchronization

/// The claims of one run's workers, made together: a worker that asks while another's claim is
/// under way waits, and the next transaction settles and claims for every worker waiting then
/// (`QueueStore.claim` of that many), so a busy run pays one transaction, one page of candidates
/// and one commit for several items. No item is claimed before a worker is free to run it: each
/// item claimed is handed to a worker that asked, so nothing sits leased and idle.
///
/// One worker at a time leads: it runs the transactions for those waiting until its own request
/// is answered, then hands the lead to the next waiting worker. The others block their pool
/// thread meanwhile, as they would on the database's own lock.
final class ClaimCombiner: Sendable {
    private let settler: QueueSettler
    private let ids: Set<Int64>?
    private let rules: ClaimRules

    /// A worker's request: its outcomes to settle, whether it also wants an item (not when the run
    /// drains), and where its answer goes.
    private struct Request: Sendable {
        let settling: [QueueSettlement]
        let claims: Bool
        let answer: Answer
    }

    private struct State {
        var waiting: [Request] = []
        var leading = false
    }

    private let state = Mutex(State())

    init(settler: QueueSettler, ids: Set<Int64>?, rules: ClaimRules) {
        self.settler = settler
        self.ids = ids
        self.rules = rules
    }

    /// Settles `settling` and, unless `draining`, claims an item for this worker; together with
    /// every other worker of the run asking now.
    func settleAndClaim(settling: [QueueSettlement], draining: Bool) throws(StoreError) -> StoredDownload? {
        let mine = Answer()
        let leads = state.withLock { state in
            state.waiting.append(Request(settling: settling, claims: !draining, answer: mine))
            defer { state.leading = true }
            return !state.leading
        }
        if !leads, case .done(let result) = mine.wait() { return try result.get() }
        // Leading: answer those waiting, in turns, until this worker's own request is answered.
        while !mine.isAnswered {
            let turn = state.withLock { state in
                defer { state.waiting = [] }
                return state.waiting
            }
            answer(turn)
        }
        state.withLock { state in
            if let next = state.waiting.first {
                next.answer.lead()
            } else {
                state.leading = false
            }
        }
        return try mine.result.get()
    }

    /// One transaction for `turn`: every settlement, and as many items as requests that claim
    /// (fewer when fewer are claimable: those asked last get none, and look again).
    private func answer(_ turn: [Request]) {
        guard !turn.isEmpty else { return }
        let claiming = turn.filter(\.claims)
        do throws(StoreError) {
            let claimed = try settler.settleAndClaim(
                claiming.count, among: claiming.isEmpty ? [] : ids, settling: turn.flatMap(\.settling), rules: rules)
            var items = claimed.makeIterator()
            for request in turn { request.answer.finish(.success(request.claims ? items.next() : nil)) }
        } catch {
            for request in turn { request.answer.finish(.failure(error)) }
        }
    }
}

/// Where one request's answer goes: its result, or the lead handed to its worker.
private final class Answer: Sendable {
    enum Turn {
        case done(Result<StoredDownload?, StoreError>)
        case lead
    }

    private let turn = Mutex<Turn?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func finish(_ result: Result<StoredDownload?, StoreError>) {
        turn.withLock { $0 = .done(result) }
        ready.signal()
    }

    /// This worker's request is not answered yet, and it leads now.
    func lead() {
        turn.withLock { $0 = .lead }
        ready.signal()
    }

    /// Waits for an answer or the lead.
    func wait() -> Turn {
        ready.wait()
        return turn.withLock { $0 } ?? .lead
    }

    var isAnswered: Bool {
        turn.withLock { turn in
            if case .done = turn { return true }
            return false
        }
    }

    /// The answer (only once `isAnswered`).
    var result: Result<StoredDownload?, StoreError> {
        turn.withLock { turn in
            if case .done(let result) = turn { return result }
            return .failure(StoreError(.io, "a claim was not answered"))
        }
    }
}
