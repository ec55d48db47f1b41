import Foundation

// fuzz/run.sh compiles this file into one module with HaulCore's and HaulRPC's sources
// (Aria2OptionValuesFuzz), where there is no HaulCore or HaulRPC to import.
#if canImport(HaulCore)
    import HaulCore
#endif
#if canImport(HaulRPC)
    import HaulRPC
#endif

/// What `aria2.addUri`'s options ask of one download, every value read, range-checked and typed.
/// Paths are still as the client gave them: only `Aria2Options`, which sees the file system, can
/// confine them to the download directory.
struct Aria2DownloadOptions: Sendable, Equatable {
    /// `dir` as given; nil: the download directory itself.
    var dir: String?
    /// `out` as given; nil: the name the server gives.
    var out: String?
    /// `header`, then `user-agent` and `referer`: the fields to send, in order.
    var headers = HTTPHeaders()
    /// `pause`.
    var paused = false
    /// `continue` or `allow-overwrite`; nil: an existing file is refused.
    var existingFile: ExistingFilePolicy?
    /// The download's options, the request's as they are (`shown(_:)` reads them back):
    /// `split` and `max-connection-per-server` (the smaller, clamped to what Haul opens),
    /// `checksum`, `max-download-limit` (1 to `SpeedLimit.maximumBytesPerSecond`), the proxy every
    /// URI goes through with its user and password folded in ("": none at all; nil: the
    /// environment of `haul serve` decides), `no-proxy`, `check-certificate` and `remote-time`.
    var options = DownloadOptions()
}

/// The values of aria2's options as clients send them, read where they enter `haul serve`: each
/// one is honoured (turned into a typed value within Haul's bounds), ignored (only options that
/// mean nothing for an HTTP download: BitTorrent, Metalink, FTP, uploading), or refused with an
/// error that names it. Nothing is dropped: an option that would change what aria2 does and that
/// Haul cannot do is refused, so a client never believes it got what it did not.
///
/// Pure (no file system, no queue): `Aria2Options` and `RPCService` use it, and
/// `fuzz/Targets/Aria2OptionValuesFuzz.swift` compiles it with HaulCore and HaulRPC alone.
enum Aria2OptionValues {
    /// The options `aria2.addUri` honours. An empty value asks for nothing (clients send a form's
    /// empty fields); for a proxy it asks for none at all.
    static let honoured: Set<String> = [
        "dir", "out", "header", "user-agent", "referer", "split", "max-connection-per-server", "checksum", "max-download-limit", "pause",
        "check-certificate", "continue", "allow-overwrite", "auto-file-renaming", "dry-run", "all-proxy", "all-proxy-user",
        "all-proxy-passwd", "http-proxy", "http-proxy-user", "http-proxy-passwd", "https-proxy", "https-proxy-user", "https-proxy-passwd",
        "no-proxy", "remote-time",
    ]

    /// aria2's options that mean nothing for a download over HTTP or HTTPS, taken and ignored:
    /// those of BitTorrent, Metalink, FTP and SFTP, and of uploading (Haul never uploads). A
    /// downloaded `.torrent` or `.metalink` file is saved as it is (`follow-torrent`,
    /// `follow-metalink`). Besides these, any name that starts with `bt-`, `metalink-` or `ftp-`.
    static let ignored: Set<String> = [
        "enable-peer-exchange", "follow-torrent", "follow-metalink", "index-out", "max-upload-limit", "pause-metadata",
        "rpc-save-upload-metadata", "seed-ratio", "seed-time", "select-file", "ssh-host-key-md",
    ]
    static let ignoredPrefixes = ["bt-", "metalink-", "ftp-"]

    /// Why a known aria2 option is refused, for the error; other names get a general reason.
    static let refusalReasons: [String: String] = {
        var reasons: [String: String] = [
            "gid": "haul gives every download its GID itself",
            "http-user": "send the credentials in an Authorization header (the header option)",
            "http-passwd": "send the credentials in an Authorization header (the header option)",
            "dry-run": "haul serve downloads what it is given; only dry-run=false is taken",
            "auto-file-renaming": "haul never renames a file: an existing one is refused unless continue or allow-overwrite is true",
        ]
        for name in ["max-tries", "retry-wait", "timeout", "connect-timeout", "lowest-speed-limit", "max-file-not-found", "max-resume-failure-tries"] {
            reasons[name] = "retries and timeouts are haul serve's own, the same for every download (--retry, --retry-wait, --connect-timeout, --stall-timeout)"
        }
        for name in ["min-split-size", "piece-length", "stream-piece-selector", "uri-selector"] {
            reasons[name] = "haul cuts a file into pieces by itself, from the server's speed"
        }
        return reasons
    }()

    /// Whether `name` is taken by `aria2.addUri` (honoured or ignored).
    static func isTaken(_ name: String) -> Bool {
        honoured.contains(name) || ignored.contains(name) || ignoredPrefixes.contains { name.hasPrefix($0) }
    }

    /// Reads `aria2.addUri`'s options for a download of `uris` (the first is the download's URL,
    /// the others its mirrors: `referer=*` names the first, and the proxy options must send them
    /// all the same way). Names are judged in sorted order, so the same options always get the
    /// same error.
    static func download(_ options: [String: JSONValue], uris: [URL]) throws(RPCError) -> Aria2DownloadOptions {
        for name in options.keys.sorted() where !isTaken(name) {
            let reason = refusalReasons[name] ?? "haul serve does not support it"
            throw RPCError("option \(shown(name)) cannot be honoured: \(reason); nothing was added")
        }
        var result = Aria2DownloadOptions()
        result.dir = try given(options["dir"], "dir")
        result.out = try given(options["out"], "out")
        result.headers = try headers(options, firstURI: uris.first)
        result.options.connections = try connections(options)
        if let checksum = try given(options["checksum"], "checksum") {
            do throws(ChecksumError) {
                result.options.checksum = try Checksum(parsing: checksum)
            } catch {
                throw RPCError("checksum: \(error.message) (aria2 form: sha-256=HEX)")
            }
        }
        if let limit = try speed(options["max-download-limit"], "max-download-limit"), limit > 0 {
            result.options.bytesPerSecond = limit
        }
        result.paused = try flag(options["pause"], "pause") ?? false
        if let verifies = try flag(options["check-certificate"], "check-certificate") { result.options.verifyTLS = verifies }
        result.options.usesRemoteTime = try flag(options["remote-time"], "remote-time") ?? false
        if try flag(options["continue"], "continue") == true {
            result.existingFile = .continueIt
        } else if try flag(options["allow-overwrite"], "allow-overwrite") == true {
            result.existingFile = .overwrite
        }
        // aria2's defaults that Haul cannot give: taken only when they ask for what Haul does.
        for (name, haulsValue) in [("auto-file-renaming", false), ("dry-run", false)] {
            if let value = try flag(options[name], name), value != haulsValue {
                throw RPCError("option \(name)=\(value) cannot be honoured: \(refusalReasons[name] ?? ""); nothing was added")
            }
        }
        result.options.proxy = try proxy(options, schemes: uris.map { $0.scheme?.lowercased() ?? "http" })
        if let noProxy = try given(options["no-proxy"], "no-proxy") {
            guard !noProxy.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw RPCError("no-proxy needs host names, domains or addresses separated by commas")
            }
            result.options.noProxy = noProxy
        }
        return result
    }

    /// A download's options as `aria2.getOption` shows them, beside its `dir` and `out`: what
    /// `download(_:uris:)` reads, in aria2's names. The proxy without its password: a secret is
    /// never read back.
    static func shown(_ options: DownloadOptions?) -> [String: JSONValue] {
        var shown: [String: JSONValue] = ["max-download-limit": .string(String(options?.bytesPerSecond ?? 0))]
        guard let options else { return shown }
        if let connections = options.connections {
            shown["split"] = .string(String(connections))
            shown["max-connection-per-server"] = .string(String(connections))
        }
        if let checksum = options.checksum { shown["checksum"] = .string(checksum.description) }
        if let proxy = options.proxy { shown["all-proxy"] = .string(Redaction.withoutPassword(proxy)) }
        if let noProxy = options.noProxy { shown["no-proxy"] = .string(noProxy) }
        if !options.verifyTLS { shown["check-certificate"] = "false" }
        if options.usesRemoteTime { shown["remote-time"] = "true" }
        return shown
    }

    /// `aria2.changeOption` changes a download's `max-download-limit` and nothing else (the rest
    /// is fixed once the download is added); anything else is refused by name. Returns the new
    /// limit (0: none), or nil when none was given.
    static func downloadChange(_ options: [String: JSONValue]) throws(RPCError) -> Int64? {
        for name in options.keys.sorted() where name != "max-download-limit" {
            throw RPCError("option \(shown(name)) cannot be changed by haul's aria2.changeOption (only max-download-limit)")
        }
        return try speed(options["max-download-limit"], "max-download-limit")
    }

    /// What `aria2.changeGlobalOption` changes, read whole before anything changes.
    struct GlobalChange: Sendable, Equatable {
        /// `max-concurrent-downloads`: 1 to the server's maximum.
        var concurrency: Int?
        /// `max-overall-download-limit` (0: none).
        var overallBytesPerSecond: Int64?
    }

    /// The names `aria2.changeGlobalOption` takes.
    static let globalNames = ["max-concurrent-downloads", "max-overall-download-limit"]

    /// Reads `aria2.changeGlobalOption`'s options; downloads at once may be 1 to `maximumConcurrency`.
    static func globalChange(_ options: [String: JSONValue], maximumConcurrency: Int) throws(RPCError) -> GlobalChange {
        for name in options.keys.sorted() where !globalNames.contains(name) {
            throw RPCError(
                "option \(shown(name)) cannot be changed by haul's aria2.changeGlobalOption (only \(globalNames.joined(separator: ", ")))")
        }
        var change = GlobalChange()
        if let text = try given(options["max-concurrent-downloads"], "max-concurrent-downloads") {
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)), value >= 1, value <= maximumConcurrency else {
                throw RPCError("max-concurrent-downloads must be 1 to \(maximumConcurrency), got \(shown(text))")
            }
            change.concurrency = value
        }
        change.overallBytesPerSecond = try speed(options["max-overall-download-limit"], "max-overall-download-limit")
        return change
    }

    // MARK: values

    /// A value as text: a string as it is, a number or a flag as aria2 would write it; nil when
    /// absent or null. Clients send aria2's string values as JSON numbers or booleans too.
    static func text(_ value: JSONValue?, _ name: String) throws(RPCError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case .int(let number)?: return String(number)
        case .bool(let flag)?: return flag ? "true" : "false"
        default: throw RPCError("option \(name) must be a string")
        }
    }

    /// `text`, with an empty value taken as not given (a form's empty field asks for nothing).
    static func given(_ value: JSONValue?, _ name: String) throws(RPCError) -> String? {
        guard let text = try text(value, name), !text.isEmpty else { return nil }
        return text
    }

    /// aria2's booleans: `true` or `false`, exactly.
    static func flag(_ value: JSONValue?, _ name: String) throws(RPCError) -> Bool? {
        switch try given(value, name) {
        case nil: return nil
        case "true": return true
        case "false": return false
        case let other?: throw RPCError("option \(name) must be true or false, got \(shown(other))")
        }
    }

    /// A speed as aria2 writes it: bytes per second, or with K or M (1024-based); 0 is no limit.
    /// At most `SpeedLimit.maximumBytesPerSecond`: a larger one is refused with the bound named.
    static func speed(_ value: JSONValue?, _ name: String) throws(RPCError) -> Int64? {
        guard let text = try given(value, name)?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        var digits = Substring(text)
        var factor: Int64 = 1
        switch text.last {
        case "K", "k": factor = 1024
        case "M", "m": factor = 1024 * 1024
        default: break
        }
        if factor > 1 { digits = digits.dropLast() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw RPCError("\(name) must be a number of bytes per second, optionally with K or M: \(shown(text))")
        }
        // Digits only, so nil means beyond Int64: above the bound as well.
        let maximum = SpeedLimit.maximumBytesPerSecond
        guard let number = Int64(digits), number <= maximum / factor else {
            throw RPCError("\(name) \(shown(text)) is above the largest speed limit haul takes, \(SpeedLimit.maximumDescription); 0 is no limit")
        }
        return number * factor
    }

    /// `split` and `max-connection-per-server`: connections for one file, the smaller of the two,
    /// clamped to `SegmentEligibility.maximumConnections` (aria2 takes any number; a client whose
    /// default is 32 must still be able to add, and `getOption` then says 16).
    static func connections(_ options: [String: JSONValue]) throws(RPCError) -> Int? {
        var result: Int?
        for name in ["split", "max-connection-per-server"] {
            guard let text = try given(options[name], name)?.trimmingCharacters(in: .whitespaces) else { continue }
            let isDigits = !text.isEmpty && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            guard isDigits, text.contains(where: { $0 != "0" }) else {
                throw RPCError("\(name) must be a whole number of connections, at least 1: \(shown(text))")
            }
            // Digits past what an Int holds are a number above the bound all the same.
            let value = min(Int(text) ?? Int.max, SegmentEligibility.maximumConnections)
            result = min(result ?? value, value)
        }
        return result
    }

    /// `header` (a line or a list of lines), then `user-agent` and `referer` (`*`: the first URI,
    /// without its user and password), each through the one rule for headers from outside.
    static func headers(_ options: [String: JSONValue], firstURI: URL?) throws(RPCError) -> HTTPHeaders {
        var headers = HTTPHeaders()
        var lines: [String] = []
        switch options["header"] {
        case nil, .null?: break
        case .string(let line)?: lines = [line]
        case .array(let list)?:
            for line in list {
                guard let text = line.string else { throw RPCError("option header must be a list of strings") }
                lines.append(text)
            }
        default: throw RPCError("option header must be a string or a list of strings")
        }
        for line in lines where !line.isEmpty {
            let field = try field(line, option: "header")
            headers.add(field.name, field.value)
        }
        if let agent = try given(options["user-agent"], "user-agent") {
            headers.set("User-Agent", try field("User-Agent: " + agent, option: "user-agent").value)
        }
        if var referer = try given(options["referer"], "referer") {
            if referer == "*", let firstURI { referer = withoutCredentials(firstURI) }
            headers.set("Referer", try field("Referer: " + referer, option: "referer").value)
        }
        return headers
    }

    private static func field(_ line: String, option: String) throws(RPCError) -> HTTPHeaders.Field {
        do throws(HeaderLineError) {
            return try HTTPHeaders.field(line: line)
        } catch .reserved(let name) {
            throw RPCError("header \(shown(name)) is set by Haul itself")
        } catch {
            throw RPCError("\(option) \(shown(line)) is not a valid NAME: VALUE header")
        }
    }

    private static func withoutCredentials(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return Redaction.url(url) }
        components.user = nil
        components.password = nil
        components.fragment = nil
        return components.string ?? Redaction.url(url)
    }

    // MARK: proxies

    /// The proxy options: `all-proxy`, and `http-proxy` / `https-proxy` for the URIs of their
    /// scheme (over `all-proxy`), each with its `-user` and `-passwd` (over a login in the URL).
    /// Haul keeps one proxy per download, for every URI and every redirect: the URIs' schemes must
    /// all choose the same one. A proxy without a scheme is `http://` (aria2's form
    /// `[http://][USER:PASSWORD@]HOST[:PORT]`); "" is no proxy at all.
    static func proxy(_ options: [String: JSONValue], schemes: [String]) throws(RPCError) -> String? {
        var byKind: [String: String] = [:]
        for kind in ["all", "http", "https"] {
            let name = "\(kind)-proxy"
            let user = try given(options["\(name)-user"], "\(name)-user")
            let password = try given(options["\(name)-passwd"], "\(name)-passwd")
            guard let given = try text(options[name], name) else {
                if user != nil || password != nil {
                    throw RPCError("\(user != nil ? "\(name)-user" : "\(name)-passwd") is given without \(name); nothing was added")
                }
                continue
            }
            byKind[kind] = try proxyURL(given, user: user, password: password, name: name)
        }
        guard !byKind.isEmpty else { return nil }
        // Each scheme's choice (nil: the environment's), in a stable order for the error.
        let choices = Set(schemes).sorted().map { scheme in (scheme, byKind[scheme == "https" ? "https" : "http"] ?? byKind["all"]) }
        guard let first = choices.first, choices.allSatisfy({ $0.1 == first.1 }) else {
            let names = ["all-proxy", "http-proxy", "https-proxy"].filter { options[$0] != nil }.joined(separator: ", ")
            let routes = choices.map { scheme, proxy in
                guard let proxy else { return "\(scheme) URIs through the environment's proxy, if any" }
                return proxy.isEmpty ? "\(scheme) URIs directly" : "\(scheme) URIs through \(ProxyRoute.shown(proxy))"
            }
            throw RPCError(
                "\(names) would send this download's URIs different ways (\(routes.joined(separator: "; "))); haul keeps one proxy for every URI of a download: set all-proxy, or the same proxy for each scheme"
            )
        }
        return first.1
    }

    /// A proxy option's URL with its user and password options folded in (percent-encoded), and
    /// checked as `--proxy` is; an error names the option and never shows the password.
    static func proxyURL(_ given: String, user: String?, password: String?, name: String) throws(RPCError) -> String {
        guard !given.isEmpty else { return "" }
        var text = given.contains("://") ? given : "http://" + given
        if user != nil || password != nil, let schemeEnd = text.range(of: "://") {
            let rest = text[schemeEnd.upperBound...]
            let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
            var hostPort = rest[..<authorityEnd]
            var urlUser: Substring?
            var urlPassword: Substring?
            if let at = hostPort.lastIndex(of: "@") {
                let info = hostPort[..<at]
                hostPort = hostPort[hostPort.index(after: at)...]
                if let colon = info.firstIndex(of: ":") {
                    urlUser = info[..<colon]
                    urlPassword = info[info.index(after: colon)...]
                } else {
                    urlUser = info
                }
            }
            let login = user.map(percentEncoded) ?? urlUser.map(String.init) ?? ""
            let secret = password.map(percentEncoded) ?? urlPassword.map(String.init)
            text = String(text[..<schemeEnd.upperBound]) + login + (secret.map { ":" + $0 } ?? "") + "@" + hostPort + rest[authorityEnd...]
        }
        do throws(ProxyURLError) {
            try ProxyRoute.validate(text)
        } catch {
            throw RPCError(error.text.rendered(SettingNames([.proxy: name])))
        }
        return text
    }

    /// `text` with every byte but RFC 3986's unreserved ones percent-encoded: a user or password
    /// placed in a URL's userinfo (libcurl decodes it).
    static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                result.unicodeScalars.append("%")
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                result.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return result
    }

    /// A client's text in an error: at most 100 characters (an option name can be a megabyte),
    /// and `""` for nothing, so an empty name is still seen.
    static func shown(_ text: String) -> String {
        if text.isEmpty { return "\"\"" }
        return text.count > 100 ? String(text.prefix(100)) + "…" : text
    }
}
