import Foundation
import HaulJSON

/// A move (`haul.move`) under way, kept in the store from before its first new name is made until
/// its last old name is gone (schema migration `move-intent`): what a process that died in the
/// middle left on disk, so whoever opens the download next leaves one name per file.
///
/// A move gives each file its new name by hard link, changes the store's place for the download
/// (`relocate`, which sets `relocated` in the same transaction), then removes the old names. A
/// crash anywhere between leaves files with two names; `leftover` says which name of each goes.
package struct MoveIntent: Codable, Sendable, Equatable {
    /// One file's two names.
    package struct Name: Codable, Sendable, Equatable {
        /// Where the file was.
        package var old: String
        /// The name it is given.
        package var new: String
        /// The finished file's identity when its finished mark proved it, to be marked again at the
        /// name kept (each change of its names touches its change time, which the mark bounds);
        /// nil for any other file.
        package var marked: FileIdentity?

        package init(old: String, new: String, marked: FileIdentity? = nil) {
            self.old = old
            self.new = new
            self.marked = marked
        }
    }

    /// A destination's lock, as `DestinationLock` takes it: whoever finishes the move holds both
    /// the old and the new one, so a move still under way in a live process is never touched.
    package struct Lock: Codable, Sendable, Equatable {
        package var path: String
        package var key: String

        package init(path: String, key: String) {
            self.path = path
            self.key = key
        }
    }

    /// Each file being moved.
    package var names: [Name]
    /// The old destination's lock, then the new one's.
    package var locks: [Lock]
    /// The store names the new place: the old names are the ones left over.
    package var relocated = false
    /// The download ran or waited before the move paused it, and goes back to the queue after.
    package var resumes = false

    package init(names: [Name], locks: [Lock], relocated: Bool = false, resumes: Bool = false) {
        self.names = names
        self.locks = locks
        self.relocated = relocated
        self.resumes = resumes
    }

    /// The name of each file that goes, with the one that stays: the new names until the store
    /// names the new place, the old ones after.
    package var leftover: [(remove: String, keep: String, marked: FileIdentity?)] {
        names.map { relocated ? ($0.old, $0.new, $0.marked) : ($0.new, $0.old, $0.marked) }
    }

    /// The text of the `move_intent` column.
    package func encoded() throws(StoreError) -> String {
        do {
            return try JSONWriter.text(encoding: self)
        } catch {
            throw StoreError(.io, "cannot encode a move's intent: \(error)")
        }
    }

    /// Reads the `move_intent` column; nil for text that is not an intent (never written by Haul).
    package static func read(_ text: String) -> MoveIntent? {
        try? JSONValue.decode(MoveIntent.self, from: text)
    }
}
