import Haul

/// `haul queue rm ID...`.
struct QueueRemoveCommand: ParsableCommand {
    static let commandName = "haul queue rm"
    static let abstract = "remove downloads from the queue (a completed file stays)"
    static var options: [OptionSpec] { StoreOptions.specs }

    static let overview = """
        Usage: haul queue rm ID...

        The download leaves the queue; its partial file, if any, is deleted too (a completed file
        stays where it is).
        """

    let ids: DownloadIDs
    let store: StoreOptions

    init(_ parsed: ParsedArguments) throws(UsageError) {
        ids = try DownloadIDs(parsed)
        store = StoreOptions(parsed)
    }

    func validate() throws(UsageError) {
        try ids.validate()
    }

    func run() async throws(CommandError) -> ExitCode {
        try ids.each(in: store) { queue, id throws(DownloadError) in try queue.remove(id) }
    }
}
