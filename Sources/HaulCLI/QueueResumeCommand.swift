import Haul

/// `haul queue resume ID...`.
struct QueueResumeCommand: QueueIDCommand {
    static let commandName = "haul queue resume"
    static let abstract = "queue paused or failed downloads again"

    static let overview = """
        Usage: haul queue resume ID...

        A resumed download continues from its record at the next 'haul queue run'.
        """

    let ids: DownloadIDs
    let store: StoreOptions

    static func act(on id: Int64, in queue: DownloadQueue) throws(DownloadError) {
        try queue.resume(id)
    }
}
