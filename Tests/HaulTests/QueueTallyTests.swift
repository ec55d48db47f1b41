import Foundation
import HaulCore
import HaulStore
import Testing

@testable import Haul

/// The batch's figures as a pure tally: what is counted where (no queue, no network).
@Suite("QueueTally: a batch's figures")
struct QueueTallyTests {
    static func progress(_ bytes: Int64, of total: Int64?) -> DownloadProgress {
        DownloadProgress(bytes: bytes, totalBytes: total, bytesPerSecond: 10, secondsLeft: nil)
    }

    @Test func endedDownloadsKeepTheirTotalsBesideTheirBytes() {
        // GIVEN a run with one download completed, one failed halfway and one running
        var tally = QueueTally()
        tally.pending = [1, 2, 3]
        tally.ended(last: Self.progress(900, of: 1000), completedBytes: 1000)
        tally.completed = 1
        tally.ended(last: Self.progress(200, of: 400), completedBytes: nil)
        tally.failed = 1
        // WHEN the figures are taken
        let figures = tally.progress(active: [3: Self.progress(50, of: 100)])
        // THEN the totals include the ended downloads': bytes 1250 of 1500
        #expect(figures.bytes == 1250)
        #expect(figures.totalBytes == 1500)
        #expect(figures.filesCompleted == 1 && figures.filesFailed == 1 && figures.filesTotal == 3)
        // AND an unknown running length makes the total unknown, not smaller
        #expect(tally.progress(active: [3: Self.progress(50, of: nil)]).totalBytes == nil)
        // AND an ended download without a length counts its bytes as its total
        tally.ended(last: Self.progress(70, of: nil), completedBytes: nil)
        #expect(tally.progress(active: [:]).totalBytes == 1470)
    }

    @Test func aDownloadStartedOutsideTheScopeIsCountedOnce() {
        // GIVEN a run set out to do two downloads
        var tally = QueueTally()
        tally.pending = [1, 2]
        // WHEN it starts one of them, and one added since (twice: a retry)
        tally.started(1)
        tally.started(7)
        tally.started(7)
        // THEN three files are asked for
        #expect(tally.progress(active: [:]).filesTotal == 3)
    }
}
