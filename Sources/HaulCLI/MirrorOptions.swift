import Foundation
import Haul
import HaulCLIText
import HaulCore

/// `--mirror URL` (repeatable): other servers of the same file, for one download. The file's
/// segments are spread over the URL and its mirrors; each mirror is first proven to serve the
/// same bytes (its length, and a window of bytes the URL already delivered), and one that
/// disagrees is dropped. A queued item keeps them (`haul URL`, `haul queue add`).
struct MirrorOptions: ParsableOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(
            short: nil, long: "mirror", value: "URL",
            help: "another server of the same file (repeatable): segments are spread over them, each checked against the URL first",
            repeatable: true),
        OptionSpec(
            short: nil, long: "mirror-unverified", value: nil,
            help: "use the mirrors even without a digest of the whole file (--checksum or the server's): only a 64 KiB probe proves their bytes"),
    ]

    let mirrors: [URL]
    let allowsUnverified: Bool

    init(_ parsed: ParsedArguments) throws(UsageError) {
        var mirrors: [URL] = []
        for text in parsed.all("mirror") {
            do throws(DownloadList.URLProblem) {
                mirrors.append(try DownloadList.parseHTTPURL(text))
            } catch {
                throw UsageError(message: "--mirror \(Redaction.url(text)): \(error.message)")
            }
        }
        self.mirrors = mirrors
        allowsUnverified = parsed.flag("mirror-unverified")
    }

    /// Mirrors serve segments of one whole file, fetched with GET into a file on disk.
    func validate(downloads: DownloadCount, request: RequestOptions, destination: DestinationOptions, connections: ConnectionsOptions) throws(UsageError) {
        guard !mirrors.isEmpty else {
            if allowsUnverified { throw UsageError(message: "--mirror-unverified applies to --mirror; no mirror was given") }
            return
        }
        if downloads == .several {
            throw UsageError(message: "--mirror names other servers of one file: give one URL, not several or -i")
        }
        if destination.writesToStandardOutput {
            throw UsageError(message: "--mirror fills a file segment by segment, so it cannot write to standard output (-o -)")
        }
        if case .range = request.target {
            throw UsageError(message: "--mirror spreads the segments of a whole file; it cannot be used with --range")
        }
        if request.body != nil || request.method != "GET" {
            throw UsageError(message: "--mirror fetches with GET and no body; it cannot be used with --data or -X \(request.method)")
        }
        if connections.connections == 1 {
            throw UsageError(message: "--mirror needs more than one connection; -x 1 uses the URL alone")
        }
    }

    func applied(to request: DownloadRequest) -> DownloadRequest {
        var request = request
        request.mirrors = mirrors
        request.allowsUnverifiedMirrors = allowsUnverified
        return request
    }
}
