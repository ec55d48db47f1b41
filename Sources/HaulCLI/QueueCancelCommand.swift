import Haul

/// `haul queue cancel ID... [--delete]`.
struct QueueCancelCommand: ParsableCommand {
    static let commandName = "haul queue cancel"
    static let abstract = "cancel downloads (--delete: and their partial data)"
    static let delete = OptionSpec(short: nil, long: "delete", value: nil, help: "also delete the partial data")
    static var options: [OptionSpec] { [delete] + StoreOptions.specs }

    static let overview = """
        Usage: haul queue cancel ID... [--delete]

        A cancelled download stays in the queue (see 'haul queue rm'); its partial data is kept
        unless --delete is given.
        """

    let ids: DownloadIDs
    let deletesPartial: Bool
    let store: StoreOptions

    init(_ parsed: ParsedArguments) throws(UsageError) {
        ids = try DownloadIDs(parsed)
        deletesPartial = parsed.flag(Self.delete.long)
        store = StoreOptions(parsed)
    }

    func validate() throws(UsageError) {
        try ids.validate()
    }

    func run() async throws(CommandError) -> ExitCode {
        let delete = deletesPartial
        return try ids.each(in: store) { queue, id throws(DownloadError) in try queue.cancel(id, deletingPartial: delete) }
    }
}
