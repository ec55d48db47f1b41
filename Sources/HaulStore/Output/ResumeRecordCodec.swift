import Foundation
import HaulJSON

/// The one codec of the resume record, for the record file beside a partial and the queue's
/// record column alike: the record's own `Codable`, stored whole (a field added to the record is
/// written and read with no code here), as HaulJSON writes JSON: sorted keys, a nil optional left
/// out, a `Date` as its seconds since 2001. Older versions wrote the same bytes but for `/`, which
/// they escaped (`\/`); each version reads the other's. A record of an unknown version is damaged
/// (treated as no record: its bytes are not trusted).
enum ResumeRecordCodec {
    /// `record` as JSON.
    static func encode(_ record: ResumeRecord) throws(StoreError) -> String {
        do {
            return try JSONWriter.text(encoding: record)
        } catch {
            // Not seen: nothing in the record encodes itself by hand, so nothing can refuse.
            throw StoreError(.io, "cannot encode a resume record: \(error)")
        }
    }

    /// The record in `data`; `.corruptRecord` when it cannot be read or has an unknown version.
    static func decode(_ data: Data, _ what: String) throws(StoreError) -> ResumeRecord {
        let record: ResumeRecord
        do {
            record = try JSONParser.parse(data).decoded(as: ResumeRecord.self)
        } catch {
            throw StoreError(.corruptRecord, "\(what) is damaged")
        }
        guard record.version == ResumeRecord.currentVersion else {
            throw StoreError(.corruptRecord, "\(what) has an unknown version \(record.version)")
        }
        return record
    }
}
