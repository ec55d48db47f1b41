import Haul

/// `haul queue pause ID...`.
struct QueuePauseCommand: ParsableCommand {
    static let commandName = "haul queue pause"
    static let abstract = "pause downloads at their next checkpoint, even in another process"
    static var options: [OptionSpec] { StoreOptions.specs }

    static let overview = """
        Usage: haul queue pause ID...

        Pausing a running download stops it at its next checkpoint, also when another process
        runs it; 'haul queue resume' queues it again.
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
        try ids.each(in: store) { queue, id throws(DownloadError) in try queue.pause(id) }
    }
}
