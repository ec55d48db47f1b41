import Foundation
import Haul
import HaulCore

/// One JSON object per event, for --json. Keys are stable; numbers are plain JSON numbers.
enum JSONEvent {
    static func line(for event: DownloadEvent, id: Int64? = nil) -> String {
        var object: [String: Any]
        switch event {
        case .started(let started):
            object = [
                "event": "started", "url": Redaction.url(started.url), "destination": started.destination ?? NSNull(), "resumingFrom": started.resumingFrom,
                "note": started.note ?? NSNull(),
            ]
        case .response(let info):
            object = [
                "event": "response", "status": info.status, "finalURL": Redaction.url(info.finalURL), "totalBytes": info.totalBytes ?? NSNull(),
                "resumedFrom": info.resumedFrom, "destination": info.destination, "note": info.note ?? NSNull(),
            ]
        case .progress(let progress):
            object = progressObject("progress", progress)
        case .restarted(let reason):
            object = ["event": "restarted", "reason": reason.code.rawValue, "message": reason.message, "discardedBytes": reason.discardedBytes]
        case .retrying(let retry):
            object = ["event": "retrying", "attempt": retry.attempt, "maxRetries": retry.maxRetries, "delay": retry.delay, "reason": retry.reason]
        case .mirror(let note):
            object = ["event": "mirror", "url": Redaction.url(note.url), "change": note.change.rawValue, "reason": note.reason]
        case .paused(let progress):
            object = progressObject("paused", progress)
        case .completed(let done):
            object = [
                "event": "completed", "path": done.path, "bytes": done.bytes, "bytesTransferred": done.bytesTransferred, "seconds": done.seconds,
                "finalURL": Redaction.url(done.finalURL), "digest": done.digest ?? NSNull(), "mirrorProof": done.mirrorProof ?? NSNull(),
                "resumedFrom": done.resumedFrom, "alreadyComplete": done.alreadyComplete,
            ]
        case .failed(let error):
            object = [
                "event": "failed", "category": error.category.name, "message": error.shown, "httpStatus": error.httpStatus ?? NSNull(),
                "exitCode": Int(ExitCode(error).rawValue),
            ]
        case .cancelled:
            object = ["event": "cancelled"]
        }
        if let id { object["id"] = id }
        return encode(object)
    }

    /// A batch's closing summary: every file asked for (`total`), counted once each as fetched
    /// (`completed`), already complete (`alreadyComplete`: skipped as done, or found in place,
    /// nothing fetched), `failed`, `paused` or `cancelled`. `skipped`: files not run because an
    /// earlier run completed them (counted in `total` and `alreadyComplete`).
    static func summary(_ summary: QueueRunSummary, total: Int, skipped: Int = 0) -> String {
        let already = summary.alreadyComplete.count + skipped
        return encode([
            "event": "summary", "total": total, "completed": summary.completed.count - summary.alreadyComplete.count, "alreadyComplete": already,
            "failed": summary.failed.count, "paused": summary.paused.count, "cancelled": summary.cancelled.count,
        ])
    }

    static func encode(_ object: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
            let text = String(data: data, encoding: .utf8)
        else { return "{\"event\":\"unencodable\"}" }
        return text
    }

    private static func progressObject(_ name: String, _ progress: DownloadProgress) -> [String: Any] {
        var object: [String: Any] = [
            "event": name,
            "bytes": progress.bytes,
            "totalBytes": progress.totalBytes ?? NSNull(),
            "bytesPerSecond": progress.bytesPerSecond.rounded(),
            "secondsLeft": progress.secondsLeft ?? NSNull(),
            "connections": progress.connections,
        ]
        if let segments = progress.segments {
            object["segments"] = segments.map { ["begin": $0.begin, "next": $0.next, "end": $0.end] }
        }
        return object
    }
}
