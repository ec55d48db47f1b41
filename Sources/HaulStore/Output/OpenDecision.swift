import Foundation
import HaulCore

/// What opening a download's output does with what an earlier run left: a pure table of the
/// record loaded (if any), the partial file's presence and what is at the final path, tested
/// without a file system (`OpenDecisionTests`).
package enum OpenDecision: Equatable, Sendable {
    /// An earlier run finished and put the file in place, and it is still exactly that file (its
    /// finished record, or the `FinishedMark` on the file, says so).
    case useFinishedFile
    /// Nothing to continue: clear the partial path and start a new partial.
    case startFresh
    /// Continue the partial the record describes.
    case continuePartial
    /// Take over the file at the destination (`existingFile: .continueIt`) as the partial.
    case adoptExistingFile
    /// Stop before anything is touched.
    case refuse(Refusal)

    /// Why opening stops.
    package enum Refusal: Equatable, Sendable {
        /// The final path is a symlink.
        case symlink
        /// A file is there and the request neither replaces nor continues it.
        case exists
        /// Both the file and an unfinished download of it are there.
        case fileAndPartialBoth
        /// What is there to continue is not a regular file.
        case notRegular
    }

    /// The record an earlier run left, as far as opening cares.
    package struct Loaded: Equatable, Sendable {
        /// Same method and range as this request (else it is another request's partial).
        package var matchesRequest: Bool
        /// The partial is a file adopted with `.continueIt`.
        package var isAdopted: Bool
        /// The record says the file was finished and moved into place.
        package var isFinished: Bool
        /// An earlier `.continueIt` found the file did not match and began a new download beside it.
        package var replacesExistingFile: Bool
        /// The record says the file was finished, and the partial is still the file it marked
        /// (same inode, size and modification time): the process died between the finished mark
        /// and the rename, with every byte synced.
        package var partialIsFinishedFile: Bool

        /// The record's facts.
        package init(matchesRequest: Bool, isAdopted: Bool, isFinished: Bool, replacesExistingFile: Bool, partialIsFinishedFile: Bool = false) {
            self.matchesRequest = matchesRequest
            self.isAdopted = isAdopted
            self.isFinished = isFinished
            self.replacesExistingFile = replacesExistingFile
            self.partialIsFinishedFile = partialIsFinishedFile
        }
    }

    /// The decision, and whether the record is forgotten (it vouches for nothing any more).
    /// - Parameters:
    ///   - loaded: the record found, nil for none (or one that could not be read).
    ///   - partialExists: something is at the partial path.
    ///   - finishedFileInPlace: for a finished record, the final file is still the one it names
    ///     (inode, size, modification time) and the request does not replace it.
    ///   - final: what is at the final path, nil while the name is not known (a directory download).
    ///   - finalIsProvenFinished: the file at the final path (in a directory download, at the name
    ///     its URL gives) carries this request's `FinishedMark`, unchanged since (an earlier run's
    ///     finished download, its record long forgotten).
    package static func decide(
        loaded: Loaded?, partialExists: Bool, finishedFileInPlace: Bool, final: PathKind?, policy: ExistingFilePolicy,
        finalIsProvenFinished: Bool = false
    ) -> (decision: OpenDecision, forgetsRecord: Bool) {
        var usable = loaded
        if let record = usable {
            // Another request's partial, an adoption already put back, a partial removed by hand,
            // or a finished file changed since: the record vouches for nothing.
            let gone = !partialExists && (record.isAdopted || !record.isFinished)
            if !record.matchesRequest || gone { usable = nil }
        }
        if let record = usable, record.isFinished {
            if finishedFileInPlace { return (.useFinishedFile, false) }
            // Killed before the rename: the partial holds the whole file, synced, and is continued
            // (which needs no more bytes). Otherwise the finished file changed or went.
            if !(partialExists && record.partialIsFinishedFile) { usable = nil }
        }
        let forgets = usable == nil
        // Run again after it completed: nothing to do, unless a new download is asked for.
        if usable == nil, !partialExists, finalIsProvenFinished, final == nil || final == .regular, policy != .overwrite {
            return (.useFinishedFile, forgets)
        }
        if let final, final != .missing {
            switch (policy, final) {
            case (_, .symlink):
                return (.refuse(.symlink), forgets)
            case (.refuse, _):
                return (.refuse(.exists), forgets)
            case (.overwrite, _):
                break
            case (.continueIt, _) where usable?.replacesExistingFile == true:
                break
            case (.continueIt, _):
                if usable != nil { return (.refuse(.fileAndPartialBoth), forgets) }
                return (final == .regular ? .adoptExistingFile : .refuse(.notRegular), forgets)
            }
        }
        return (usable == nil ? .startFresh : .continuePartial, forgets)
    }
}
