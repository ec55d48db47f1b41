import Haul
import HaulEngine

/// How the command reports what happens.
enum OutputMode: Sendable {
    case normal
    case quiet
    case json
}

/// `-q` and `--json`: for the commands that report downloads as they run.
struct OutputOptions: ParsableOptions {
    static let quiet = OptionSpec(short: "q", long: "quiet", value: nil, help: "print only errors")
    static let json = OptionSpec(short: nil, long: "json", value: nil, help: "print one JSON object per event on standard output")
    static let specs = [quiet, json]

    let mode: OutputMode

    init(_ parsed: ParsedArguments) {
        mode = parsed.flag("json") ? .json : parsed.flag("quiet") ? .quiet : .normal
    }
}

/// `--state DIR|URI`: where the queue's database lives — a directory (SQLite), or a PostgreSQL
/// database a fleet of machines shares (`postgresql://USER@HOST:PORT/DB`). Every command that uses
/// the queue takes it.
struct StoreOptions: ParsableOptions {
    static let specs = [
        OptionSpec(
            short: nil, long: "state", value: "DIR|URI",
            help: "queue database directory (default $XDG_DATA_HOME/haul), or postgresql://USER@HOST:PORT/DB shared by a fleet")
    ]

    /// The `--state` value as given (a directory or a URI), nil for the default directory.
    let stateDirectory: String?

    init(_ parsed: ParsedArguments) {
        stateDirectory = parsed.value("state")
    }

    /// Where the store is.
    var location: QueueStoreLocation {
        QueueStoreLocation(stateDirectory ?? DownloadQueue.defaultStateDirectory)
    }

    /// Opens (or creates) the store; only `run()` calls it, so a refused command line leaves no trace.
    func open(engine: TransportEngine = .platformDefault) throws(CommandError) -> DownloadQueue {
        do throws(DownloadError) {
            return try DownloadQueue(store: location, engine: engine)
        } catch {
            throw .download(error)
        }
    }
}

/// `--max-per-host N`: at most N downloads of one host at once, across every worker of a shared
/// store (the claim enforces it), within this run on a local one.
struct HostLimitOptions: ParsableOptions {
    static let specs = [
        OptionSpec(short: nil, long: "max-per-host", value: "N", help: "at most N downloads of one host at once, fleet-wide on a shared --state")
    ]

    let maxPerHost: Int?

    init(_ parsed: ParsedArguments) throws(UsageError) {
        maxPerHost = parsed.value("max-per-host") == nil ? nil : try OptionValue.integer(parsed, "max-per-host", default: 1, range: 1...1000)
    }
}

/// `-x N`: connections per file. A download's own (`haul URL`, `haul queue add`), or in
/// `haul queue run` the count for the items added without one.
struct ConnectionsOptions: ParsableOptions {
    static let specs = [
        OptionSpec(
            short: "x", long: "connections", value: "N",
            help: "connections per file, 1-16 (default: adapt: one, then more while each adds speed, up to 16; a 503/429 stops it)")
    ]

    let connections: Int?

    init(_ parsed: ParsedArguments) throws(UsageError) {
        connections = parsed.value("connections") == nil ? nil : try OptionValue.integer(parsed, "connections", default: 1, range: 1...16)
    }
}
