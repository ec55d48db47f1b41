import Foundation
import Haul
import HaulCore
import HaulRPC

/// `aria2.addUri`'s URIs and options turned into a Haul request. The values are read and checked
/// by `Aria2OptionValues` (pure); this adds what needs the file system and the request type.
///
/// Paths from a client are as untrusted as names from a server: `dir` must lie inside the
/// directory `haul serve` was given, and each component of `dir` and `out` goes through
/// `FileNameSanitizer`; `.` and `..` are refused. Nothing a client sends names a place outside.
struct Aria2Options {
    let root: String

    /// The request for `uris` (the first is the download, the others its mirrors: aria2's further
    /// URIs point at the same file; Haul proves each before use) with `options`, and whether it is
    /// to be added paused.
    func request(for uris: [String], _ options: [String: JSONValue]) throws(RPCError) -> (request: DownloadRequest, paused: Bool) {
        var urls: [URL] = []
        for uri in uris {
            guard let url = URL(string: uri), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
                throw RPCError("\(Redaction.url(uri)) is not an http or https URI")
            }
            urls.append(url)
        }
        guard let url = urls.first else { throw RPCError.invalidParams("aria2.addUri takes a list of URIs first") }
        let values = try Aria2OptionValues.download(options, uris: urls)
        let directory = try self.directory(values.dir)
        let destination: Destination
        if let out = values.out {
            let file = try Self.join(directory, out, what: "out")
            try confined(file, what: "out", out)
            destination = .file(file)
        } else {
            destination = .directory(directory)
        }
        var request = DownloadRequest(url: url, destination: destination)
        request.headers = values.headers
        request.options = values.options
        request.mirrors = Array(urls.dropFirst())
        if let policy = values.existingFile { request.existingFile = policy }
        return (request, values.paused)
    }

    /// `dir`: the root itself when absent; a relative path inside it; an absolute path only when
    /// it lies inside it. Judged on the file system, not on the strings: both sides' symlinks are
    /// resolved (a root given through a symlink takes the `dir` its clients read back from
    /// `getGlobalOption`), and a path that leaves the root through a symlink is refused.
    func directory(_ given: String?) throws(RPCError) -> String {
        guard let text = given, !text.isEmpty else { return root }
        var relative = text
        if text.hasPrefix("/") {
            let real = ConfinedPath.resolved((text as NSString).standardizingPath)
            guard let inside = ConfinedPath.relative(real, within: ConfinedPath.resolved(root)) else {
                throw RPCError("dir \(text) is outside the download directory \(root)")
            }
            relative = inside
        }
        let directory = try Self.join(root, relative, what: "dir")
        try confined(directory, what: "dir", text)
        return directory
    }

    /// Refuses `path` (made by `join` from the root) when it resolves outside the root: one of its
    /// components is a symlink that leads out.
    func confined(_ path: String, what: String, _ given: String) throws(RPCError) {
        guard ConfinedPath.relative(ConfinedPath.resolved(path), within: ConfinedPath.resolved(root)) != nil else {
            throw RPCError("\(what) \"\(given)\" leads outside the download directory \(root) through a symbolic link")
        }
    }

    /// `base` + the components of `path`, each sanitized; `.`, `..` and unusable ones refused.
    static func join(_ base: String, _ path: String, what: String) throws(RPCError) -> String {
        var result = base
        for component in path.split(separator: "/", omittingEmptySubsequences: true).map(String.init) {
            guard component != ".", component != "..", let safe = FileNameSanitizer.sanitize(component) else {
                throw RPCError("\(what) \"\(path)\" names a place outside the download directory or an unusable name")
            }
            result = result.hasSuffix("/") ? result + safe : result + "/" + safe
        }
        return result
    }
}
