import Foundation
import HaulChecksum
import HaulCore

/// Puts complete downloads in place together, in the durability order each one goes through
/// alone, with each step done once for the group rather than once per file:
///
/// 1. every partial's identity read (device, inode, size, modification time: one `fstat`), then
///    its data synced (`GroupSync`: one syncfs where there are several);
/// 2. every record marked finished with that identity (all of it kept by the rename), in one
///    commit where the records share a queue store (`RecordKeeper.saveTogether`);
/// 3. each partial renamed, never over a file that appeared meanwhile unless it replaces, then
///    marked as its request's finished download (`FinishedMark`) if it is still exactly the file
///    synced (the rename moves its change time: a mark set before it would prove nothing after);
/// 4. each directory synced once, which makes the renames and the marks durable;
/// 5. each record forgotten, each lock given up.
///
/// So no file gets its name before its data is synced, and a process killed at any step leaves
/// each download either complete under its name (its record marked finished, recognised by the
/// next run) or resumable from its partial. A failure of one download's step ends only that
/// download; its data stays in its partial. A lone download is a group of one (its data synced
/// with fsync). A direct output is already where it goes. The mark outlives the record: the same
/// request again finds the file in place and proven, and completes without a request.
package enum FinishGroup {
    /// How long after a record is saved finished (step 2) its file's rename and mark (step 3) may
    /// come, in nanoseconds: the save's own sync (a SQLite commit, a PostgreSQL round trip) falls
    /// between them. A file found by its record alone (a run killed before the mark) whose change
    /// time is later was changed after it was put in place, and proves nothing (see
    /// `PartialDownload.isInPlace`); one renamed later than this after a kill is refused as a
    /// file in the way, never taken for another's bytes.
    static let renameAllowance: Int64 = 60 * 1_000_000_000

    /// One download to put in place.
    package struct Member {
        /// Its file keeper.
        package let output: PartialDownload
        /// Whether it replaces a file at its final path.
        package let replacing: Bool
        /// Its digest's state, kept in the finished record.
        package let hash: StreamingHash?

        /// A download of the group.
        package init(_ output: PartialDownload, replacing: Bool, hash: StreamingHash?) {
            self.output = output
            self.replacing = replacing
            self.hash = hash
        }
    }

    /// Finishes `members`; returns each one's final path or failure, in order.
    package static func finish(_ members: [Member]) -> [Result<String, OutputError>] {
        var results = [Result<String, OutputError>?](repeating: nil, count: members.count)
        var moving: [Int] = []
        var placed: [Int] = []
        for (index, member) in members.enumerated() {
            let output = member.output
            guard output.layout != nil else {
                results[index] = .success(output.sink.path)
                continue
            }
            guard output.finalPath != nil else {
                results[index] = .failure(OutputError(.io, "the download finished without a file name"))
                continue
            }
            if output.alreadyInPlace { placed.append(index) } else { moving.append(index) }
        }
        let failed = { (index: Int, error: OutputError) in results[index] = .failure(error) }

        // 1. The identities, then the data.
        var identities: [Int: FileIdentity] = [:]
        for index in moving {
            identities[index] = try? members[index].output.partialFile?.identity()
        }
        let files = moving.compactMap { index in members[index].output.partialFile.map { ($0, identities[index]?.device) } }
        let syncFailures = GroupSync.sync(files.map(\.0), devices: files.map(\.1))
        var fileFailure: [ObjectIdentifier: StoreError] = [:]
        for ((file, _), failure) in zip(files, syncFailures) { if let failure { fileFailure[ObjectIdentifier(file)] = failure } }
        moving = moving.filter { index in
            guard let file = members[index].output.partialFile, let failure = fileFailure[ObjectIdentifier(file)] else { return true }
            failed(index, .io(failure))
            return false
        }

        // 2. The finished marks.
        var saves: [(index: Int, keeper: RecordKeeper, record: ResumeRecord)] = []
        for index in moving {
            do throws(StoreError) {
                if let save = try members[index].output.markFinished(hash: members[index].hash, identity: identities[index]) {
                    saves.append((index, save.keeper, save.record))
                }
            } catch {
                failed(index, .io(error))
            }
        }
        let saveFailures = RecordKeeper.saveTogether(saves.map { ($0.keeper, $0.record) })
        for (save, failure) in zip(saves, saveFailures) {
            guard let failure else { continue }
            members[save.index].output.unmarkFinished()
            failed(save.index, .io(failure))
        }

        // 3. The names.
        for index in moving where results[index] == nil {
            let member = members[index]
            do throws(OutputError) {
                try member.output.moveIntoPlace(replacing: member.replacing, hash: member.hash, written: identities[index])
                // Marked once it has its name (the rename moves the change time, which a mark
                // bounds), made durable by the directory's sync, if it is still exactly the file
                // synced (another program may have written into it since).
                if let key = member.output.requestKey, let identity = identities[index] {
                    member.output.partialFile?.markFinished(request: key, expecting: identity)
                }
                placed.append(index)
            } catch {
                failed(index, error)
            }
        }

        // A file already in place that only its record proves gets the mark its rename would have
        // given it, made durable with the others by the directory's sync.
        for index in placed where members[index].output.alreadyInPlace { members[index].output.markFoundFinished() }

        // 4. The directories, 5. the records and locks.
        let directories = Set(placed.compactMap { members[$0].output.finalPath.map(AbsolutePath.directory(of:)) })
        for directory in directories.sorted() { FileIO.syncDirectory(containing: directory + "/.") }
        if !directories.isEmpty { CrashPoint.reach(.afterDirectorySync) }
        for index in placed {
            results[index] = .success(members[index].output.forgetFinished())
        }
        return results.map { $0 ?? .failure(OutputError(.io, "internal: a finishing download was left without an outcome")) }
    }
}
