import Foundation
import Haul
import HaulCore
import HaulEngine

/// How a run treats every download in it: how many at once, retries, timeouts and one speed
/// limit shared by all. `haul queue run` takes them (a queued item does not keep them), and so
/// does `haul URL`, whose single download or batch is a run of its own.
struct RunSettings: ParsableOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(short: "j", long: "jobs", value: "N", help: "downloads at once in a batch or queue run (default 4)"),
        OptionSpec(
            short: nil, long: "claim-batch", value: "N",
            help: "queue items a run claims in one store transaction, those not started yet held (leased) for its next downloads (default: -j)"),
        OptionSpec(short: nil, long: "connect-timeout", value: "S", help: "seconds to connect (default 30)"),
        OptionSpec(short: nil, long: "stall-timeout", value: "S", help: "seconds without data before retrying (default 30)"),
        OptionSpec(short: nil, long: "retry", value: "N", help: "retries after transient failures (default 5)"),
        OptionSpec(short: nil, long: "retry-wait", value: "S", help: "first wait between retries, doubled each time (default 1)"),
        OptionSpec(
            short: nil, long: "limit-rate", value: "RATE",
            help: "cap the speed of everything this run downloads, shared evenly by its downloads, e.g. 500k, 20M", setting: .rateLimit),
        OptionSpec(
            short: nil, long: "engine", value: "NAME",
            help: "what moves the bytes: curl (libcurl) or urlsession (Foundation's URLSession); default \(TransportEngine.platformDefault.rawValue)"),
    ]

    let jobs: Int
    /// Items claimed in one transaction at most (nil: `jobs`).
    let claimBatch: Int?
    let retry: RetryPolicy
    let connectTimeout: Double
    let stallTimeout: Double
    /// One budget for everything this command downloads: every request and the run share it.
    let limiter: RateLimiter?
    /// The engine every download of the run goes through.
    let engine: TransportEngine

    init(_ parsed: ParsedArguments) throws(UsageError) {
        jobs = try OptionValue.integer(parsed, "jobs", default: 4, range: 1...64)
        claimBatch = parsed.value("claim-batch") == nil ? nil : try OptionValue.integer(parsed, "claim-batch", default: 1, range: 1...1024)
        var retry = RetryPolicy()
        retry.maxRetries = try OptionValue.integer(parsed, "retry", default: 5, range: 0...1000)
        retry.baseDelay = try OptionValue.seconds(parsed, "retry-wait", default: 1)
        self.retry = retry
        connectTimeout = try OptionValue.seconds(parsed, "connect-timeout", default: 30)
        stallTimeout = try OptionValue.seconds(parsed, "stall-timeout", default: 30)
        limiter = try OptionValue.speed(parsed, "limit-rate").map { RateLimiter(bytesPerSecond: $0) }
        engine = try Self.engine(parsed.value("engine"))
        if limiter != nil, !engine.hasBackpressure {
            throw UsageError(
                message: "--limit-rate cannot be kept by the \(engine.rawValue) engine here: it reads on without waiting for the disk (use --engine curl)")
        }
    }

    static func engine(_ name: String?) throws(UsageError) -> TransportEngine {
        guard let name else { return .platformDefault }
        guard let engine = TransportEngine(rawValue: name.lowercased()) else {
            throw UsageError(message: "--engine takes curl or urlsession, got \"\(name)\"")
        }
        guard TransportEngine.available.contains(engine) else {
            throw UsageError(message: "--engine \(name): this build has only \(TransportEngine.available.map(\.rawValue).joined(separator: ", "))")
        }
        return engine
    }

    /// Refuses, before anything starts, options of these requests that the engine cannot honour.
    func check(_ requests: [DownloadRequest]) throws(UsageError) {
        // Read once for the whole batch: building the environment's dictionary costs more than the check.
        let environment = ProcessInfo.processInfo.environment
        for request in requests {
            if let refusal = engine.refusal(of: request.transfer, for: request.url, environment: environment) {
                throw UsageError(message: refusal.rendered(.flags))
            }
        }
    }

    /// The queue's run options; `connections` is the count for items that have none of their own.
    func runOptions(connections: ConnectionsOptions) -> QueueRunOptions {
        var transfer = TransferOptions()
        transfer.connectTimeout = connectTimeout
        transfer.stallTimeout = stallTimeout
        var options = QueueRunOptions(maxConcurrent: jobs, retry: retry, transfer: transfer, rateLimiter: limiter)
        options.connections = connections.connections
        options.claimBatch = claimBatch
        options.settingNames = .flags
        return options
    }

    /// `request` run on its own (no queue) with these settings.
    func applied(to request: DownloadRequest) -> DownloadRequest {
        var request = request
        request.retry = retry
        request.transfer.connectTimeout = connectTimeout
        request.transfer.stallTimeout = stallTimeout
        request.rateLimiter = limiter
        return request
    }
}
