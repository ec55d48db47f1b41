import HaulCore
import HaulStore
import HaulTestSupport
import Testing

/// How much of a partial its record vouches for, as a table (no file system).
@Suite("PartialTrust: the one rule for a partial's bytes")
struct PartialTrustTests {
    static let boot = "boot-A"
    static let durable = [Segment(begin: 4096, next: 5000, end: 8192)]
    static let volatile = [Segment(begin: 4096, next: 7000, end: 8192)]
    static let mapped = [Segment(begin: 4096, next: 8000, end: 8192)]

    static func record(boot: String?, synced: Int64 = 1000, segments: Bool = false, volatile: Bool = false) -> ResumeRecord {
        var record = ResumeRecord(originalURL: "http://h/f", finalURL: "http://h/f")
        record.bootID = boot
        record.syncedLength = synced
        if segments {
            record.segments = durable
            record.segmentPrefix = 1000
        }
        if volatile {
            record.volatileSegments = Self.volatile
            record.volatileSegmentPrefix = 2000
        }
        return record
    }

    @Test func aPlainPartialIsTrustedWhollyInItsBootAndUpToItsSyncAfterIt() {
        #expect(PartialTrust.of(Self.record(boot: Self.boot), fileLength: 5000, mapped: nil, currentBoot: Self.boot) == .prefix(5000))
        #expect(PartialTrust.of(Self.record(boot: Self.boot), fileLength: 5000, mapped: nil, currentBoot: "boot-B") == .prefix(1000))
        #expect(PartialTrust.of(Self.record(boot: nil), fileLength: 5000, mapped: nil, currentBoot: nil) == .prefix(1000))
        // A file shorter than the sync claims (cut by hand) is trusted only as far as it goes.
        #expect(PartialTrust.of(Self.record(boot: "boot-B"), fileLength: 600, mapped: nil, currentBoot: Self.boot) == .prefix(600))
    }

    @Test func aSegmentedPartialTrustsTheMapThenTheVolatileSaveInItsBootAndTheDurableOneAfter() {
        let record = Self.record(boot: Self.boot, segments: true, volatile: true)
        let map = (prefix: Int64(3000), segments: Self.mapped)
        #expect(PartialTrust.of(record, fileLength: 8192, mapped: map, currentBoot: Self.boot) == .segments(prefix: 3000, segments: Self.mapped))
        #expect(PartialTrust.of(record, fileLength: 8192, mapped: nil, currentBoot: Self.boot) == .segments(prefix: 2000, segments: Self.volatile))
        #expect(PartialTrust.of(record, fileLength: 8192, mapped: map, currentBoot: "boot-B") == .segments(prefix: 1000, segments: Self.durable))
        let durableOnly = Self.record(boot: Self.boot, segments: true)
        #expect(PartialTrust.of(durableOnly, fileLength: 8192, mapped: nil, currentBoot: Self.boot) == .segments(prefix: 1000, segments: Self.durable))
    }

    @Test func aMapOrVolatileSaveLeftBehindByALaterSequentialRunNeverClaimsLessThanTheSyncedPrefix() {
        // GIVEN a segmented partial continued over one connection (a host that took one): its
        // record's synced prefix (3500) went past what the map (3000) and the volatile save (2000)
        // of the segments' last run say
        var record = Self.record(boot: Self.boot, segments: true, volatile: true)
        record.segmentPrefix = 3500
        let map = (prefix: Int64(3000), segments: Self.mapped)
        // THEN the synced prefix is trusted, whichever save is read
        #expect(PartialTrust.of(record, fileLength: 8192, mapped: map, currentBoot: Self.boot) == .segments(prefix: 3500, segments: Self.mapped))
        #expect(PartialTrust.of(record, fileLength: 8192, mapped: nil, currentBoot: Self.boot) == .segments(prefix: 3500, segments: Self.volatile))
    }

    @Test func aSequentialSaveOfASegmentedRecordMovesItsSyncedPrefix() throws {
        // GIVEN a record with segments, its prefix at 1000, saved by the sequential connection
        // after syncing 3500 bytes
        let directory = try TemporaryDirectory()
        let keeper = RecordKeeper(store: RecordFile(path: directory.file("r")))
        var record = Self.record(boot: Self.boot, segments: true)
        try keeper.save(&record, syncedLength: 3500)
        // THEN the record's segment prefix is the synced 3500, never below what it was
        #expect(record.segmentPrefix == 3500)
        try keeper.save(&record, syncedLength: 200)
        #expect(record.segmentPrefix == 3500)
    }
}
