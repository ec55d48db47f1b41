import Foundation

/// The one codec of the resume record, for the record file beside a partial and the queue's
/// record column alike: JSON with sorted keys, and a record of an unknown version is damaged
/// (treated as no record: its bytes are not trusted).
enum ResumeRecordCodec {
    /// `record` as JSON (`ResumeRecordJSON`: what `JSONEncoder` writes with sorted keys).
    static func encode(_ record: ResumeRecord) -> String {
        ResumeRecordJSON.encode(record)
    }

    /// The record in `data`; `.corruptRecord` when it cannot be read or has an unknown version.
    static func decode(_ data: Data, _ what: String) throws(StoreError) -> ResumeRecord {
        let record: ResumeRecord
        do {
            record = try JSONDecoder().decode(ResumeRecord.self, from: data)
        } catch {
            throw StoreError(.corruptRecord, "\(what) is damaged")
        }
        guard record.version == ResumeRecord.currentVersion else {
            throw StoreError(.corruptRecord, "\(what) has an unknown version \(record.version)")
        }
        return record
    }
}
