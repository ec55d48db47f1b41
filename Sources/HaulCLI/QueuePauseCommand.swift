import Haul

/// `haul queue pause ID...`.
struct QueuePauseCommand: QueueIDCommand {
    static let commandName = "haul queue pause"
    static let abstract = "pause downloads at their next checkpoint, even in another process"

    static let overview = """
        Usage: haul queue pause ID...

        Pausing a running download stops it at its next checkpoint, also when another process
        runs it; 'haul queue resume' queues it again.
        """

    let ids: DownloadIDs
    let store: StoreOptions

    static func act(on id: Int64, in queue: DownloadQueue) throws(DownloadError) {
        try queue.pause(id)
    }
}
