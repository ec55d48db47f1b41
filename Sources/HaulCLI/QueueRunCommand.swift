import Haul

/// `haul queue run [-j N] [-q | --json] [run settings]`: downloads until nothing is left.
struct QueueRunCommand: ParsableCommand {
    static let commandName = "haul queue run"
    static let abstract = "download until nothing is left (-j at a time)"
    static var options: [OptionSpec] {
        RunSettings.specs + ConnectionsOptions.specs + HostLimitOptions.specs + StoreOptions.specs + OutputOptions.specs
    }

    static let overview = """
        Usage: haul queue run [-j N] [-q | --json] [run settings]

        Resumes whatever an earlier run left behind, even one killed with kill -9. Several runs may
        share a store: each download is leased to one process at a time. The settings apply to
        every download of this run (-x only to those added without one); what each download
        requests, checks and trusts was given to 'haul queue add'.

        With --state postgresql://USER@HOST:PORT/DB, many machines drain one queue: each item is
        claimed by one worker at a time, and a run ends only once no item is queued or held by
        another worker (it takes over the items of a worker that died, once their lease expires).
        """

    let settings: RunSettings
    let connections: ConnectionsOptions
    let store: StoreOptions
    let output: OutputOptions
    let hostLimit: HostLimitOptions

    init(_ parsed: ParsedArguments) throws(UsageError) {
        settings = try RunSettings(parsed)
        connections = try ConnectionsOptions(parsed)
        hostLimit = try HostLimitOptions(parsed)
        store = StoreOptions(parsed)
        output = OutputOptions(parsed)
    }

    func run() async throws(CommandError) -> ExitCode {
        let queue = try store.open(engine: settings.engine)
        // The total for the aggregate display; an unreadable count only makes it show 0.
        let pending = (try? queue.pendingCount()) ?? 0
        let presenter = Presenter(mode: output.mode)
        let signals = SignalWatcher { _ in queue.stopAll() }
        let runOptions = settings.runOptions(connections: connections)
        let maxPerHost = hostLimit.maxPerHost
        let summary = await QueueRunView(queue: queue, presenter: presenter, total: pending).run {
            await queue.run(runOptions, maxPerHost: maxPerHost)
        }
        if let interrupted = signals.exitCode { return interrupted }
        if let first = summary.failed.first { return ExitCode(first.error) }
        return .success
    }
}
