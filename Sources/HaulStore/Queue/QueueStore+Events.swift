import Foundation
import HaulCore

/// One event of `haul serve`'s journal: its id (increasing, never reused), the item and the
/// notification's method (`aria2.onDownloadComplete`...).
package struct JournalEvent: Sendable, Equatable {
    package let id: Int64
    package let item: Int64
    package let method: String

    package init(id: Int64, item: Int64, method: String) {
        self.id = id
        self.item = item
        self.method = method
    }
}

/// A page of the journal after some id, and the journal's extent when it was read.
package struct JournalPage: Sendable, Equatable {
    package let events: [JournalEvent]
    /// The oldest and newest ids kept; nil for an empty journal.
    package let oldest: Int64?
    package let newest: Int64?

    package init(events: [JournalEvent], oldest: Int64?, newest: Int64?) {
        self.events = events
        self.oldest = oldest
        self.newest = newest
    }
}

// The event journal of `haul serve` (the `serve_events` table): the recent notifications with
// their ids, so a client of the event stream that reconnects gets what it missed, across a
// restart of the server. A completion is journaled at most once per item (a unique index), and
// one the process did not journal before it died is journaled when the server starts again
// (`journalMissedCompletions`).
extension QueueStore {
    /// The completion method: journaled once per item.
    package static let completionMethod = "aria2.onDownloadComplete"

    /// Appends event `method` of `item`, keeping the last `keeping` ids; returns its id, or nil
    /// for a second completion of the item (not journaled, and not to be sent).
    package func appendEvent(item: Int64, method: String, keeping: Int) throws(StoreError) -> Int64? {
        try database.write { db in
            guard let id = try db.row(dialect.appendEvent, [.integer(item), .text(method), .real(Date().timeIntervalSince1970)])?.int64("id") else {
                return nil
            }
            if id > Int64(keeping) { _ = try db.run(dialect.trimEvents, [.integer(id - Int64(keeping))]) }
            return id
        }
    }

    /// The events after id `after`, oldest first, `limit` at most, and the journal's extent.
    package func events(after: Int64, limit: Int) throws(StoreError) -> JournalPage {
        try database.read { db in
            let bounds = try db.row(dialect.eventBounds, [])
            let events = try db.rows(dialect.eventsAfter, [.integer(after), .integer(Int64(limit))]).compactMap { row -> JournalEvent? in
                guard let id = row.int64("id"), let item = row.int64("item_id"), let method = row.string("method") else { return nil }
                return JournalEvent(id: id, item: item, method: method)
            }
            return JournalPage(events: events, oldest: bounds?.int64("oldest"), newest: bounds?.int64("newest"))
        }
    }

    /// Journals a completion for every item completed without one since the journal could have
    /// recorded it (since its oldest kept event once `keeping` are kept, else since it began):
    /// those a server killed after the completion's commit and before its journal entry never
    /// sent. Returns them, oldest first.
    package func journalMissedCompletions(keeping: Int) throws(StoreError) -> [JournalEvent] {
        try database.write { db in
            let bounds = try db.row(dialect.eventBounds, [])
            let start = try db.row(dialect.journalStart, [])?.double("at") ?? 0
            let trimmed = (bounds?.int64("kept") ?? 0) >= Int64(keeping)
            let since = trimmed ? bounds?.double("since") ?? start : start
            return try db.rows(dialect.journalMissedCompletions, [.real(since), .real(Date().timeIntervalSince1970)]).compactMap { row -> JournalEvent? in
                guard let id = row.int64("id"), let item = row.int64("item_id") else { return nil }
                return JournalEvent(id: id, item: item, method: Self.completionMethod)
            }.sorted { $0.id < $1.id }
        }
    }
}
