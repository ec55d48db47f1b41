import Foundation
import HaulCore
import HaulTestSupport
import Synchronization
import Testing

@testable import HaulStore

/// A store whose saves can be made to fail, remembering the last record saved.
private final class SavingStore: ResumeRecordStore {
    let saved = Mutex<[ResumeRecord]>([])
    let fails = Flag()

    func load() throws(StoreError) -> ResumeRecord? { nil }

    func save(_ record: ResumeRecord) throws(StoreError) {
        if fails.isSet { throw StoreError(.io, "the disk refused the record") }
        saved.withLock { $0.append(record) }
    }

    func remove() {}

    var last: ResumeRecord? { saved.withLock { $0.last } }
    var count: Int { saved.withLock { $0.count } }
}

/// A flag set by one thread, read by another.
private final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// A job lent to the test instead of a pool thread, run when the test says.
private final class HeldJob: @unchecked Sendable {
    private let lock = NSLock()
    private var job: (@Sendable () -> Void)?

    func hold(_ job: @escaping @Sendable () -> Void) { lock.withLock { self.job = job } }

    func run() {
        let job = lock.withLock { () -> (@Sendable () -> Void)? in
            defer { self.job = nil }
            return self.job
        }
        job?()
    }
}

/// A partial download into `directory` holding `bytes`, its record in `store`.
private func partial(_ directory: TemporaryDirectory, _ store: SavingStore, _ bytes: [UInt8]) throws -> PartialDownload {
    let url = try #require(URL(string: "http://127.0.0.1:1/f.bin"))
    let request = PartialDownload.Request(
        destination: .file(directory.file("f.bin")), existingFile: .refuse, url: url,
        fresh: ResumeRecord(originalURL: url.absoluteString, finalURL: url.absoluteString))
    let output = try PartialDownload.open(request, records: { _ in store })
    try bytes.withUnsafeBytes { try output.sink.append($0) }
    return output
}

/// The event loop's checkpoints run on another thread (`checkpointInBackground`); whatever the
/// download saves next waits for them, so a record never lands out of order.
@Suite("PartialDownload: checkpoints off the event loop")
struct BackgroundCheckpointTests {
    @Test("GIVEN a checkpoint handed to another thread WHEN it has not run THEN nothing is saved yet, and a second one is skipped")
    func theCallerDoesNotWait() throws {
        let directory = try TemporaryDirectory(prefix: "haul-bg-checkpoint")
        let store = SavingStore()
        let output = try partial(directory, store, Array(repeating: 7, count: 4_096))
        let held = HeldJob()

        #expect(output.checkpointInBackground(hash: nil, on: held.hold) == nil)
        #expect(store.count == 0)
        let second = HeldJob()
        #expect(output.checkpointInBackground(hash: nil, on: second.hold) == nil)
        held.run()
        second.run()

        #expect(store.count == 1)
        #expect(store.last?.syncedLength == 4_096)
    }

    @Test(
        "GIVEN a checkpoint still running WHEN the download saves a newer record THEN that save waits for it, and the newer record is the one kept"
    )
    func aLaterSaveWaitsAndLandsLast() async throws {
        let directory = try TemporaryDirectory(prefix: "haul-bg-checkpoint")
        let store = SavingStore()
        let output = try partial(directory, store, Array(repeating: 1, count: 1_000))
        let held = HeldJob()
        #expect(output.checkpointInBackground(hash: nil, on: held.hold) == nil)
        try Array(repeating: 2, count: 500).withUnsafeBytes { try output.sink.append($0) }
        output.noteServerDigest(ServerDigest(algorithm: .sha256, expectedHex: String(repeating: "ab", count: 32), source: "Repr-Digest"))

        let saved = Flag()
        let lent = UncheckedOutput(output)
        let saver = Thread {
            try? lent.output.saveRecord(syncedLength: 1_000, hash: nil)
            saved.set()
        }
        saver.start()
        try await Task.sleep(for: .milliseconds(300))
        #expect(!saved.isSet, "the newer save did not wait for the checkpoint")
        held.run()
        for _ in 0..<100 where !saved.isSet { try await Task.sleep(for: .milliseconds(20)) }

        #expect(saved.isSet)
        #expect(store.count == 2)
        #expect(store.last?.serverDigest != nil, "the checkpoint's older record landed last")
    }

    @Test("GIVEN a checkpoint that failed on another thread WHEN the download goes on THEN the next checkpoint reports the failure")
    func aFailureIsReported() throws {
        let directory = try TemporaryDirectory(prefix: "haul-bg-checkpoint")
        let store = SavingStore()
        let output = try partial(directory, store, Array(repeating: 3, count: 100))
        store.fails.set()
        let held = HeldJob()
        #expect(output.checkpointInBackground(hash: nil, on: held.hold) == nil)
        held.run()

        let failure = output.checkpointInBackground(hash: nil, on: { _ in Issue.record("a checkpoint started after a failure") })
        #expect(failure?.message.contains("refused") == true)
    }

    @Test("GIVEN a checkpoint running WHEN the bytes are given up for a new version THEN the discard waits for it first")
    func aDiscardWaits() async throws {
        let directory = try TemporaryDirectory(prefix: "haul-bg-checkpoint")
        let store = SavingStore()
        let output = try partial(directory, store, Array(repeating: 4, count: 2_000))
        let held = HeldJob()
        #expect(output.checkpointInBackground(hash: nil, on: held.hold) == nil)
        let discarded = Flag()
        let lent = UncheckedOutput(output)
        let url = try #require(URL(string: "http://127.0.0.1:1/f.bin"))
        let discarder = Thread {
            try? lent.output.discard(because: "a new version", restartingFrom: url)
            discarded.set()
        }
        discarder.start()
        try await Task.sleep(for: .milliseconds(300))
        #expect(!discarded.isSet, "the discard did not wait for the checkpoint")
        held.run()
        for _ in 0..<100 where !discarded.isSet { try await Task.sleep(for: .milliseconds(20)) }
        #expect(discarded.isSet)
        #expect(output.sink.prefixLength == 0)
    }
}

/// The download's file keeper lent to a thread of the test.
private struct UncheckedOutput: @unchecked Sendable {
    let output: PartialDownload
    init(_ output: PartialDownload) { self.output = output }
}
