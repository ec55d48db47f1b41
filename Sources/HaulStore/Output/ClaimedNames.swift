import Foundation
import HaulCore
import Synchronization

/// The final paths that downloads of this process chose from responses: two downloads of one batch
/// named alike by their servers (`report.pdf` twice) must not both take the name, or one file would
/// be lost. A name is `active` while its download runs and `done` once that file is in place.
package final class ClaimedNames: Sendable {
    /// The process's names.
    package static let shared = ClaimedNames()
    private struct Names {
        var active: Set<String> = []
        var done: Set<String> = []
    }

    private let names = Mutex(Names())

    /// Claims `name`, or the first free `stem (k).ext` (as browsers do) when another download of
    /// this process is writing it, or already put a file there and `replacing` was not asked for.
    /// Returns the name claimed, whether it had to change, and what was at its path when this
    /// looked (`seen`; nil when it did not look there).
    ///
    /// `isOwn`: whether the file at a path is the claiming download's own finished file (the same
    /// request run again). An earlier run may have saved it as `stem (k).ext` because another
    /// download of that run took the name: when a file that is not its own is at `name`, the
    /// numbered names are looked at in order, while there are files at them, and one holding its
    /// own file is claimed (not counted as changed). Else `name` is claimed, to be refused.
    package func claim(_ name: String, replacing: Bool, path: (String) -> String, isOwn: (String) -> Bool = { _ in false }) -> (
        name: String, renamed: Bool, seen: PathKind?
    ) {
        names.withLock { names in
            let wanted = path(name)
            let taken = names.active.contains(wanted) || (names.done.contains(wanted) && !replacing)
            let (stem, ext) = Self.split(name)
            guard taken else {
                let seen = replacing ? nil : PathKind.of(wanted)
                if let seen, seen != .missing, !isOwn(wanted) {
                    var index = 1
                    while true {
                        let candidate = Self.numbered(stem, ext, index)
                        let candidatePath = path(candidate)
                        guard PathKind.of(candidatePath) != .missing else { break }
                        if !names.active.contains(candidatePath), !names.done.contains(candidatePath), isOwn(candidatePath) {
                            names.active.insert(candidatePath)
                            return (candidate, false, nil)
                        }
                        index += 1
                    }
                    names.active.insert(wanted)
                    return (name, false, nil)
                }
                names.active.insert(wanted)
                return (name, false, seen)
            }
            var index = 1
            while true {
                let candidate = Self.numbered(stem, ext, index)
                let candidatePath = path(candidate)
                if !names.active.contains(candidatePath), !names.done.contains(candidatePath) {
                    if PathKind.of(candidatePath) == .missing {
                        names.active.insert(candidatePath)
                        return (candidate, true, .missing)
                    }
                    if isOwn(candidatePath) {
                        names.active.insert(candidatePath)
                        return (candidate, false, nil)
                    }
                }
                index += 1
            }
        }
    }

    /// The download that claimed `path` ended; `completed` when its file is now there.
    package func release(_ path: String, completed: Bool) {
        names.withLock { names in
            names.active.remove(path)
            if completed { names.done.insert(path) }
        }
    }

    /// `stem (index)ext`, the stem cut (between characters) so that the name stays within
    /// `FileNameSanitizer.maximumByteCount` bytes, as the name it stands for did.
    static func numbered(_ stem: String, _ ext: String, _ index: Int) -> String {
        let number = " (\(index))"
        let room = FileNameSanitizer.maximumByteCount - number.utf8.count
        guard stem.utf8.count + ext.utf8.count > room else { return stem + number + ext }
        // An extension too long to keep is cut with the rest.
        guard ext.utf8.count < room else { return FileNameSanitizer.prefix(of: stem + ext, withinBytes: room) + number }
        return FileNameSanitizer.prefix(of: stem, withinBytes: room - ext.utf8.count) + number + ext
    }

    /// `report.tar.gz` → (`report.tar`, `.gz`); a leading dot is not an extension.
    static func split(_ name: String) -> (stem: String, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        return (String(name[..<dot]), String(name[dot...]))
    }
}
