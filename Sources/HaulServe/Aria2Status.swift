import Foundation
import Haul
import HaulCore
import HaulRPC

/// One download as aria2 describes it: the fields of `aria2.tellStatus`, all numbers as strings.
struct Aria2Status {
    let item: QueueItem
    /// Progress of the running transfer in this process, fresher than the store's.
    let live: DownloadProgress?
    /// The directory downloads go to when they name none (the item's own when it has one).
    let directory: String

    var status: String { Self.status(of: item.state) }

    static func status(of state: DownloadState) -> String {
        switch state {
        case .queued: return "waiting"
        case .running: return "active"
        case .pausing, .paused: return "paused"
        case .completed: return "complete"
        case .failed: return "error"
        case .cancelling, .cancelled: return "removed"
        }
    }

    /// aria2's exit codes for the error categories (its manual's "EXIT STATUS").
    static func errorCode(_ category: String?, message: String?) -> String {
        switch category {
        case "network": return message?.localizedCaseInsensitiveContains("resolve") == true ? "19" : "6"
        case "http-status":
            if message?.contains("404") == true { return "3" }
            if message?.contains("401") == true || message?.contains("403") == true { return "24" }
            return "22"
        case "io": return message?.localizedCaseInsensitiveContains("space") == true ? "9" : "16"
        case "destination-exists": return "13"
        case "checksum": return "32"
        case "protocol": return "22"
        case "cancelled": return "5"
        default: return "1"
        }
    }

    var completedLength: Int64 { live?.bytes ?? item.bytes }
    var totalLength: Int64 { live?.totalBytes ?? item.totalBytes ?? (item.state == .completed ? item.bytes : 0) }
    var downloadSpeed: Int64 { item.state == .running ? ProgressMeter.wholeBytesPerSecond(live?.bytesPerSecond ?? item.bytesPerSecond) : 0 }

    /// Where the file is (or will be): its final path once known, else the named destination, else
    /// (a directory download before its response named the file) the name its URL gives, as aria2
    /// shows it before the first response.
    var path: String {
        if let final = item.finalPath { return final }
        guard item.destinationIsDirectory else { return item.destination }
        guard let url = item.url else { return "" }
        let name = FileNameSanitizer.destinationName(contentDisposition: nil, url: url)
        return item.destination.hasSuffix("/") ? item.destination + name : item.destination + "/" + name
    }

    var dir: String {
        if item.destinationIsDirectory { return item.destination }
        let path = item.finalPath ?? item.destination
        return AbsolutePath.parent(of: path)
    }

    var connections: Int {
        guard item.state == .running else { return 0 }
        return live?.connections ?? 1
    }

    var files: JSONValue {
        [
            [
                "index": "1",
                "path": .string(path),
                "length": .string(String(totalLength)),
                "completedLength": .string(String(completedLength)),
                "selected": "true",
                "uris": uris,
            ]
        ]
    }

    var uris: JSONValue {
        .array([["uri": .string(item.urlString), "status": item.state == .running ? "used" : "waiting"]])
    }

    /// Every field, or only `keys` when given (aria2's filter).
    func json(keys: [String]? = nil) -> JSONValue {
        var fields: [String: JSONValue] = [
            "gid": .string(GID.string(item.id)),
            "status": .string(status),
            "totalLength": .string(String(totalLength)),
            "completedLength": .string(String(completedLength)),
            "uploadLength": "0",
            "downloadSpeed": .string(String(downloadSpeed)),
            "uploadSpeed": "0",
            "connections": .string(String(connections)),
            "numPieces": "1",
            "pieceLength": .string(String(max(1, totalLength))),
            "dir": .string(dir),
            "files": files,
            "verifiedLength": "0",
            "verifyIntegrityPending": "false",
        ]
        if item.state == .failed || item.state == .cancelled {
            let category = item.state == .cancelled ? "cancelled" : item.errorCategory
            fields["errorCode"] = .string(Self.errorCode(category, message: item.lastError))
            fields["errorMessage"] = .string(item.lastError ?? (item.state == .cancelled ? "removed" : "failed"))
        }
        guard let keys, !keys.isEmpty else { return .object(fields) }
        return .object(fields.filter { keys.contains($0.key) })
    }
}
