import Foundation
import Haul
import HaulCore
import HaulRPC

/// The aria2 options `aria2.addUri` and `aria2.changeOption` take, turned into a Haul request.
/// Every value arrives as a string (aria2 clients also send some as numbers or lists).
///
/// Paths from a client are as untrusted as names from a server: `dir` must lie inside the
/// directory `haul serve` was given, and each component of `dir` and `out` goes through
/// `FileNameSanitizer`; `.` and `..` are refused. Nothing a client sends names a place outside.
struct Aria2Options {
    let root: String

    /// The request for `uri` with `options`, and whether it is to be added paused.
    func request(for uri: String, _ options: [String: JSONValue]) throws(RPCError) -> (request: DownloadRequest, paused: Bool) {
        guard let url = URL(string: uri), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw RPCError("\(uri) is not an http or https URI")
        }
        let directory = try self.directory(options["dir"])
        let destination: Destination
        if let out = try Self.text(options["out"], "out"), !out.isEmpty {
            let file = try Self.join(directory, out, what: "out")
            try confined(file, what: "out", out)
            destination = .file(file)
        } else {
            destination = .directory(directory)
        }
        var request = DownloadRequest(url: url, destination: destination)
        for line in try Self.headerLines(options["header"]) {
            do throws(HeaderLineError) {
                let field = try HTTPHeaders.field(line: line)
                request.headers.add(field.name, field.value)
            } catch .reserved(let name) {
                throw RPCError("header \(name) is set by Haul itself")
            } catch {
                throw RPCError("header \"\(line)\" is not a valid NAME: VALUE header")
            }
        }
        if let connections = try Self.connections(options) { request.connections = connections }
        if let checksum = try Self.text(options["checksum"], "checksum") {
            do throws(ChecksumError) {
                request.checksum = try Checksum(parsing: checksum)
            } catch {
                throw RPCError("checksum: \(error.message) (aria2 form: sha-256=HEX)")
            }
        }
        if let limit = try Self.speed(options["max-download-limit"], "max-download-limit"), limit > 0 {
            request.rateLimiter = RateLimiter(bytesPerSecond: limit)
        }
        let paused = try Self.text(options["pause"], "pause") == "true"
        return (request, paused)
    }

    /// `dir`: the root itself when absent; a relative path inside it; an absolute path only when
    /// it lies inside it. Judged on the file system, not on the strings: both sides' symlinks are
    /// resolved (a root given through a symlink takes the `dir` its clients read back from
    /// `getGlobalOption`), and a path that leaves the root through a symlink is refused.
    func directory(_ value: JSONValue?) throws(RPCError) -> String {
        guard let text = try Self.text(value, "dir"), !text.isEmpty else { return root }
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

    static func text(_ value: JSONValue?, _ name: String) throws(RPCError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case .int(let number)?: return String(number)
        case .bool(let flag)?: return flag ? "true" : "false"
        default: throw RPCError("option \(name) must be a string")
        }
    }

    static func headerLines(_ value: JSONValue?) throws(RPCError) -> [String] {
        switch value {
        case nil, .null?: return []
        case .string(let line)?: return [line]
        case .array(let lines)?:
            var result: [String] = []
            for line in lines {
                guard let text = line.string else { throw RPCError("option header must be a list of strings") }
                result.append(text)
            }
            return result
        default: throw RPCError("option header must be a string or a list of strings")
        }
    }

    /// `split` and `max-connection-per-server`: connections for one file, the smaller of the two.
    static func connections(_ options: [String: JSONValue]) throws(RPCError) -> Int? {
        var result: Int?
        for name in ["split", "max-connection-per-server"] {
            guard let text = try text(options[name], name) else { continue }
            guard let value = Int(text), (1...16).contains(value) else { throw RPCError("\(name) must be 1 to 16") }
            result = min(result ?? value, value)
        }
        return result
    }

    /// A speed as aria2 writes it: bytes, or with K or M (1024-based); 0 is no limit.
    static func speed(_ value: JSONValue?, _ name: String) throws(RPCError) -> Int64? {
        guard let text = try text(value, name)?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        var digits = text
        var factor: Int64 = 1
        switch text.last?.uppercased() {
        case "K": factor = 1024
        case "M": factor = 1024 * 1024
        default: break
        }
        if factor > 1 { digits.removeLast() }
        guard let number = Int64(digits), number >= 0, number <= Int64.max / factor else {
            throw RPCError("\(name) must be a number of bytes per second, optionally with K or M: \(text)")
        }
        return number * factor
    }
}
