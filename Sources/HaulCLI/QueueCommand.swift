import Foundation
import Haul
import HaulCore

/// `haul queue ...`: manage the durable queue.
enum QueueCommand {
    static let specs: [OptionSpec] = [
        OptionSpec(short: "o", long: "output", value: "FILE", help: "add: write to FILE (one URL only)"),
        OptionSpec(short: "d", long: "dir", value: "DIR", help: "add: save into DIR under the server's name (default: .)"),
        OptionSpec(short: nil, long: "priority", value: "N", help: "add: higher runs first (default 0)"),
        OptionSpec(short: nil, long: "paused", value: nil, help: "add: add paused, to start later with resume"),
        OptionSpec(short: nil, long: "delete", value: nil, help: "cancel: also delete the partial data"),
        CommonOptions.jobs,
        CommonOptions.state,
    ] + RequestOptions.specs + CommonOptions.output + [
        OptionSpec(short: "h", long: "help", value: nil, help: "show this help"),
    ]

    static var usage: String {
        """
        Usage: haul queue add URL... [-o FILE | -d DIR] [--priority N] [--paused] [request options]
               haul queue list [--json]
               haul queue pause|resume|rm ID...
               haul queue cancel ID... [--delete]
               haul queue run [-j N] [-q | --json]

        The queue lives in a SQLite database in $XDG_DATA_HOME/haul (else ~/.local/share/haul),
        or in --state DIR. `queue run` downloads until nothing is left, resuming whatever an earlier
        run left behind, even one killed with kill -9. Several `queue run` may share a store: each
        download is leased to one process at a time.

        Options:
        \(ArgumentParser(specs: specs).helpText())

        \(ExitCode.table)
        """
    }

    static func run(_ arguments: [String]) async -> ExitCode {
        let presenter = Presenter(mode: .normal)
        let parsed: ParsedArguments
        do throws(UsageError) {
            parsed = try ArgumentParser(specs: specs).parse(arguments)
        } catch {
            presenter.error("\(error.message)\nTry 'haul queue --help' for more information.")
            return .usage
        }
        if parsed.flag("help") {
            print(usage)
            return .success
        }
        guard let action = parsed.positional.first else {
            presenter.error("queue needs an action: add, list, pause, resume, cancel, rm or run\nTry 'haul queue --help' for more information.")
            return .usage
        }
        let operands = Array(parsed.positional.dropFirst())
        let mode = CommonOptions.mode(parsed)
        do throws(CommandFailure) {
            let queue = try open(parsed)
            switch action {
            case "add": try add(queue, operands, parsed)
            case "list", "ls": try list(queue, json: mode == .json)
            case "pause": try each(operands) { id throws(DownloadError) in try queue.pause(id) }
            case "resume": try each(operands) { id throws(DownloadError) in try queue.resume(id) }
            case "cancel":
                let delete = parsed.flag("delete")
                try each(operands) { id throws(DownloadError) in try queue.cancel(id, deletingPartial: delete) }
            case "rm", "remove": try each(operands) { id throws(DownloadError) in try queue.remove(id) }
            case "run": return try await runQueue(queue, parsed, mode)
            default: throw CommandFailure.usage("unknown queue action \"\(action)\"")
            }
            return .success
        } catch {
            switch error {
            case .usage(let message):
                presenter.error("\(message)\nTry 'haul queue --help' for more information.")
                return .usage
            case .download(let failure):
                presenter.error(failure.message)
                return ExitCode(failure)
            }
        }
    }

    enum CommandFailure: Error {
        case usage(String)
        case download(DownloadError)
    }

    private static func open(_ parsed: ParsedArguments) throws(CommandFailure) -> DownloadQueue {
        do {
            return try DownloadQueue(stateDirectory: parsed.value("state"))
        } catch {
            throw .download(error)
        }
    }

    private static func add(_ queue: DownloadQueue, _ urls: [String], _ parsed: ParsedArguments) throws(CommandFailure) {
        guard !urls.isEmpty else { throw .usage("queue add needs at least one URL") }
        if parsed.value("output") != nil && urls.count > 1 { throw .usage("-o names one file; use -d DIR for several URLs") }
        if parsed.value("output") != nil && parsed.value("dir") != nil { throw .usage("use either -o or -d, not both") }
        var requests: [DownloadRequest] = []
        let priority: Int
        do throws(UsageError) {
            let options = try RequestOptions(parsed)
            priority = try RequestOptions.integer(parsed, "priority", default: 0, range: -1000...1000)
            for text in urls {
                let url = try RequestOptions.url(text)
                let destination: Destination = parsed.value("output").map { .file($0) } ?? .directory(parsed.value("dir") ?? ".")
                requests.append(options.request(url, destination))
            }
        } catch {
            throw .usage(error.message)
        }
        do throws(DownloadError) {
            for id in try queue.add(requests, priority: priority, paused: parsed.flag("paused")) { print(id) }
        } catch {
            throw .download(error)
        }
    }

    private static func list(_ queue: DownloadQueue, json: Bool) throws(CommandFailure) {
        let items: [QueueItem]
        do {
            items = try queue.items()
        } catch {
            throw .download(error)
        }
        if json {
            for item in items { print(JSONEvent.encode(itemObject(item))) }
            return
        }
        print("ID".padding(toLength: 6, withPad: " ", startingAt: 0) + "STATE".padding(toLength: 11, withPad: " ", startingAt: 0)
              + "PROGRESS".padding(toLength: 24, withPad: " ", startingAt: 0) + "SPEED".padding(toLength: 13, withPad: " ", startingAt: 0) + "DESTINATION / ERROR")
        for item in items {
            let progress = item.totalBytes.map { total in
                "\(Format.bytes(item.bytes))/\(Format.bytes(total))"
            } ?? Format.bytes(item.bytes)
            let speed = item.bytesPerSecond > 0 ? "\(Format.bytes(Int64(item.bytesPerSecond)))/s" : "-"
            var where_ = item.finalPath ?? item.destination
            if let error = item.lastError { where_ += "  (\(error))" }
            // A file name or an error text the server chose: its control characters made visible.
            where_ = TerminalText.escaped(where_)
            print(String(item.id).padding(toLength: 6, withPad: " ", startingAt: 0) + item.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)
                  + progress.padding(toLength: 24, withPad: " ", startingAt: 0) + speed.padding(toLength: 13, withPad: " ", startingAt: 0) + where_)
        }
    }

    static func itemObject(_ item: QueueItem) -> [String: Any] {
        [
            "id": item.id, "url": item.urlString, "destination": item.destination, "finalPath": item.finalPath ?? NSNull(),
            "state": item.state.rawValue, "priority": item.priority, "bytes": item.bytes, "totalBytes": item.totalBytes ?? NSNull(),
            "bytesPerSecond": item.bytesPerSecond.rounded(), "lastError": item.lastError ?? NSNull(), "errorCategory": item.errorCategory ?? NSNull(),
        ]
    }

    private static func each(_ operands: [String], _ body: (Int64) throws(DownloadError) -> Void) throws(CommandFailure) {
        guard !operands.isEmpty else { throw .usage("give the id of at least one download (see haul queue list)") }
        var ids: [Int64] = []
        for operand in operands {
            guard let id = Int64(operand), id > 0 else { throw .usage("not a download id: \(operand)") }
            ids.append(id)
        }
        for id in ids {
            do {
                try body(id)
            } catch {
                throw .download(error)
            }
        }
    }

    private static func runQueue(_ queue: DownloadQueue, _ parsed: ParsedArguments, _ mode: OutputMode) async throws(CommandFailure) -> ExitCode {
        let options: RequestOptions
        let jobs: Int
        do throws(UsageError) {
            options = try RequestOptions(parsed)
            jobs = try CommonOptions.jobs(parsed)
        } catch {
            throw .usage(error.message)
        }
        let pending = (try? queue.items().filter { $0.state == .queued || $0.state.hasTransfer }.count) ?? 0
        let presenter = Presenter(mode: mode)
        let signals = SignalWatcher { _ in queue.stopAll() }
        let runOptions = options.runOptions(jobs: jobs)
        let summary = await QueueRunView(queue: queue, presenter: presenter, total: pending).run {
            await queue.run(runOptions)
        }
        if let interrupted = signals.exitCode { return interrupted }
        if let first = summary.failed.first { return ExitCode(first.error) }
        return .success
    }
}
