import Foundation
import Haul
import HaulCLIText
import HaulCore

/// Shows a download's events: a one-line progress bar on a terminal, plain lines otherwise,
/// only errors with -q, one JSON object per event with --json.
///
/// `@unchecked Sendable`: a batch shows events and aggregate progress from two tasks, and every
/// such call goes through `lock`; a single download uses it from one task only.
final class Presenter: @unchecked Sendable {
    let mode: OutputMode
    private let isTerminal: Bool
    private var lineVisible = false
    /// Lines of the aggregate block currently on screen.
    private var blockLines = 0
    private let lock = NSLock()
    private var spinnerIndex = 0
    private var lastDraw = ContinuousClock.now - .seconds(1)
    /// The file each download of a batch writes, by id, for its line in the aggregate block.
    private var names: [Int64: String] = [:]

    init(mode: OutputMode) {
        self.mode = mode
        self.isTerminal = isatty(STDERR_FILENO) == 1
    }

    func show(_ event: DownloadEvent) {
        switch mode {
        case .json:
            writeStdout(JSONEvent.line(for: event))
        case .quiet:
            if case .failed(let error) = event { message("haul: \(error.shown)") }
        case .normal:
            showHuman(event)
        }
    }

    /// A usage or setup error, before any download.
    func error(_ text: String) {
        message("haul: \(text)")
    }

    // MARK: batches

    /// One event of one download of a batch or queue run (called from one task at a time).
    func show(_ event: DownloadEvent, id: Int64) {
        lock.withLock {
            switch event {
            case .started(let started): names[id] = started.destination.map(Self.fileName) ?? Self.fileName(started.url.path)
            case .response(let info): names[id] = Self.fileName(info.destination)
            default: break
            }
            switch mode {
            case .json:
                writeStdout(JSONEvent.line(for: event, id: id))
            case .quiet:
                if case .failed(let error) = event { message("haul: #\(id): \(error.shown)") }
            case .normal:
                switch event {
                case .completed(let done):
                    message("#\(id) \(done.alreadyComplete ? "already complete:" : "saved") \(done.path) (\(Format.bytes(done.bytes)))")
                case .failed(let error): message("haul: #\(id) failed: \(error.shown)")
                case .restarted(let reason): message("haul: #\(id): \(reason.message)")
                case .response(let info): if let note = info.note { message("haul: #\(id): \(note)") }
                case .retrying(let retry):
                    message("haul: #\(id): \(retry.reason); retry \(retry.attempt) of \(retry.maxRetries) in \(Format.seconds(retry.delay))")
                case .mirror(let note): message("haul: #\(id): \(note.message)")
                default: break
                }
            }
        }
    }

    /// The aggregate block: files done of total, bytes, speed, and one line per active download.
    func showAggregate(_ progress: QueueProgress, total: Int) {
        guard mode == .normal, isTerminal else { return }
        lock.withLock {
            let done = progress.filesCompleted + progress.filesFailed
            var lines = [
                "[\(done)/\(max(total, progress.filesTotal)) files] \(Format.bytes(progress.bytes))\(Format.speed(progress.bytesPerSecond))"
                    + (progress.filesFailed > 0 ? "  \(progress.filesFailed) failed" : "")
            ]
            for (id, item) in progress.active.sorted(by: { $0.key < $1.key }).prefix(8) {
                let percent = item.fraction.map { String(format: "%3d%%", Int($0 * 100)) } ?? "  ? "
                // The name is the server's or the URL's: escaped, as every message is.
                let name = TerminalText.escaped(names[id] ?? "", keepingLineBreaks: false)
                lines.append("  #\(id) \(name) \(percent) \(Format.bytes(item.bytes))\(Format.speed(item.bytesPerSecond))")
            }
            clearBlock()
            FileHandle.standardError.write(Data(lines.joined(separator: "\n").utf8))
            blockLines = lines.count
        }
    }

    /// The batch's closing line. `total` counts every file asked for, `skipped` those an earlier
    /// run completed (not run, already complete).
    func finishAggregate(_ summary: QueueRunSummary, total: Int, skipped: Int = 0) {
        lock.withLock {
            switch mode {
            case .json:
                writeStdout(JSONEvent.summary(summary, total: total, skipped: skipped))
            case .quiet:
                if let line = Self.tally(summary, total: total, skipped: skipped).quietLine { message(line) }
            case .normal:
                message(Self.tally(summary, total: total, skipped: skipped).line)
            }
        }
    }

    static func tally(_ summary: QueueRunSummary, total: Int, skipped: Int) -> RunTally {
        RunTally(
            total: total, skipped: skipped, completed: summary.completed.count, alreadyComplete: summary.alreadyComplete.count,
            failed: summary.failed.count, paused: summary.paused.count, cancelled: summary.cancelled.count)
    }

    private func clearBlock() {
        guard blockLines > 0 else { return }
        let up = blockLines > 1 ? "\u{1B}[\(blockLines - 1)A" : ""
        FileHandle.standardError.write(Data(("\r" + up + "\u{1B}[J").utf8))
        blockLines = 0
    }

    private func showHuman(_ event: DownloadEvent) {
        switch event {
        case .started(let started):
            if started.resumingFrom > 0 {
                message("resuming \(Redaction.url(started.url)) from \(Format.bytes(started.resumingFrom))")
            }
            if let note = started.note { message("haul: \(note)") }
        case .response(let info):
            if let note = info.note { message("haul: \(note)") }
        case .progress(let progress):
            if isTerminal { draw(progress) }
        case .restarted(let reason):
            message("haul: \(reason.message)")
        case .retrying(let retry):
            message("haul: \(retry.reason); retry \(retry.attempt) of \(retry.maxRetries) in \(Format.seconds(retry.delay))")
        case .mirror(let note):
            message("haul: \(note.message)")
        case .paused(let progress):
            message("stopped at \(Format.bytes(progress.bytes)); run the same command again to resume")
        case .completed(let done):
            if isTerminal { clearLine() }
            let saved = done.alreadyComplete ? "already complete: \(done.path) (\(Format.bytes(done.bytes)))" : "saved \(done.path) (\(Self.figures(done)))"
            message(saved + (done.digest.map { ", \($0)" } ?? ""))
            if let proof = done.mirrorProof { message("haul: \(proof)") }
        case .failed(let error):
            message("haul: \(error.shown)")
        case .cancelled:
            message("haul: cancelled")
        }
    }

    private func draw(_ progress: DownloadProgress) {
        let now = ContinuousClock.now
        guard now - lastDraw >= .milliseconds(200) else { return }
        lastDraw = now
        let speed = Format.speed(progress.bytesPerSecond)
        var line: String
        if let fraction = progress.fraction, let total = progress.totalBytes {
            let width = 24
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "=", count: filled) + (filled < width ? ">" : "") + String(repeating: " ", count: max(0, width - filled - 1))
            let eta = progress.secondsLeft.map { "ETA \(Format.clock($0))" } ?? "ETA --:--"
            line = String(format: "%3d%% ", Int(fraction * 100)) + "[\(bar)] \(Format.bytes(progress.bytes)) / \(Format.bytes(total))\(speed)  \(eta)"
        } else {
            let spinner = Array("|/-\\")
            spinnerIndex = (spinnerIndex + 1) % spinner.count
            line = "\(spinner[spinnerIndex]) \(Format.bytes(progress.bytes))\(speed)"
        }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
        lineVisible = true
    }

    private func clearLine() {
        guard lineVisible else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
        lineVisible = false
    }

    private func message(_ text: String) {
        if isTerminal {
            clearLine()
            clearBlock()
        }
        // Messages quote what servers sent (a Location, a file name, a reason, a URL): escaped so
        // none of it can retitle, clear or rewrite the terminal. Haul's own line breaks stay.
        FileHandle.standardError.write(Data((TerminalText.escaped(text, keepingLineBreaks: true) + "\n").utf8))
    }

    private func writeStdout(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// A completion's figures, each named for what it is: the file's size, and this run's bytes,
    /// time and speed (after a resume, the run fetched only what the earlier ones left).
    /// The last component of a path, for a batch's lines.
    static func fileName(_ path: String) -> String {
        AbsolutePath.name(of: path)
    }

    static func figures(_ done: DownloadCompletion) -> String {
        let run = "\(Format.seconds(done.seconds)), \(Format.bytes(ProgressMeter.wholeBytesPerSecond(done.bytesPerSecond)))/s"
        guard done.resumedFrom > 0 else { return "\(Format.bytes(done.bytes)) in \(run)" }
        return "\(Format.bytes(done.bytes)); resumed from \(Format.bytes(done.resumedFrom)), this run \(Format.bytes(done.bytesTransferred)) in \(run)"
    }
}

/// Human-readable numbers.
enum Format {
    /// A measured speed after two spaces (`  1.0 MiB/s`); nothing while there is none yet (0: the
    /// meter shows none until it has measured a second).
    static func speed(_ bytesPerSecond: Double) -> String {
        let whole = ProgressMeter.wholeBytesPerSecond(bytesPerSecond)
        return whole > 0 ? "  \(bytes(whole))/s" : ""
    }

    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func seconds(_ seconds: Double) -> String {
        seconds < 10 ? String(format: "%.2fs", seconds) : String(format: "%.0fs", seconds)
    }

    static func clock(_ seconds: Double) -> String {
        // A server can make the estimate absurd (a length of Int64.max, a byte now and then):
        // beyond about 68 years it is no estimate, and `Int` of a larger Double would trap.
        guard seconds.isFinite, seconds >= 0, seconds < Double(Int32.max) else { return "--:--" }
        let total = Int(seconds.rounded())
        let hours = total / 3600
        let minutes = (total % 3600) / 60
        let secs = total % 60
        return hours > 0 ? String(format: "%d:%02d:%02d", hours, minutes, secs) : String(format: "%d:%02d", minutes, secs)
    }
}
