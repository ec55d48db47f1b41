import Foundation
import HaulCore
import HaulStore

extension DownloadRunner {
    /// Opens the output and loads what an earlier run left (the file keeper decides what to do
    /// with it). Decides nothing about the network.
    func prepare() throws(DownloadError) -> PartialDownload {
        let fresh = ResumeRecord(
            originalURL: request.url.absoluteString, finalURL: request.url.absoluteString, method: request.method, range: request.targetDescription)
        do {
            return try PartialDownload.open(
                PartialDownload.Request(destination: request.destination, existingFile: request.existingFile, url: request.url, fresh: fresh),
                records: records)
        } catch {
            throw DownloadError(error)
        }
    }
}

extension DownloadError {
    /// A failure of the output as the download's error: its kind as the category, its path and errno kept.
    init(_ error: OutputError) {
        let category: Category
        switch error.kind {
        case .usage: category = .usage
        case .destinationExists: category = .destinationExists
        case .io: category = .io
        case .cannotResume: category = .cannotResume
        }
        self.init(category, error.text)
        path = error.path
        systemError = error.systemError
    }
}
