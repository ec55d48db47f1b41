import Haul

/// `haul queue rm ID...`.
struct QueueRemoveCommand: QueueIDCommand {
    static let commandName = "haul queue rm"
    static let abstract = "remove downloads from the queue (a completed file stays)"

    static let overview = """
        Usage: haul queue rm ID...

        The download leaves the queue; its partial file, if any, is deleted too (a completed file
        stays where it is).
        """

    let ids: DownloadIDs
    let store: StoreOptions

    static func act(on id: Int64, in queue: DownloadQueue) throws(DownloadError) {
        try queue.remove(id)
    }
}
