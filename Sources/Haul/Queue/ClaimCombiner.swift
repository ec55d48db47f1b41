import Dispatch
import HaulStore
import Synchronization

/// The claims of one run's workers, made together and ahead: a worker that asks while another's
/// claim is under way waits, and the next transaction settles and claims for every worker waiting
/// then (`QueueStore.claim` of that many), so a busy run pays one transaction, one page of
/// candidates and one commit for several items. A batch's transaction claims up to `batch` items
/// (those asked for and the rest ahead); the next requests with nothing to settle take those
/// held ahead without a transaction. An item held ahead is leased (renewed by the heartbeat, shown
/// as running) until a worker takes it; a drain hands every one back to the queue in its next
/// transaction, and `releaseAhead` those left when the run ends.
///
/// One worker at a time leads: it runs the transactions for those waiting until its own request
/// is answered, then hands the lead to the next waiting worker. The others block their pool
/// thread meanwhile, as they would on the database's own lock.
final class ClaimCombiner: Sendable {
    private let settler: QueueSettler
    private let ids: Set<Int64>?
    private let rules: ClaimRules
    /// Most items one transaction claims while not draining (1: only those asked for).
    private let batch: Int

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
        /// Items claimed ahead, best first, leased to this process until a worker takes one.
        var ahead: [StoredDownload] = []
    }

    private let state = Mutex(State())

    init(settler: QueueSettler, ids: Set<Int64>?, rules: ClaimRules, batch: Int = 1) {
        self.settler = settler
        self.ids = ids
        self.rules = rules
        self.batch = max(1, batch)
    }

    /// Settles `settling` and, unless `draining`, claims an item for this worker; together with
    /// every other worker of the run asking now.
    func settleAndClaim(settling: [QueueSettlement], draining: Bool) throws(StoreError) -> StoredDownload? {
        if settling.isEmpty, !draining, let item = nextHeldAhead() { return item }
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

    /// The best item held ahead, if any: a claim without a transaction, which never blocks (a
    /// worker with nothing to settle asks here first, from its own task).
    func nextHeldAhead() -> StoredDownload? {
        takeAhead(1).first
    }

    /// Hands every item held ahead back to the queue (a run's end: its workers are gone).
    func releaseAhead() {
        let held = state.withLock { state in
            defer { state.ahead = [] }
            return state.ahead
        }
        guard !held.isEmpty else { return }
        _ = settler.settleOnly(held.map(Self.release))
    }

    /// Up to `count` items held ahead, best first; those whose lease was lost meanwhile (taken
    /// over elsewhere) are let go and passed over.
    private func takeAhead(_ count: Int) -> [StoredDownload] {
        var taken: [StoredDownload] = []
        while taken.count < count {
            let next = state.withLock { state in state.ahead.isEmpty ? nil : state.ahead.removeFirst() }
            guard let item = next else { break }
            if settler.dropIfLost(item) { continue }
            taken.append(item)
        }
        return taken
    }

    /// One transaction for `turn`: every settlement, and as many items as requests that claim
    /// (fewer when fewer are claimable: those asked last get none, and look again), those held
    /// ahead first and, past them, up to `batch` more; a turn with a draining request hands those
    /// held ahead back instead, and claims only what is asked.
    private func answer(_ turn: [Request]) {
        guard !turn.isEmpty else { return }
        let claiming = turn.filter(\.claims).count
        let draining = turn.contains { !$0.claims }
        var settling = turn.flatMap(\.settling)
        var items: [StoredDownload] = []
        if draining {
            settling += state.withLock { state in
                defer { state.ahead = [] }
                return state.ahead.map(Self.release)
            }
        } else {
            items = takeAhead(claiming)
        }
        let missing = claiming - items.count
        let count = missing == 0 ? 0 : draining ? missing : max(missing, batch)
        do throws(StoreError) {
            items += try settler.settleAndClaim(count, among: count == 0 ? [] : ids, settling: settling, rules: rules)
            var next = items.makeIterator()
            for request in turn { request.answer.finish(.success(request.claims ? next.next() : nil)) }
            let rest = Array(next)
            if !rest.isEmpty { state.withLock { $0.ahead = rest + $0.ahead } }
        } catch {
            // Those taken from ahead stay leased: back ahead, for the next turn.
            if !items.isEmpty { state.withLock { $0.ahead = items + $0.ahead } }
            for request in turn { request.answer.finish(.failure(error)) }
        }
    }

    /// The settlement that hands an item held ahead back to the queue, as an owner that stopped.
    private static func release(_ item: StoredDownload) -> QueueSettlement {
        QueueSettlement(id: item.id, input: .ownerLost, lease: item.lease)
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
