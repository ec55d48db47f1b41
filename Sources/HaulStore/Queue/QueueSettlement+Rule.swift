import HaulCore

extension QueueSettlement {
    /// The rule both stores settle a transfer's end by, on `item` as loaded in the transaction:
    /// a start is never a settlement (it takes a lease), only the lease's owner (`owner`, when
    /// given) and only with the lease's epoch (of `lease`, when given) may settle, the lifecycle
    /// decides the next state, and the error fields follow it (a NUL in the message kept as
    /// U+FFFD). The lease checked is the one `item` was loaded with (locked, so no other worker's
    /// claim comes between). Returns the action and whether the lease is released.
    func settle(_ item: inout StoredDownload, owner: LeaseOwner?) throws -> (action: LifecycleAction, releasesLease: Bool) {
        if input == .start {
            throw StoreError(.conflict, "download \(id): downloads are started by claiming them, which takes a lease")
        }
        if let owner, item.leaseOwner != owner {
            throw StoreError(.conflict, "download \(id) is no longer leased to this process")
        }
        if let epoch = lease?.epoch, item.leaseEpoch != epoch {
            throw StoreError(.conflict, "download \(id) was leased again since this transfer claimed it (epoch \(epoch))")
        }
        let (next, action): (DownloadState, LifecycleAction)
        switch DownloadLifecycle.apply(input, to: item.state) {
        case .success(let result): (next, action) = result
        case .failure(let illegal): throw StoreError(.conflict, "download \(id): \(illegal.description)")
        }
        item.state = next
        if let error {
            item.errorCategory = error.category
            // A NUL (a hostile server's text can carry one) is kept as U+FFFD: PostgreSQL's text
            // cannot hold it, and a settlement refused for it would be refused at every claim.
            item.lastError = error.message.split(separator: "\u{0}", omittingEmptySubsequences: false).joined(separator: "\u{FFFD}")
        } else if next == .queued || next == .running || next == .completed {
            item.errorCategory = nil
            item.lastError = nil
        }
        return (action, next.isSettled || next == .queued)
    }
}
