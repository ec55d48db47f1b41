import Foundation
import HaulCore

/// One download as the queue stores it: what to fetch, where, and how far it got.
package struct StoredDownload: Sendable, Equatable {
    package enum DestinationKind: String, Sendable {
        /// `destination` is the file's path.
        case file
        /// `destination` is a directory; the name comes from the response.
        case directory
    }

    package var id: Int64
    package var url: String
    package var method: String
    package var headers: [HTTPHeaders.Field]
    package var body: [UInt8]?
    package var destinationKind: DestinationKind
    /// An absolute path.
    package var destination: String
    /// The requested range (`bytes=...`), nil for the whole resource.
    package var range: String?
    /// What to do with an existing file (stored as its raw value: "refuse", "overwrite" or "continue").
    package var existingPolicy: ExistingFilePolicy
    package var priority: Int
    package var state: DownloadState
    package var bytes: Int64
    package var totalBytes: Int64?
    package var bytesPerSecond: Double
    /// Where the finished file is (or will be, once known).
    package var finalPath: String?
    package var lastError: String?
    package var errorCategory: String?
    /// The resume record column as read with the row (JSON), nil when there is none.
    package var recordText: String?
    /// Times the item was claimed to run.
    package var attempts: Int
    /// The rest of the request as it was added; nil for rows added before the options were stored.
    package var options: StoredOptions?
    package var createdAt: Date
    package var updatedAt: Date
    /// What of the row could not be read back, nil for a sound row. A damaged item never runs:
    /// a run fails it with the reason (see `RowDamage`).
    package var damage: RowDamage? = nil
    /// The epoch of the item's latest lease: every claim takes a new one, and each write of the
    /// transfer it started names it (a fencing token), so a transfer whose lease was lost can
    /// change nothing.
    package var leaseEpoch: Int64 = 0
    /// Who holds the item's lease, as the row was read (nil when none does).
    package var leaseOwner: LeaseOwner? = nil
    /// A move of it under way, or cut short by a crash (see `MoveIntent`); nil for none.
    package var moveIntent: MoveIntent? = nil

    /// Whether the columns that say where the download's files are (URL, destination, existing-file
    /// policy) were read back: what removing its partial needs.
    package var placementIsReadable: Bool {
        guard let damage else { return true }
        return !["url", "destination_kind", "destination", "existing_policy"].contains { damage.covers($0) }
    }
}

/// What `QueueStore.add` needs to create an item.
package struct NewDownload: Sendable, Equatable {
    package var url: String
    package var method: String
    package var headers: [HTTPHeaders.Field]
    package var body: [UInt8]?
    package var destinationKind: StoredDownload.DestinationKind
    package var destination: String
    package var range: String?
    package var existingPolicy: ExistingFilePolicy
    package var priority: Int
    /// Start paused instead of queued.
    package var paused: Bool
    package var options: StoredOptions?

    package init(
        url: String,
        method: String = "GET",
        headers: [HTTPHeaders.Field] = [],
        body: [UInt8]? = nil,
        destinationKind: StoredDownload.DestinationKind,
        destination: String,
        range: String? = nil,
        existingPolicy: ExistingFilePolicy = .refuse,
        priority: Int = 0,
        paused: Bool = false,
        options: StoredOptions? = nil
    ) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
        self.destinationKind = destinationKind
        self.destination = destination
        self.range = range
        self.existingPolicy = existingPolicy
        self.priority = priority
        self.paused = paused
        self.options = options
    }

    /// The key under which the queue tells destinations apart: one file, or one URL into one directory.
    package var destinationKey: String {
        Self.destinationKey(kind: destinationKind, destination: destination, url: url)
    }

    /// The key of a download of `url` to `destination` (an absolute path) of `kind`.
    package static func destinationKey(kind: StoredDownload.DestinationKind, destination: String, url: String) -> String {
        kind == .file ? "file:" + destination : "dir:" + destination + "|" + url
    }
}

/// Who runs an item: a process of this boot, identified so others can tell when it died.
package struct LeaseOwner: Sendable, Hashable {
    package let bootID: String
    package let pid: Int32
    package let token: String

    package init(bootID: String = BootID.current ?? "unknown-boot", pid: Int32 = getpid(), token: String = UUID().uuidString) {
        self.bootID = bootID
        self.pid = pid
        self.token = token
    }

    package var encoded: String { "\(bootID)|\(pid)|\(token)" }

    /// Split at "|" bytes, in the text's own buffer: a split over Characters (a grapheme break
    /// looked for at every one) cost 33K instructions, and every queue row read has an owner.
    package init?(encoded: String) {
        var text = encoded
        let parts = text.withUTF8 { bytes in
            bytes.split(separator: UInt8(ascii: "|"), omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        }
        guard parts.count == 3, let pid = Int32(parts[1]) else { return nil }
        self.init(bootID: parts[0], pid: pid, token: parts[2])
    }

    /// Whether the owner can still be running: same boot and its process exists.
    /// A process of another boot is certainly gone (the machine restarted).
    package var isAlive: Bool {
        guard bootID == BootID.current else { return false }
        if kill(pid, 0) == 0 { return true }
        return errno == EPERM
    }
}

extension NewDownload {
    /// Whether `item` is this very request, added before (an app adds its requests at every
    /// launch). An unfinished item must match in everything that shapes the download: URL,
    /// method, headers, body, place, range, policy and options. A completed one kept no headers,
    /// body or password (scrubbed when it settled), so it matches by URL, method, place and range,
    /// unless this request asks to replace the file. A damaged row matches nothing.
    package func isSameRequest(as item: StoredDownload) -> Bool {
        guard item.damage == nil, item.method == method, item.destinationKind == destinationKind, item.destination == destination,
            item.range == range
        else { return false }
        if item.state == .completed {
            return existingPolicy != .overwrite && item.url == Redaction.withoutPassword(url)
        }
        return item.url == url && item.headers == headers && item.body == body && item.existingPolicy == existingPolicy && item.options == options
    }
}
