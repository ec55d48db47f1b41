import Foundation
import Haul
import HaulCore

/// The main command: one URL (a single download), several URLs or `-i FILE` (a batch).
struct CommandOptions: Sendable {
    static let specs: [OptionSpec] = [
        OptionSpec(short: "o", long: "output", value: "FILE", help: "write to FILE ('-' for standard output; one URL only)"),
        OptionSpec(short: "d", long: "dir", value: "DIR", help: "save into DIR under the server's file name (default: .)"),
        OptionSpec(short: "i", long: "input", value: "FILE", help: "read URLs from FILE ('-' for stdin): URL [NAME] per line"),
        CommonOptions.jobs,
        CommonOptions.state,
    ] + RequestOptions.specs + CommonOptions.output + [
        OptionSpec(short: "h", long: "help", value: nil, help: "show this help"),
        OptionSpec(short: "V", long: "version", value: nil, help: "show the version"),
    ]

    enum Work {
        /// One download, no queue: its record sits beside the partial file.
        case single(DownloadRequest)
        /// Several downloads through the queue store.
        case batch(requests: [DownloadRequest], problems: [String], jobs: Int)
    }

    var work: Work
    var mode: OutputMode
    var requestOptions: RequestOptions
    var stateDirectory: String?

    static var usage: String {
        """
        Usage: haul [options] URL
               haul [options] URL URL ...      (a batch)
               haul [options] -i FILE          (a batch from a list: URL [NAME] per line)
               haul queue add|list|pause|resume|cancel|rm|run ...   (see haul queue --help)

        Downloads to disk, resumably: an interrupted run (Ctrl-C, a dropped connection,
        kill -9, a power cut) continues where it stopped when run again, and a file is only
        put in place once complete. Resumes are verified, never spliced across versions.

        Options:
        \(ArgumentParser(specs: specs).helpText())

        \(ExitCode.table)
        """
    }

    init(_ parsed: ParsedArguments) throws(UsageError) {
        mode = CommonOptions.mode(parsed)
        requestOptions = try RequestOptions(parsed)
        stateDirectory = parsed.value("state")
        let jobs = try CommonOptions.jobs(parsed)
        var entries: [(url: URL, name: String?)] = []
        var problems: [String] = []
        for text in parsed.positional {
            entries.append((try RequestOptions.url(text), nil))
        }
        if let input = parsed.value("input") {
            let list = try Self.readList(input)
            entries += list.entries.map { ($0.url, $0.name) }
            problems = list.problems.map { "\(input == "-" ? "stdin" : input):\($0.line): \($0.message)" }
        }
        guard !entries.isEmpty || !problems.isEmpty else {
            throw UsageError(message: "no URL given")
        }
        if parsed.value("output") != nil && parsed.value("dir") != nil {
            throw UsageError(message: "use either -o or -d, not both")
        }
        if entries.count == 1 && parsed.value("input") == nil, let only = entries.first {
            let destination = try Self.singleDestination(parsed)
            if mode == .json, destination == .standardOutput {
                throw UsageError(message: "--json writes events to standard output, so it cannot be used with -o -")
            }
            work = .single(requestOptions.request(only.url, destination))
            return
        }
        if parsed.value("output") != nil {
            throw UsageError(message: "-o names one file; for several URLs use -d DIR (and NAME in the -i list)")
        }
        if requestOptions.checksum != nil {
            throw UsageError(message: "--checksum verifies one file; it cannot be used with several URLs")
        }
        let directory = parsed.value("dir") ?? "."
        let template = requestOptions
        let requests = entries.map { entry in
            template.request(entry.url, entry.name.map { .file((directory as NSString).appendingPathComponent($0)) } ?? .directory(directory))
        }
        work = .batch(requests: requests, problems: problems, jobs: jobs)
    }

    private static func singleDestination(_ parsed: ParsedArguments) throws(UsageError) -> Destination {
        if let output = parsed.value("output") {
            if output == "-" { return .standardOutput }
            guard !output.isEmpty else { throw UsageError(message: "-o needs a file name") }
            return .file(output)
        }
        return .directory(parsed.value("dir") ?? ".")
    }

    private static func readList(_ input: String) throws(UsageError) -> DownloadList {
        let data: Data?
        if input == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: input)
        }
        guard let data else { throw UsageError(message: "-i \(input): cannot read the file") }
        guard let text = String(data: data, encoding: .utf8) else {
            throw UsageError(message: "-i \(input): the list is not UTF-8 text")
        }
        return DownloadList(parsing: text)
    }
}

