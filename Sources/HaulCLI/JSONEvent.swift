import Foundation
import Haul
import HaulCore
import HaulJSON

/// One JSON object per event, for --json. Keys are stable; numbers are plain JSON numbers. Written
/// by HaulJSON's writer, whose rules every JSON Haul writes follows.
enum JSONEvent {
    static func line(for event: DownloadEvent, id: Int64? = nil) -> String {
        var object: [String: JSONValue]
        switch event {
        case .started(let started):
            object = [
                "event": "started", "url": .string(Redaction.url(started.url)), "destination": text(started.destination),
                "resumingFrom": .int(started.resumingFrom), "note": text(started.note),
            ]
        case .response(let info):
            object = [
                "event": "response", "status": int(info.status), "finalURL": .string(Redaction.url(info.finalURL)), "totalBytes": int(info.totalBytes),
                "resumedFrom": .int(info.resumedFrom), "destination": .string(info.destination), "note": text(info.note),
            ]
        case .progress(let progress):
            object = progressObject("progress", progress)
        case .restarted(let reason):
            object = [
                "event": "restarted", "reason": .string(reason.code.rawValue), "message": .string(reason.message),
                "discardedBytes": .int(reason.discardedBytes),
            ]
        case .retrying(let retry):
            object = [
                "event": "retrying", "attempt": int(retry.attempt), "maxRetries": int(retry.maxRetries), "delay": .double(retry.delay),
                "reason": .string(retry.reason),
            ]
        case .mirror(let note):
            object = ["event": "mirror", "url": .string(Redaction.url(note.url)), "change": .string(note.change.rawValue), "reason": .string(note.reason)]
        case .paused(let progress):
            object = progressObject("paused", progress)
        case .completed(let done):
            object = [
                "event": "completed", "path": .string(done.path), "bytes": .int(done.bytes), "bytesTransferred": .int(done.bytesTransferred),
                "seconds": .double(done.seconds), "finalURL": .string(Redaction.url(done.finalURL)), "digest": text(done.digest),
                "mirrorProof": text(done.mirrorProof), "resumedFrom": .int(done.resumedFrom), "alreadyComplete": .bool(done.alreadyComplete),
            ]
        case .failed(let error):
            object = [
                "event": "failed", "category": .string(error.category.name), "message": .string(error.shown), "httpStatus": int(error.httpStatus),
                "exitCode": int(Int(ExitCode(error).rawValue)),
            ]
        case .cancelled:
            object = ["event": "cancelled"]
        }
        if let id { object["id"] = .int(id) }
        return encode(object)
    }

    /// A batch's closing summary: every file asked for (`total`), counted once each as fetched
    /// (`completed`), already complete (`alreadyComplete`: skipped as done, or found in place,
    /// nothing fetched), `failed`, `paused` or `cancelled`. `skipped`: files not run because an
    /// earlier run completed them (counted in `total` and `alreadyComplete`).
    static func summary(_ summary: QueueRunSummary, total: Int, skipped: Int = 0) -> String {
        let already = summary.alreadyComplete.count + skipped
        return encode([
            "event": "summary", "total": int(total), "completed": int(summary.completed.count - summary.alreadyComplete.count),
            "alreadyComplete": int(already), "failed": int(summary.failed.count), "paused": int(summary.paused.count),
            "cancelled": int(summary.cancelled.count),
        ])
    }

    static func encode(_ object: [String: JSONValue]) -> String {
        JSONValue.object(object).text
    }

    /// A text, or null.
    static func text(_ value: String?) -> JSONValue {
        value.map(JSONValue.string) ?? .null
    }

    /// A number, or null.
    static func int(_ value: (some BinaryInteger)?) -> JSONValue {
        value.map { .int(Int64($0)) } ?? .null
    }

    private static func progressObject(_ name: String, _ progress: DownloadProgress) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "event": .string(name),
            "bytes": .int(progress.bytes),
            "totalBytes": int(progress.totalBytes),
            "bytesPerSecond": .double(progress.bytesPerSecond.rounded()),
            "secondsLeft": progress.secondsLeft.map(JSONValue.double) ?? .null,
            "connections": int(progress.connections),
        ]
        if let segments = progress.segments {
            object["segments"] = .array(segments.map { ["begin": .int($0.begin), "next": .int($0.next), "end": .int($0.end)] })
        }
        return object
    }
}
