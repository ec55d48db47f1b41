/// A file Haul keeps beside a destination while its download is incomplete, named after the
/// destination's final name (or, for a download into a directory, after its URL's key).
package enum Sidecar: Sendable, CaseIterable {
    /// The partial file the body is written into.
    case partial
    /// The resume record (a single download's; a queue keeps its record in the store).
    case record
    /// A segmented download's progress, mapped into memory (see `SegmentProgressMap`).
    case segmentMap
    /// A partial proven bad, set aside for a look and never continued.
    case rejected

    /// What is added to the name.
    package var suffix: String {
        switch self {
        case .partial: ".haul-partial"
        case .record: ".haul-resume"
        case .segmentMap: ".haul-segments"
        case .rejected: ".haul-rejected"
        }
    }

    /// Bytes the sidecar's name must leave free for a file named after it in turn: the record is
    /// replaced through a temporary beside it (`RecordFile.temporarySuffix`).
    var reservedBytes: Int {
        self == .record ? RecordFile.temporarySuffix.utf8.count : 0
    }

    /// The most bytes any sidecar adds to the name it is derived from.
    static let longestAddition = allCases.map { $0.suffix.utf8.count + $0.reservedBytes }.max() ?? 0
}
