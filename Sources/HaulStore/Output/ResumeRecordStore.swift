/// Where one download's resume record lives: a JSON file beside the partial (`RecordFile`), or a
/// row of the queue's SQLite store. Either way the rule is the same: data is synced before a
/// record that claims it is saved, and `save` replaces the record atomically.
package protocol ResumeRecordStore: Sendable {
    /// The record, nil when there is none; `.corruptRecord` when it cannot be understood.
    func load() throws(StoreError) -> ResumeRecord?
    /// Replaces the record atomically and durably.
    func save(_ record: ResumeRecord) throws(StoreError)
    /// Forgets the record. Never fails: a record that cannot be removed is harmless once the file is in place.
    func remove()
    /// Replaces the record atomically, without waiting for the disk: for progress that is only
    /// trusted within the same boot (the page cache outlives a killed process, not a power cut).
    func saveVolatile(_ record: ResumeRecord) throws(StoreError)
    /// Whether a finished record (one with `finishedLength`) is forgotten by the store itself, in
    /// the commit that settles the download, rather than by `remove`.
    var settlesFinishedRecord: Bool { get }
}

extension ResumeRecordStore {
    package var settlesFinishedRecord: Bool { false }

    package func saveVolatile(_ record: ResumeRecord) throws(StoreError) {
        try save(record)
    }
}

extension RecordFile: ResumeRecordStore {}
