import Haul

/// `haul queue resume ID...`.
struct QueueResumeCommand: ParsableCommand {
    static let commandName = "haul queue resume"
    static let abstract = "queue paused or failed downloads again"
    static var options: [OptionSpec] { StoreOptions.specs }

    static let overview = """
        Usage: haul queue resume ID...

        A resumed download continues from its record at the next 'haul queue run'.
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
        try ids.each(in: store) { queue, id throws(DownloadError) in try queue.resume(id) }
    }
}
