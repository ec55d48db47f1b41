import Foundation
import Haul
import HaulCore
import HaulRPC

/// Haul's own methods beside aria2's (`haul.*`): what aria2 never does with a download's files.
extension RPCService {
    static let haulMethods: [String: Method] = [
        "haul.removeWithFiles": { try $0.removeWithFiles($1) },
        "haul.move": { try $0.moveTask($1) },
        "haul.fileLink": { try $0.fileLink($1) },
    ]

    /// `haul.removeWithFiles(gid)`: the download leaves the queue with the files it wrote, and
    /// only those (see `DownloadQueue.removeWithFiles`); a running one is stopped first. Answers
    /// `{gid, deleted: [{role, path}], kept: [{role, path, reason}]}`. With `{dryRun: true}` as
    /// its second parameter it answers the same for what it would delete and keep, and changes
    /// nothing (a confirmation that lists the files).
    func removeWithFiles(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let options = try RPCParams.options(params, at: 1)
        if let unknown = options.keys.first(where: { $0 != "dryRun" }) {
            throw RPCError.invalidParams("haul.removeWithFiles takes {dryRun}; \(unknown) is not one of them")
        }
        var dryRun = false
        if let value = options["dryRun"] {
            guard case .bool(let flag) = value else { throw RPCError.invalidParams("haul.removeWithFiles: dryRun must be true or false") }
            dryRun = flag
        }
        let before = try item(id, gid)
        let root = ConfinedPath.resolved(settings.root)
        if dryRun {
            let preview = Result { () throws(DownloadError) -> FileRemoval in
                try queue.filesRemovalWouldDelete(id) { ConfinedPath.relative(ConfinedPath.resolved($0), within: root) != nil }
            }
            switch preview {
            case .success(let would): return Self.answer(gid, would)
            case .failure(let error): throw RPCError("haul.removeWithFiles for GID \(gid): \(error.message)")
            }
        }
        // Through a Result: `catch let error where error.heldElsewhere` on this typed throw crashes
        // Swift 6.3.1's ownership verifier ("Found outside of lifetime use").
        let outcome = Result { () throws(DownloadError) -> FileRemoval in
            try queue.removeWithFiles(id, within: settings.root) { ConfinedPath.relative(ConfinedPath.resolved($0), within: root) != nil }
        }
        let removal: FileRemoval
        switch outcome {
        case .success(let done): removal = done
        case .failure(let error):
            let refusal = error.heldElsewhere ? "refused, nothing was deleted: " : ""
            throw RPCError("haul.removeWithFiles for GID \(gid): \(refusal)\(error.message)")
        }
        // A running one reports its own stop; a waiting or paused one has no transfer to report it.
        if before.state == .queued || before.state == .paused { notify("aria2.onDownloadStop", id) }
        return Self.answer(gid, removal)
    }

    /// `haul.removeWithFiles`'s answer.
    private static func answer(_ gid: String, _ removal: FileRemoval) -> JSONValue {
        [
            "gid": .string(gid),
            "deleted": .array(removal.deleted.map { ["role": .string($0.role.rawValue), "path": .string($0.path)] }),
            "kept": .array(
                removal.kept.map { ["role": .string($0.role.rawValue), "path": .string($0.path), "reason": .string($0.keptBecause ?? "")] }),
        ]
    }

    /// `haul.move(gid, {dir?, out?})`: the download goes to another directory or name inside the
    /// download directory (see `DownloadQueue.move`). `dir` as in `aria2.addUri` (relative to the
    /// root, or absolute inside it; default: where it is); `out` a file name (default: its name
    /// now, or the server's for a download into a directory). Answers `{gid, status, dir, path,
    /// moved: [{role, from, to}], finishedMarkKept, resumed}`.
    func moveTask(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let options = try RPCParams.options(params, at: 1)
        if let unknown = options.keys.first(where: { $0 != "dir" && $0 != "out" }) {
            throw RPCError.invalidParams("haul.move takes {dir, out}; \(unknown) is not one of them")
        }
        func text(_ key: String) throws(RPCError) -> String? {
            guard let value = options[key] else { return nil }
            guard let string = value.string, !string.isEmpty else { throw RPCError.invalidParams("haul.move: \(key) must be a non-empty string") }
            return string
        }
        let dir = try text("dir")
        let out = try text("out")
        guard dir != nil || out != nil else { throw RPCError.invalidParams("haul.move needs dir, out or both") }
        let before = try item(id, gid)
        let root = ConfinedPath.resolved(settings.root)
        // A download `haul queue add` put outside the root is not this server's to move.
        guard ConfinedPath.relative(ConfinedPath.resolved(status(of: before).path), within: root) != nil else {
            throw RPCError("GID \(gid) is outside the download directory \(settings.root); haul serve moves only what lies inside it")
        }
        let place = Aria2Options(root: settings.root)
        let directory = try dir.map { path throws(RPCError) in try place.directory(path) } ?? status(of: before).dir
        try place.confined(directory, what: "dir", dir ?? directory)
        let destination: Destination
        if let out {
            guard !out.contains("/") else { throw RPCError.invalidParams("haul.move: out is a file name; give the directory as dir") }
            let file = try Aria2Options.join(directory, out, what: "out")
            try place.confined(file, what: "out", out)
            destination = .file(file)
        } else if before.destinationIsDirectory {
            destination = .directory(directory)
        } else {
            destination = .file(try Aria2Options.join(directory, AbsolutePath.name(of: before.destination), what: "out"))
        }
        // Confined at the last step too: a parent swapped for a symlink after the checks above
        // never takes a file out of the root.
        let move = try queue.move(id, to: destination, within: settings.root)
        let after = try item(id, gid)
        let shown = status(of: after)
        return [
            "gid": .string(gid), "status": .string(shown.status), "dir": .string(shown.dir), "path": .string(shown.path),
            "moved": .array(move.moved.map { ["role": .string($0.role.rawValue), "from": .string($0.path), "to": .string($0.movedTo ?? "")] }),
            "finishedMarkKept": .bool(move.finishedMarkKept), "resumed": .bool(move.resumed),
        ]
    }
}
