import Foundation
import Haul
import HaulCore

/// What one download checks and how it connects, beyond its request: the checksum, the free
/// space and size limits, TLS trust and redirects. A queued item keeps them (the run does not
/// override them), so `haul URL` and `haul queue add` take them, not `haul queue run`.
struct DownloadSettings: ParsableOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(
            short: nil, long: "checksum", value: "ALGO=HEX", help: "verify the file: sha256=, sha512=, sha1=, md5=, crc32c= or crc64nvme= (one URL only)"),
        OptionSpec(short: nil, long: "no-server-digest", value: nil, help: "do not verify a digest the server publishes (Repr-Digest, x-amz-checksum-...)"),
        OptionSpec(short: nil, long: "s3-checksums", value: nil, help: "ask S3-style hosts for their stored checksum (x-amz-checksum-mode)"),
        OptionSpec(
            short: nil, long: "min-free-space", value: "SIZE", help: "keep SIZE free beyond the file, e.g. 0, 500M (default 1% of the disk, <= 16M)",
            setting: .minFreeSpace),
        OptionSpec(short: nil, long: "max-size", value: "SIZE", help: "refuse or stop a download larger than SIZE, e.g. 2G (bytes kept)", setting: .maxSize),
        OptionSpec(short: nil, long: "max-redirects", value: "N", help: "redirects to follow (default 10)"),
        OptionSpec(
            short: nil, long: "allow-http-redirect", value: nil, help: "follow a redirect from https to http (refused by default)", setting: .allowsHTTPRedirect
        ),
        OptionSpec(short: nil, long: "insecure", value: nil, help: "do not verify TLS certificates", setting: .insecureTLS),
        OptionSpec(short: nil, long: "cacert", value: "FILE", help: "trust the CA certificates in FILE (PEM)", setting: .caFile),
        OptionSpec(short: nil, long: "http2", value: nil, help: "use HTTP/2 where TLS negotiates it (default: HTTP/1.1)", setting: .http2),
        OptionSpec(short: "R", long: "remote-time", value: nil, help: "give the file the server's Last-Modified time"),
    ]

    let checksum: Checksum?
    let verifiesServerDigest: Bool
    let asksS3Checksum: Bool
    let minFreeSpace: Int64?
    let maxSize: Int64?
    let maxRedirects: Int
    let allowsHTTPRedirect: Bool
    let verifiesTLS: Bool
    let caFile: String?
    let allowsHTTP2: Bool
    let usesRemoteTime: Bool

    init(_ parsed: ParsedArguments) throws(UsageError) {
        if let text = parsed.value("checksum") {
            do throws(ChecksumError) {
                checksum = try Checksum(parsing: text)
            } catch {
                throw UsageError(message: "--checksum \(text): \(error.message)")
            }
        } else {
            checksum = nil
        }
        verifiesServerDigest = !parsed.flag("no-server-digest")
        asksS3Checksum = parsed.flag("s3-checksums")
        minFreeSpace = try parsed.value("min-free-space").map { text throws(UsageError) in
            guard let bytes = text == "0" ? 0 : OptionValue.bytes(text) else {
                throw UsageError(message: "--min-free-space needs a size such as 0, 500M or 2G, got \"\(text)\"")
            }
            return bytes
        }
        maxSize = try parsed.value("max-size").map { text throws(UsageError) in
            guard let bytes = OptionValue.bytes(text) else {
                throw UsageError(message: "--max-size needs a size such as 500M or 2G, got \"\(text)\"")
            }
            return bytes
        }
        maxRedirects = try OptionValue.integer(parsed, "max-redirects", default: 10, range: 0...100)
        allowsHTTPRedirect = parsed.flag("allow-http-redirect")
        verifiesTLS = !parsed.flag("insecure")
        if let caFile = parsed.value("cacert"), !FileManager.default.isReadableFile(atPath: caFile) {
            throw UsageError(message: "--cacert \(caFile): no such readable file")
        }
        caFile = parsed.value("cacert")
        allowsHTTP2 = parsed.flag("http2")
        usesRemoteTime = parsed.flag("remote-time")
    }

    /// A checksum describes one file.
    func validate(downloads: DownloadCount) throws(UsageError) {
        if checksum != nil, downloads == .several {
            throw UsageError(message: "--checksum verifies one file; it cannot be used with several URLs")
        }
    }

    /// `--insecure` is said out loud, whatever the command.
    func warnIfInsecure(_ presenter: Presenter) {
        if !verifiesTLS && presenter.mode != .quiet {
            presenter.error("warning: --insecure: TLS certificates and host names are NOT verified")
        }
    }

    func applied(to request: DownloadRequest, connections: ConnectionsOptions) -> DownloadRequest {
        var request = request
        request.checksum = checksum
        request.verifiesServerDigest = verifiesServerDigest
        request.asksS3Checksum = asksS3Checksum
        if let minFreeSpace { request.minFreeSpace = minFreeSpace }
        request.maxSize = maxSize
        request.maxRedirects = maxRedirects
        request.allowsHTTPRedirect = allowsHTTPRedirect
        request.transfer.verifyTLS = verifiesTLS
        request.transfer.caFile = caFile
        request.transfer.allowsHTTP2 = allowsHTTP2
        request.usesRemoteTime = usesRemoteTime
        request.connections = connections.connections
        return request
    }

    /// A batch's run carries them as well, for queue items stored without them.
    func applied(to run: QueueRunOptions) -> QueueRunOptions {
        var run = run
        run.maxSize = maxSize
        run.maxRedirects = maxRedirects
        run.allowsHTTPRedirect = allowsHTTPRedirect
        run.transfer.verifyTLS = verifiesTLS
        run.transfer.caFile = caFile
        run.transfer.allowsHTTP2 = allowsHTTP2
        run.usesRemoteTime = usesRemoteTime
        return run
    }
}
