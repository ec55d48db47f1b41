extension DownloadRunner {
    /// How a run ended.
    enum Ending: Equatable {
        case completed(DownloadCompletion)
        case failed(DownloadError)
        case cancelled
        case paused
    }
}
