import Foundation
import HaulCore

/// The queue's operations: ``QueueStore`` implements them once, over SQLite (one machine) or
/// PostgreSQL (a fleet of machines); `DownloadQueue` runs on either, and one conformance suite
/// checks both.
///
/// The rules are the same on both: every change of state goes through `DownloadLifecycle` in one
/// transaction; a claim takes the best queued item (priority, then order) and leases it to one
/// owner under a new epoch; every later write for the item (progress, record, settlement) names
/// that epoch and is refused once the item was leased again; an item whose lease expired goes
/// back to where it meant to go.
package protocol QueueStorage: AnyObject, Sendable {
    /// Where the store is, for messages: a database file, or a PostgreSQL URI without password.
    var location: String { get }
    /// Whether machines other than this one use the store. A shared store refuses to keep secrets
    /// (see ``SharedStoreRule``), and a run waits for items other workers hold, to take them over
    /// if their leases expire.
    var isShared: Bool { get }
    /// Seconds a lease lasts without renewal.
    var leaseSeconds: Double { get }

    /// Adds downloads in one transaction: all or none.
    func add(_ downloads: [NewDownload]) throws(StoreError) -> [Int64]
    /// The unfinished item that would write where `new` would, if any.
    func activeItem(for new: NewDownload) throws(StoreError) -> StoredDownload?
    /// The newest completed item of the same URL that wrote where `new` would, if any.
    func completedItem(for new: NewDownload) throws(StoreError) -> StoredDownload?
    /// For each of `news`, in order, what the store already has for it, read together: a batch
    /// of a thousand files asks once, not a thousand times.
    func knownItems(for news: [NewDownload]) throws(StoreError) -> [KnownItems]
    /// One item, nil when there is none.
    func item(_ id: Int64) throws(StoreError) -> StoredDownload?
    /// Every item, oldest first.
    func all() throws(StoreError) -> [StoredDownload]
    /// Replaces the per-download options of an item.
    func updateOptions(_ id: Int64, _ options: StoredOptions) throws(StoreError)
    /// Points an item at another place (`haul.move`): its destination kind and path, and its
    /// final path (nil when not known yet). Only while no transfer runs it (queued or at rest);
    /// `.conflict` otherwise, `.notFound` for no such item. `intent`: the move's intent left in
    /// its place in the same transaction (relocated: the old names are the ones to remove), nil to
    /// clear it.
    func relocate(_ id: Int64, kind: StoredDownload.DestinationKind, destination: String, finalPath: String?, leaving intent: MoveIntent?)
        throws(StoreError)
    /// Records a move's intent before its first new name is made (see `MoveIntent`), only while no
    /// transfer runs the item and no other intent is left: `.conflict` otherwise, `.notFound` for
    /// no such item. Durable before it returns.
    func recordMoveIntent(_ id: Int64, _ intent: MoveIntent) throws(StoreError)
    /// Clears the move intent of an item while it is still `intent`; whether it was.
    @discardableResult
    func clearMoveIntent(_ id: Int64, ifStill intent: MoveIntent) throws(StoreError) -> Bool
    /// Sets the priorities of several items in one transaction.
    func setPriorities(_ priorities: [(id: Int64, priority: Int)]) throws(StoreError)

    /// Settles `settlements`, returns expired items to the queue, then claims the best `count`
    /// queued items (among `ids`, if given) that `rules` allow, for `owner`, best first (fewer
    /// when fewer are claimable): one transaction.
    func claim(_ count: Int, for owner: LeaseOwner, among ids: Set<Int64>?, settling: [QueueSettlement], rules: ClaimRules)
        throws(StoreError) -> [StoredDownload]
    /// Extends the leases their owner knows it holds and reports each one's state; an item
    /// missing from the answer is no longer its own (its lease was lost). A row leased to the
    /// owner that is not in `leases` (a claim whose reply was lost) is left to expire.
    func renewLeases(_ leases: [Lease]) throws(StoreError) -> [Int64: DownloadState]
    /// How many items a run would take on now: queued or in a transfer state, damaged ones included.
    func pendingCount() throws(StoreError) -> Int
    /// Whether any item (among `ids`) is queued or in a transfer state, whoever holds it.
    func hasPendingWork(among ids: Set<Int64>?) throws(StoreError) -> Bool
    /// Applies a lifecycle input to an item; with `owner`, only while the item is leased to it.
    func apply(_ input: LifecycleInput, to id: Int64, error: (category: String, message: String)?, finished: (bytes: Int64, path: String)?, owner: LeaseOwner?)
        throws(StoreError) -> (StoredDownload, LifecycleAction)
    /// Removes a settled item.
    func remove(_ id: Int64) throws(StoreError)
    /// Records progress of a running item; refused (`.conflict`) when `lease` is no longer its lease.
    func updateProgress(_ lease: Lease, bytes: Int64, totalBytes: Int64?, bytesPerSecond: Double, finalPath: String?) throws(StoreError)
    /// The resume record of an item, outside any lease (removing a partial).
    func resumeRecord(_ id: Int64) -> any ResumeRecordStore
    /// The resume record of an item just claimed by `owner`, fenced by its lease.
    func resumeRecord(for item: StoredDownload, owner: LeaseOwner) -> any ResumeRecordStore

    /// Appends a notification to `haul serve`'s event journal, keeping the last `keeping`; its id,
    /// or nil for a second completion of an item (see `QueueStore+Events`).
    func appendEvent(item: Int64, method: String, keeping: Int) throws(StoreError) -> Int64?
    /// The journal's events after id `after`, `limit` at most, and its extent.
    func events(after: Int64, limit: Int) throws(StoreError) -> JournalPage
    /// Journals the completions a server that died never journaled; returns them.
    func journalMissedCompletions(keeping: Int) throws(StoreError) -> [JournalEvent]

    /// Makes sure no earlier copy of a removed secret stays in the store's files, now.
    func forgetRemovedSecrets()
    /// The same, at most about once a second.
    func forgetRemovedSecretsSoon()
    /// Blocks until work may have appeared (an item added or resumed anywhere), `seconds` at most.
    func waitForWork(seconds: Double)
    /// Ends every `waitForWork` of this process now.
    func wakeWaiters()
}

/// What a claim may take beyond "the best queued item".
package struct ClaimRules: Sendable, Equatable {
    /// At most this many items of one host in a transfer state at once, across every worker of
    /// the store; nil for no limit.
    package var maxPerHost: Int?

    /// Rules with these limits; none by default.
    package init(maxPerHost: Int? = nil) {
        self.maxPerHost = maxPerHost
    }
}

/// The end of one transfer, applied by its owner (with the next claim, see `claimNext`).
package struct QueueSettlement: Sendable {
    /// The item.
    package let id: Int64
    /// What happened to its transfer.
    package let input: LifecycleInput
    /// The failure's category and message.
    package let error: (category: String, message: String)?
    /// A completed download's length and path.
    package let finished: (bytes: Int64, path: String)?
    /// The lease the transfer ran under: a settlement of an item leased again since, or no longer
    /// its owner's, is refused. Nil for a command's request (pause, cancel), which holds none.
    package let lease: Lease?
    /// Seconds before the item may be claimed again (it goes back to the queue), nil for at once.
    package let retryAfter: Double?

    /// A settlement of `id` with these outcomes.
    package init(
        id: Int64, input: LifecycleInput, error: (category: String, message: String)? = nil, finished: (bytes: Int64, path: String)? = nil,
        lease: Lease? = nil, retryAfter: Double? = nil
    ) {
        self.id = id
        self.input = input
        self.error = error
        self.finished = finished
        self.lease = lease
        self.retryAfter = retryAfter
    }
}

/// What the store already has for a download about to be added: the unfinished item at its
/// place (`activeItem`) and, when there is none, the newest completed item of its URL there
/// (`completedItem`).
package struct KnownItems: Sendable {
    /// The unfinished item that writes where the download would.
    package let active: StoredDownload?
    /// With no unfinished one, the newest completed item of the same URL at the same place.
    package let completed: StoredDownload?

    package init(active: StoredDownload?, completed: StoredDownload?) {
        self.active = active
        self.completed = completed
    }
}

/// A host key for the per-host limit: the URL's host, lowercased ("" when it has none).
package enum HostKey {
    /// The host of `url`.
    package static func of(_ url: String) -> String {
        URLComponents(string: url)?.host?.lowercased() ?? ""
    }
}

extension QueueStorage {
    /// One lookup after another (a store that has no faster way).
    package func knownItems(for news: [NewDownload]) throws(StoreError) -> [KnownItems] {
        var known: [KnownItems] = []
        for new in news {
            let active = try activeItem(for: new)
            known.append(KnownItems(active: active, completed: active == nil ? try completedItem(for: new) : nil))
        }
        return known
    }

    /// Points an item at another place with no move intent left (see the requirement).
    package func relocate(_ id: Int64, kind: StoredDownload.DestinationKind, destination: String, finalPath: String?) throws(StoreError) {
        try relocate(id, kind: kind, destination: destination, finalPath: finalPath, leaving: nil)
    }

    /// Applies a lifecycle input to an item, with no outcome and no owner to check (a command's request).
    @discardableResult
    package func apply(_ input: LifecycleInput, to id: Int64) throws(StoreError) -> (StoredDownload, LifecycleAction) {
        try apply(input, to: id, error: nil, finished: nil, owner: nil)
    }

    /// Settles `settling`, then claims the best queued item (among `ids`, if given) that `rules`
    /// allow: `claim` of one.
    package func claimNext(
        for owner: LeaseOwner, among ids: Set<Int64>? = nil, settling: [QueueSettlement] = [], rules: ClaimRules = ClaimRules()
    ) throws(StoreError) -> StoredDownload? {
        try claim(1, for: owner, among: ids, settling: settling, rules: rules).first
    }
}
