import Foundation
import HaulCore
import HaulStore

/// Why a download's finished file is not handed out (`DownloadQueue.openFinishedFile`).
package enum FinishedFileRefusal: Error, Equatable {
    /// No download with this id.
    case noSuchDownload
    /// The download is not complete (its state is given).
    case notComplete(DownloadState)
    /// Complete, but its file is not where Haul put it (removed or moved away).
    case missing(path: String)
    /// A file is there, but not the one Haul finished (replaced, or changed in place since), or
    /// Haul could not mark it (a request with headers, a body or credentials, or a file system
    /// without extended attributes): nothing proves it is this download's.
    case notProven(path: String)
    /// The file cannot be opened now (`reason`: out of descriptors or memory, or not readable):
    /// another try may succeed.
    case unreadable(path: String, reason: String)
}

extension DownloadQueue {
    /// The finished file of download `id`, opened read-only, when the download is complete and the
    /// file at its path is the one Haul finished for it (`FinishedMark`, proven on the open
    /// descriptor). The caller closes `file.fd`. Store failures throw; refusals are returned.
    package func openFinishedFile(_ id: Int64) throws(DownloadError) -> Result<(file: FinishedFile, path: String), FinishedFileRefusal> {
        guard let item = try storeCall({ try $0.item(id) }) else { return .failure(.noSuchDownload) }
        guard item.state == .completed else { return .failure(.notComplete(item.state)) }
        guard let path = item.finalPath ?? (item.destinationKind == .file ? item.destination : nil) else { return .failure(.missing(path: item.destination)) }
        switch FinishedFile.openProven(at: path, url: item.url, method: item.method, range: item.range) {
        case .success(let file): return .success((file, path))
        case .failure(.missing): return .failure(.missing(path: path))
        case .failure(.notProven): return .failure(.notProven(path: path))
        case .failure(.unreadable(let error)): return .failure(.unreadable(path: path, reason: String(cString: strerror(error))))
        }
    }
}
