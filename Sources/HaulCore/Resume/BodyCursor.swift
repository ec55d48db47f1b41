/// Where each byte of one accepted response goes: compared with the bytes already on disk (the
/// overlap of a resume without validators, or of an adopted file), written, or refused. Pure: the
/// writer feeds it chunk lengths and carries out the returned step.
package struct BodyCursor: Sendable, Equatable {
    /// Why the body must stop early (its bytes up to the step's end are still handled).
    package enum Stop: Sendable, Equatable {
        /// The server sent more than it announced: the excess is never written.
        case moreThanAnnounced(Int64)
        /// The file reached the download's size limit.
        case sizeLimit(Int64)
        /// The sequential connection reached the part other connections fetch.
        case reachedSegments
    }

    /// What to do with one chunk: `compare` (offsets in the chunk) against the file at
    /// `compareAt`, then append `write`; then stop if `stop` is set.
    package struct Step: Sendable, Equatable {
        /// Offsets in the chunk whose bytes are compared with the file (overlap); empty when none are.
        package var compare: Range<Int>
        /// Where in the file the first compared byte sits.
        package var compareAt: Int64
        /// Offsets in the chunk whose bytes are appended to the file; empty when none are.
        package var write: Range<Int>
        /// Set when the body must end after this chunk; nil to go on.
        package var stop: Stop?
    }

    /// Body bytes the response announced; nil when unknown.
    package let expectedBodyLength: Int64?
    /// The largest file allowed; nil for no limit.
    package let sizeLimit: Int64?
    /// Body bytes taken so far (overlap included).
    package private(set) var received: Int64 = 0
    /// Overlap bytes still to compare.
    package private(set) var overlapLeft: Int64
    /// Where the next overlap byte sits in the file.
    package private(set) var overlapPosition: Int64
    /// The file's length: where the next written byte goes.
    package private(set) var fileLength: Int64

    /// A cursor for a response accepted with `plan`, over a file of `fileLength` bytes, refusing to
    /// grow the file past `sizeLimit` (nil for no limit).
    package init(plan: BodyPlan, fileLength: Int64, sizeLimit: Int64?) {
        expectedBodyLength = plan.expectedBodyLength
        self.sizeLimit = sizeLimit
        overlapLeft = plan.overlap
        overlapPosition = plan.writeOffset
        self.fileLength = fileLength
    }

    /// Whether every overlap byte has been compared.
    package var overlapDone: Bool { overlapLeft == 0 }

    /// The step for a chunk of `count` bytes. `segmentBoundary`: where the sequential connection of
    /// a segmented download must stop writing, nil when it writes to the end.
    package mutating func take(_ count: Int, segmentBoundary: Int64? = nil) -> Step {
        var allowed = Int64(count)
        var stop: Stop?
        if let expected = expectedBodyLength, received + allowed > expected {
            allowed = max(0, expected - received)
            stop = .moreThanAnnounced(expected)
        }
        if let sizeLimit, fileLength + allowed - overlapLeft > sizeLimit {
            allowed = max(0, min(allowed, sizeLimit - fileLength + overlapLeft))
            stop = .sizeLimit(sizeLimit)
        }
        let compared = min(allowed, overlapLeft)
        if let boundary = segmentBoundary, overlapLeft == 0 {
            let room = max(0, boundary - fileLength)
            if allowed >= room {
                allowed = room
                stop = .reachedSegments
            }
        }
        let step = Step(
            compare: 0..<Int(compared),
            compareAt: overlapPosition,
            write: Int(compared)..<Int(allowed),
            stop: stop)
        received += allowed
        overlapLeft -= compared
        overlapPosition += compared
        fileLength += allowed - compared
        return step
    }
}
