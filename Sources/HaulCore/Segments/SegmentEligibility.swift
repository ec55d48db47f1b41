/// Whether the rest of a download is fetched over several connections once its first response is
/// accepted: only when the server serves byte ranges of this exact version (validators that can
/// guard `If-Range`), the file's length is known and equal to what is written, nothing is decoded
/// or offset, and enough is left to be worth splitting. Pure; `SegmentEligibilityTests` is its table.
package struct SegmentEligibility: Sendable, Equatable {
    /// Connections per file when adapting (no `connections` given): as many as aria2's default
    /// (16), reached only while each addition raises the throughput (`ConnectionGrowth`).
    package static let adaptiveConnectionLimit = 16
    /// Connections per file at most.
    package static let maximumConnections = 16

    /// The accepted response's body plan.
    package var body: BodyPlan
    /// The response's status (a 206 shows the server serves ranges).
    package var status: Int
    /// The response advertises byte ranges (`Accept-Ranges: bytes`).
    package var acceptsByteRanges: Bool
    /// The download asks for the whole resource (not a byte range of it).
    package var wholeResource: Bool
    /// The output is a partial file (a direct output is written in order only).
    package var resumableOutput: Bool
    /// Bytes already in the partial's sequential prefix.
    package var bytesOnDisk: Int64
    /// The record already holds segments (a segmented download resumed): split whatever is left.
    package var resumesSegments: Bool
    /// Segments are running already, or were turned off for this run after they disagreed.
    package var segmentsRunningOrDisabled: Bool
    /// `DownloadRequest.connections`; nil adapts.
    package var connections: Int?
    /// The request URL has a host (to count its connections by).
    package var hasHost: Bool

    /// The facts of one accepted response.
    package init(
        body: BodyPlan, status: Int, acceptsByteRanges: Bool, wholeResource: Bool, resumableOutput: Bool, bytesOnDisk: Int64,
        resumesSegments: Bool, segmentsRunningOrDisabled: Bool, connections: Int?, hasHost: Bool
    ) {
        self.body = body
        self.status = status
        self.acceptsByteRanges = acceptsByteRanges
        self.wholeResource = wholeResource
        self.resumableOutput = resumableOutput
        self.bytesOnDisk = bytesOnDisk
        self.resumesSegments = resumesSegments
        self.segmentsRunningOrDisabled = segmentsRunningOrDisabled
        self.connections = connections
        self.hasHost = hasHost
    }

    /// The connections the file may use in all (the first one included).
    package var connectionLimit: Int {
        min(Self.maximumConnections, connections ?? Self.adaptiveConnectionLimit)
    }

    /// The extra connections to start, nil when the download stays on one connection.
    package var helpers: Int? {
        let limit = connectionLimit
        guard limit > 1, !segmentsRunningOrDisabled, wholeResource, resumableOutput, hasHost,
            body.overlap == 0, body.contentEncoding == nil, body.resourceStart == 0,
            let total = body.totalLength, body.finalLength == total,
            body.validators.canGuardResume,
            acceptsByteRanges || status == 206,
            total - bytesOnDisk >= 4 * SegmentTable.minimumSplit || resumesSegments
        else { return nil }
        return limit - 1
    }
}
