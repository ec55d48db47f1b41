import HaulCore
import HaulStore

extension DownloadError {
    /// A failure of the output as the download's error: its kind as the category, its path and errno kept.
    init(_ error: OutputError) {
        let category: Category
        switch error.kind {
        case .usage: category = .usage
        case .destinationExists, .heldElsewhere: category = .destinationExists
        case .io: category = .io
        case .cannotResume: category = .cannotResume
        }
        self.init(category, error.text)
        path = error.path
        systemError = error.systemError
        heldElsewhere = error.kind == .heldElsewhere
    }
}
