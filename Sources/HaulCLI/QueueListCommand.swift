import Foundation
import Haul
import HaulCLIText
import HaulCore
import HaulJSON

/// `haul queue list [--json]`: every download with its state, progress, speed and last error.
struct QueueListCommand: ParsableCommand {
    static let commandName = "haul queue list"
    static let abstract = "show every download: id, state, progress, speed, destination, error"
    static let json = OptionSpec(short: nil, long: OutputOptions.json.long, value: nil, help: "print one JSON object per download")
    static var options: [OptionSpec] { [json] + StoreOptions.specs }

    static let overview = """
        Usage: haul queue list [--json]

        One row per download, or with --json one object per download (id, url, destination,
        finalPath, state, priority, bytes, totalBytes, bytesPerSecond, lastError, errorCategory).
        """

    let json: Bool
    let store: StoreOptions

    init(_ parsed: ParsedArguments) {
        json = parsed.flag(Self.json.long)
        store = StoreOptions(parsed)
    }

    func run() async throws(CommandError) -> ExitCode {
        let queue = try store.open()
        let items: [QueueItem]
        do throws(DownloadError) {
            items = try queue.items()
        } catch {
            throw .download(error)
        }
        if json {
            for item in items { print(JSONEvent.encode(Self.object(item))) }
        } else {
            print(Self.table(items))
        }
        return .success
    }

    static func table(_ items: [QueueItem]) -> String {
        func column(_ text: String, _ width: Int) -> String { text.padding(toLength: width, withPad: " ", startingAt: 0) }
        var lines = [column("ID", 6) + column("STATE", 11) + column("PROGRESS", 24) + column("SPEED", 13) + "DESTINATION / ERROR"]
        for item in items {
            let progress =
                item.totalBytes.map { total in
                    "\(Format.bytes(item.bytes))/\(Format.bytes(total))"
                } ?? Format.bytes(item.bytes)
            let speed = item.bytesPerSecond > 0 ? "\(Format.bytes(ProgressMeter.wholeBytesPerSecond(item.bytesPerSecond)))/s" : "-"
            var location = item.finalPath ?? item.destination
            if let error = item.lastError { location += "  (\(error))" }
            // A file name or an error text the server chose: its control characters made visible.
            location = TerminalText.escaped(location)
            lines.append(column(String(item.id), 6) + column(item.state.rawValue, 11) + column(progress, 24) + column(speed, 13) + location)
        }
        return lines.joined(separator: "\n")
    }

    static func object(_ item: QueueItem) -> [String: JSONValue] {
        [
            "id": JSONEvent.int(item.id), "url": .string(item.urlString), "destination": .string(item.destination),
            "finalPath": JSONEvent.text(item.finalPath), "state": .string(item.state.rawValue), "priority": JSONEvent.int(item.priority),
            "bytes": JSONEvent.int(item.bytes), "totalBytes": JSONEvent.int(item.totalBytes), "bytesPerSecond": .double(item.bytesPerSecond.rounded()),
            "lastError": JSONEvent.text(item.lastError), "errorCategory": JSONEvent.text(item.errorCategory),
        ]
    }
}
