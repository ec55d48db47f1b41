import Foundation
import Haul
import HaulCLIText
import HaulCore
import HaulEngine

/// The main command: one URL (a single download, its record beside the partial file), or several
/// URLs or `-i FILE` (a batch, which goes through the queue store and runs `-j` at a time).
struct DownloadCommand: ParsableCommand {
    static let commandName = "haul"
    static let displayName = "haul URL"
    static let abstract = "download one URL, several, or a list"
    static var version: String? { HaulVersion.current }
    static let input = OptionSpec(short: "i", long: "input", value: "FILE", help: "read URLs from FILE ('-' for stdin): URL [NAME] per line")

    static var options: [OptionSpec] {
        DestinationOptions.specs + [input] + StoreOptions.specs + ItemOptions.specs + RunSettings.specs + HostLimitOptions.specs
            + OutputOptions.specs
    }

    static let overview = """
        Usage: haul [options] URL
               haul [options] URL URL ...      (a batch)
               haul [options] -i FILE          (a batch from a list: URL [NAME] per line)
               haul queue add|list|pause|resume|cancel|rm|run ...   (see haul queue --help)

        Downloads to disk, resumably: an interrupted run (Ctrl-C, a dropped connection,
        kill -9, a power cut) continues where it stopped when run again, and a file is only
        put in place once complete. Resumes are verified, never spliced across versions.
        Run again after it completed (-o or -d), it finds its own finished file and exits 0
        at once, "already complete".
        """

    let urls: [URL]
    let input: String?
    let destination: DestinationOptions
    let store: StoreOptions
    let item: ItemOptions
    let settings: RunSettings
    let output: OutputOptions
    let hostLimit: HostLimitOptions

    init(_ parsed: ParsedArguments) throws(UsageError) {
        urls = try OptionValue.urls(parsed.positional)
        input = parsed.value(Self.input.long)
        destination = try DestinationOptions(parsed)
        store = StoreOptions(parsed)
        item = try ItemOptions(parsed)
        settings = try RunSettings(parsed)
        output = OutputOptions(parsed)
        hostLimit = try HostLimitOptions(parsed)
    }

    /// A list, even of one line, is a batch: its names and problems are reported as one.
    var downloads: DownloadCount {
        input != nil || urls.count > 1 ? .several : .one
    }

    func validate() throws(UsageError) {
        guard !urls.isEmpty || input != nil else {
            throw UsageError(message: "no URL given")
        }
        try item.validate(downloads: downloads, destination: destination)
        if downloads == .one, hostLimit.maxPerHost != nil {
            throw UsageError(message: "--max-per-host limits a batch (several URLs or -i FILE); one download is one host at a time already")
        }
        if downloads == .one, output.mode == .json, destination.writesToStandardOutput {
            throw UsageError(message: "--json writes events to standard output, so it cannot be used with -o -")
        }
    }

    func run() async throws(CommandError) -> ExitCode {
        var requests: [DownloadRequest] = []
        var problems: [String] = []
        if downloads == .several {
            (requests, problems) = try batch()
        }
        let presenter = Presenter(mode: output.mode)
        item.download.warnIfInsecure(presenter)
        if downloads == .one, let url = urls.first {
            let single = settings.applied(to: item.request(url, destination.destination()))
            do throws(UsageError) { try settings.check([single]) } catch { throw .usage(error) }
            return await Self.runSingle(single, engine: settings.engine, presenter)
        }
        do throws(UsageError) { try settings.check(requests) } catch { throw .usage(error) }
        let runOptions = item.proxy.applied(to: item.download.applied(to: settings.runOptions(connections: item.connections)))
        return await BatchCommand(
            requests: requests, problems: problems, runOptions: runOptions, maxPerHost: hostLimit.maxPerHost, store: store, engine: settings.engine,
            presenter: presenter
        ).run()
    }

    /// The batch's requests (the URLs given, then the list's) and the list lines that were unusable.
    private func batch() throws(CommandError) -> (requests: [DownloadRequest], problems: [String]) {
        var entries: [(url: URL, name: String?)] = urls.map { ($0, nil) }
        var problems: [String] = []
        if let input {
            let list = try Self.readList(input)
            entries += list.entries.map { ($0.url, $0.name) }
            problems = list.problems.map { "\(input == "-" ? "stdin" : input):\($0.line): \($0.message)" }
        }
        guard !entries.isEmpty || !problems.isEmpty else {
            throw .usage(UsageError(message: "no URL given"))
        }
        return (entries.map { item.request($0.url, destination.destination(named: $0.name)) }, problems)
    }

    private static func readList(_ input: String) throws(CommandError) -> DownloadList {
        let data: Data?
        if input == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            data = FileManager.default.contents(atPath: input)
        }
        guard let data else { throw .usage(UsageError(message: "-i \(input): cannot read the file")) }
        guard let text = String(data: data, encoding: .utf8) else {
            throw .usage(UsageError(message: "-i \(input): the list is not UTF-8 text"))
        }
        return DownloadList(parsing: text)
    }

    /// One download with its record beside the partial file; no queue involved.
    private static func runSingle(_ request: DownloadRequest, engine: TransportEngine, _ presenter: Presenter) async -> ExitCode {
        let downloader: Downloader
        do throws(DownloadError) {
            downloader = try Downloader(engine: engine)
        } catch {
            presenter.error(error.shown)
            return ExitCode(error)
        }
        let download = downloader.download(request)
        let signals = SignalWatcher { _ in
            // Stop at a checkpoint; the next run resumes.
            download.pause()
        }
        for await event in download.events {
            presenter.show(event)
            switch event {
            case .completed:
                return .success
            case .failed(let error):
                return ExitCode(error)
            case .cancelled:
                return .failure
            case .paused:
                return signals.received == SIGTERM ? .terminated : .interrupted
            default:
                continue
            }
        }
        return .failure
    }
}
