import HaulCore

/// How much of a partial file to trust: the one rule for a plain partial and a segmented one.
/// Pure; `PartialTrustTests` is its table.
package enum PartialTrust: Equatable, Sendable {
    /// The first bytes of the file, up to this length (the rest is cut away).
    case prefix(Int64)
    /// A segmented partial: a sequential prefix and segments past it (its length says nothing).
    case segments(prefix: Int64, segments: [Segment])

    /// What of a partial of `fileLength` bytes its `record` vouches for. In the boot that wrote
    /// them, the bytes written are trusted (the page cache survives a killed process): all of a
    /// plain partial, and a segmented one's `mapped` progress (updated after every write), else
    /// its last volatile save. After a reboot only what was synced: the record's `syncedLength`,
    /// its durable segments.
    package static func of(
        _ record: ResumeRecord, fileLength: Int64, mapped: (prefix: Int64, segments: [Segment])?, currentBoot: String?
    ) -> PartialTrust {
        let sameBoot = record.bootID != nil && record.bootID == currentBoot
        guard let durable = record.segments else {
            return .prefix(sameBoot ? fileLength : min(fileLength, record.syncedLength))
        }
        // The durable prefix is synced: a fresher map or volatile save never claims less (one
        // left by segments that a later run, over one connection, went past).
        let synced = record.segmentPrefix ?? 0
        if sameBoot, let mapped { return .segments(prefix: max(mapped.prefix, synced), segments: mapped.segments) }
        if sameBoot, let volatile = record.volatileSegments, let prefix = record.volatileSegmentPrefix {
            return .segments(prefix: max(prefix, synced), segments: volatile)
        }
        return .segments(prefix: record.segmentPrefix ?? 0, segments: durable)
    }
}
