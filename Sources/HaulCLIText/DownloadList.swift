import Foundation

// fuzz/run.sh compiles this file into one module with HaulCore's sources (ContentDispositionFuzz),
// where there is no HaulCore to import.
#if canImport(HaulCore)
    import HaulCore
#endif

/// A list of downloads as `haul -i FILE` reads it: one URL per line, optionally followed by an
/// output name; blank lines and lines starting with `#` are ignored.
package struct DownloadList: Sendable, Equatable {
    /// One usable line: a URL and maybe a name.
    package struct Entry: Sendable, Equatable {
        /// 1-based line number in the input, for messages.
        package let line: Int
        /// The http or https URL to download.
        package let url: URL
        /// The output name given on the line, already sanitized so it stays inside the target directory.
        package let name: String?
    }

    /// A line that could not be used, and why.
    package struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// 1-based line number in the input.
        package let line: Int
        /// What is wrong with it.
        package let message: String
        package var description: String { "line \(line): \(message)" }
    }

    /// The usable lines, in input order.
    package private(set) var entries: [Entry] = []
    /// Lines that could not be used; the rest of the list still proceeds.
    package private(set) var problems: [Problem] = []

    /// Parses the text of a list. Lines end at a line feed byte, so a list with CRLF line ends
    /// (written on Windows) has one entry per line too: split over Characters, "\r\n" is one
    /// Character, not "\n", and the whole list would be one line.
    package init(parsing text: String) {
        for (index, raw) in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let line = String(Substring(raw)).trimmingWhitespaceAndNewlines()
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
            let urlText = String(fields[0])
            let url: URL
            do throws(URLProblem) {
                url = try Self.parseHTTPURL(urlText)
            } catch {
                problems.append(Problem(line: index + 1, message: "\(error.message): \(urlText.prefix(200))"))
                continue
            }
            var name: String?
            if fields.count > 1 {
                let rawName = String(fields[1]).trimmingWhitespace()
                guard let safe = FileNameSanitizer.sanitize(rawName), safe == rawName else {
                    problems.append(Problem(line: index + 1, message: "unusable output name \"\(rawName.prefix(200))\" (a plain file name is needed)"))
                    continue
                }
                name = safe
            }
            entries.append(Entry(line: index + 1, url: url, name: name))
        }
    }

    /// An absolute http(s) URL with a host, or nil.
    package static func httpURL(_ text: String) -> URL? {
        try? parseHTTPURL(text)
    }

    /// Why a text is not a URL Haul can download.
    package enum URLProblem: Error, Sendable, Equatable {
        /// Not an absolute http or https URL with a host.
        case notHTTP
        /// The port as written (digits, possibly too many for any integer).
        case portOutOfRange(String)

        /// What is wrong, for a message that then quotes the URL.
        package var message: String {
            switch self {
            case .notHTTP: return "not an http or https URL"
            case .portOutOfRange(let port): return "port \(port) is out of range (1-65535)"
            }
        }
    }

    /// An absolute http(s) URL with a host and, if it names a port, one from 1 to 65535.
    ///
    /// Foundation accepts any digits as a port (70000, 0, or more than an Int holds); libcurl
    /// then refuses the URL, which would be reported as a network failure instead of a bad URL.
    package static func parseHTTPURL(_ text: String) throws(URLProblem) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { throw .notHTTP }
        // The port as written: `url.port` is nil both for no port and for one too large for an Int.
        if let components = URLComponents(string: text), let range = components.rangeOfPort {
            let port = String(text[range])
            guard let number = Int(port), (1...65535).contains(number) else { throw .portOutOfRange(port) }
        }
        return url
    }
}
