import Foundation
import Haul

/// `haul queue add URL... [-o FILE | -d DIR] [--priority N] [--paused] [request options]`.
struct QueueAddCommand: ParsableCommand {
    static let commandName = "haul queue add"
    static let abstract = "add downloads (all or none) and print their ids"
    static let priority = OptionSpec(short: nil, long: "priority", value: "N", help: "higher runs first, -1000 to 1000 (default 0)")
    static let paused = OptionSpec(short: nil, long: "paused", value: nil, help: "add paused, to start later with resume")

    static var options: [OptionSpec] {
        DestinationOptions.specs + [priority, paused] + StoreOptions.specs + ItemOptions.specs
    }

    static let overview = """
        Usage: haul queue add URL... [-o FILE | -d DIR] [--priority N] [--paused] [request options]

        A queued download keeps its request (method, headers, body, range), what to do with a file
        already at its destination, its checks (checksum, free space, size limit), TLS trust, its
        proxy, the paths of its netrc and cookie files, redirects, connections and mirrors. How a run treats
        every download (-j, retries, timeouts, one shared speed limit) is given to 'haul queue run'.
        """

    let urls: [URL]
    let destination: DestinationOptions
    let priorityValue: Int
    let startsPaused: Bool
    let store: StoreOptions
    let item: ItemOptions

    init(_ parsed: ParsedArguments) throws(UsageError) {
        urls = try OptionValue.urls(parsed.positional)
        destination = try DestinationOptions(parsed)
        priorityValue = try OptionValue.integer(parsed, Self.priority.long, default: 0, range: -1000...1000)
        startsPaused = parsed.flag(Self.paused.long)
        store = StoreOptions(parsed)
        item = try ItemOptions(parsed)
    }

    func validate() throws(UsageError) {
        guard !urls.isEmpty else { throw UsageError(message: "queue add needs at least one URL") }
        try item.validate(downloads: urls.count > 1 ? .several : .one, destination: destination)
        if destination.writesToStandardOutput {
            throw UsageError(message: "a queued download needs a file or directory, not standard output (-o -)")
        }
    }

    func run() async throws(CommandError) -> ExitCode {
        item.download.warnIfInsecure(Presenter(mode: .normal))
        let queue = try store.open()
        let requests = urls.map { item.request($0, destination.destination()) }
        do throws(DownloadError) {
            for id in try queue.add(requests, priority: priorityValue, paused: startsPaused) { print(id) }
        } catch {
            throw .download(error)
        }
        return .success
    }
}
