import Foundation
import Haul

/// How many downloads one command line asks for: the rules for `-o`, `--checksum` and
/// `--min-free-space` depend on it.
enum DownloadCount: Sendable {
    case one
    case several
}

/// Where downloads go: `-o FILE` for one download, `-d DIR` for the server's names (or the names
/// an `-i` list gives). `haul URL` and `haul queue add` take them; the rule that ties `-o` to
/// one download is here, once, for both.
struct DestinationOptions: ParsableOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(short: "o", long: "output", value: "FILE", help: "write to FILE (one URL only; '-': standard output, not queued)"),
        OptionSpec(short: "d", long: "dir", value: "DIR", help: "save into DIR under the server's file name (default: .)"),
    ]

    let output: String?
    let directory: String?

    init(_ parsed: ParsedArguments) throws(UsageError) {
        output = parsed.value("output")
        directory = parsed.value("dir")
        if output?.isEmpty == true { throw UsageError(message: "-o needs a file name") }
    }

    /// Use either option, not both; `-o` names one file, so it cannot take several downloads.
    func validate(downloads: DownloadCount) throws(UsageError) {
        guard output != nil else { return }
        if directory != nil {
            throw UsageError(message: "use either -o or -d, not both")
        }
        if downloads == .several {
            throw UsageError(message: "-o names one file; for several URLs use -d DIR (and NAME in an -i list)")
        }
    }

    /// `-o -`: the bytes go to standard output.
    var writesToStandardOutput: Bool { output == "-" }

    /// Where a download goes: `-o`'s file, else `name` (from an `-i` list) in the directory,
    /// else the directory under the server's name.
    func destination(named name: String? = nil) -> Destination {
        if let output { return output == "-" ? .standardOutput : .file(output) }
        let directory = self.directory ?? "."
        return name.map { .file((directory as NSString).appendingPathComponent($0)) } ?? .directory(directory)
    }
}
