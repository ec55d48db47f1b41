import Haul

/// The operands of pause, resume, cancel and rm: ids of downloads in the queue, as `queue list`
/// shows them. Every id is checked before the first is acted on.
struct DownloadIDs: Sendable {
    let ids: [Int64]

    init(_ parsed: ParsedArguments) throws(UsageError) {
        var ids: [Int64] = []
        for operand in parsed.positional {
            guard let id = Int64(operand), id > 0 else { throw UsageError(message: "not a download id: \(operand)") }
            ids.append(id)
        }
        self.ids = ids
    }

    func validate() throws(UsageError) {
        guard !ids.isEmpty else { throw UsageError(message: "give the id of at least one download (see haul queue list)") }
    }

    /// Opens the store and applies `action` to each id in order; the first failure stops.
    func each(in store: StoreOptions, _ action: (DownloadQueue, Int64) throws(DownloadError) -> Void) throws(CommandError) -> ExitCode {
        let queue = try store.open()
        for id in ids {
            do throws(DownloadError) {
                try action(queue, id)
            } catch {
                throw .download(error)
            }
        }
        return .success
    }
}

/// A queue command that applies one action to each download id it is given (`pause`, `resume`,
/// `rm`): its options, parsing, validation and run are these; each command names its action.
protocol QueueIDCommand: ParsableCommand {
    /// What the command does to one download.
    static func act(on id: Int64, in queue: DownloadQueue) throws(DownloadError)
    init(ids: DownloadIDs, store: StoreOptions)
    var ids: DownloadIDs { get }
    var store: StoreOptions { get }
}

extension QueueIDCommand {
    static var options: [OptionSpec] { StoreOptions.specs }

    init(_ parsed: ParsedArguments) throws(UsageError) {
        self.init(ids: try DownloadIDs(parsed), store: StoreOptions(parsed))
    }

    func validate() throws(UsageError) {
        try ids.validate()
    }

    func run() async throws(CommandError) -> ExitCode {
        try ids.each(in: store) { queue, id throws(DownloadError) in try Self.act(on: id, in: queue) }
    }
}
