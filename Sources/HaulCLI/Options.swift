import Foundation
import Haul
import HaulCore
import HaulEngine

/// How the command reports what happens.
enum OutputMode: Sendable {
    case normal
    case quiet
    case json
}

/// The options that shape requests and transfers, shared by single downloads, batches and the queue.
struct RequestOptions: Sendable {
    static let specs: [OptionSpec] = [
        OptionSpec(short: "c", long: "continue", value: nil, help: "continue a file already at the destination (checked first)"),
        OptionSpec(short: nil, long: "force", value: nil, help: "replace an existing complete file"),
        OptionSpec(short: "r", long: "range", value: "RANGE", help: "only bytes x-y, the last z (-z) or from q (q-)"),
        OptionSpec(short: "X", long: "request", value: "METHOD", help: "HTTP method (default GET, POST with --data)"),
        OptionSpec(short: "H", long: "header", value: "LINE", help: "add a header \"Name: value\" (repeatable)", repeatable: true),
        OptionSpec(short: nil, long: "data", value: "DATA", help: "request body; @FILE reads it from FILE"),
        OptionSpec(short: nil, long: "max-redirects", value: "N", help: "redirects to follow (default 10)"),
        OptionSpec(short: nil, long: "allow-http-redirect", value: nil, help: "follow a redirect from https to http (refused by default)"),
        OptionSpec(short: nil, long: "connect-timeout", value: "S", help: "seconds to connect (default 30)"),
        OptionSpec(short: nil, long: "stall-timeout", value: "S", help: "seconds without data before retrying (default 30)"),
        OptionSpec(short: nil, long: "retry", value: "N", help: "retries after transient failures (default 5)"),
        OptionSpec(short: nil, long: "retry-wait", value: "S", help: "first wait between retries, doubled each time (default 1)"),
        OptionSpec(short: nil, long: "limit-rate", value: "RATE", help: "cap the speed, e.g. 500k, 20M"),
        OptionSpec(short: "x", long: "connections", value: "N", help: "connections per file, 1-16 (default: adapt, up to 8)"),
        OptionSpec(short: nil, long: "insecure", value: nil, help: "do not verify TLS certificates"),
        OptionSpec(short: nil, long: "cacert", value: "FILE", help: "trust the CA certificates in FILE (PEM)"),
        OptionSpec(short: nil, long: "checksum", value: "ALGO=HEX", help: "verify the file: sha256=, sha512=, sha1= or md5= (one URL only)"),
        OptionSpec(short: nil, long: "min-free-space", value: "SIZE", help: "keep SIZE free beyond the file, e.g. 0, 500M (default 16M)"),
        OptionSpec(short: nil, long: "max-size", value: "SIZE", help: "refuse or stop a download larger than SIZE, e.g. 2G (bytes kept)"),
    ]

    var method = "GET"
    var headers = HTTPHeaders()
    var body: [UInt8]?
    var target: DownloadTarget = .whole
    var existingFile: ExistingFilePolicy = .refuse
    var retry = RetryPolicy()
    var transfer = TransferOptions()
    var maxRedirects = 10
    var allowsHTTPRedirect = false
    var maxSize: Int64?
    var checksum: Checksum?
    var connections: Int?
    var minFreeSpace: Int64 = 16 * 1024 * 1024
    /// --limit-rate: one budget for everything this command downloads (copies share it).
    var sharedLimiter: RateLimiter?

    init(_ parsed: ParsedArguments) throws(UsageError) {
        if parsed.flag("force") && parsed.flag("continue") {
            throw UsageError(message: "--force and --continue contradict each other")
        }
        existingFile = parsed.flag("force") ? .overwrite : parsed.flag("continue") ? .continueIt : .refuse
        if let range = parsed.value("range") {
            do throws(ByteRangeSpecError) {
                target = .range(try ByteRangeSpec(parsing: range))
            } catch {
                throw UsageError(message: "--range \(range): \(error.message)")
            }
        }
        for line in parsed.all("header") {
            guard let colon = line.firstIndex(of: ":"), line.startIndex != colon else {
                throw UsageError(message: "--header needs \"Name: value\", got \"\(line)\"")
            }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces)
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            guard !name.contains(where: { $0.isWhitespace || $0.isNewline }), !value.contains(where: \.isNewline) else {
                throw UsageError(message: "--header has an invalid name or value: \"\(line)\"")
            }
            if ["range", "if-range"].contains(name.lowercased()) {
                throw UsageError(message: "Haul sets \(name) itself; use --range to download part of a file")
            }
            headers.add(name, value)
        }
        if let data = parsed.value("data") {
            body = try Self.body(data)
            method = "POST"
            if !headers.contains("Content-Type") {
                headers.add("Content-Type", "application/x-www-form-urlencoded")
            }
        }
        if let requested = parsed.value("request") {
            guard !requested.isEmpty, requested.allSatisfy({ $0.isLetter || $0 == "-" }) else {
                throw UsageError(message: "--request needs a method name such as GET or POST, got \"\(requested)\"")
            }
            method = requested.uppercased()
        }
        maxRedirects = try Self.integer(parsed, "max-redirects", default: 10, range: 0...100)
        retry.maxRetries = try Self.integer(parsed, "retry", default: 5, range: 0...1000)
        retry.baseDelay = try Self.seconds(parsed, "retry-wait", default: 1)
        transfer.connectTimeout = try Self.seconds(parsed, "connect-timeout", default: 30)
        transfer.stallTimeout = try Self.seconds(parsed, "stall-timeout", default: 30)
        if let rate = parsed.value("limit-rate") {
            guard let bytes = Self.rate(rate), bytes > 0 else {
                throw UsageError(message: "--limit-rate needs a rate such as 500k or 20M, got \"\(rate)\"")
            }
            sharedLimiter = RateLimiter(bytesPerSecond: bytes)
        }
        if let text = parsed.value("checksum") {
            do throws(ChecksumError) {
                checksum = try Checksum(parsing: text)
            } catch {
                throw UsageError(message: "--checksum \(text): \(error.message)")
            }
        }
        if parsed.value("connections") != nil {
            connections = try Self.integer(parsed, "connections", default: 1, range: 1...16)
        }
        if let text = parsed.value("min-free-space") {
            guard let bytes = text == "0" ? 0 : Self.rate(text) else {
                throw UsageError(message: "--min-free-space needs a size such as 0, 500M or 2G, got \"\(text)\"")
            }
            minFreeSpace = bytes
        }
        if let text = parsed.value("max-size") {
            guard let bytes = Self.rate(text) else {
                throw UsageError(message: "--max-size needs a size such as 500M or 2G, got \"\(text)\"")
            }
            maxSize = bytes
        }
        allowsHTTPRedirect = parsed.flag("allow-http-redirect")
        transfer.verifyTLS = !parsed.flag("insecure")
        if let caFile = parsed.value("cacert") {
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw UsageError(message: "--cacert \(caFile): no such readable file")
            }
            transfer.caFile = caFile
        }
    }

    /// A request for `url` into `destination` with these options.
    func request(_ url: URL, _ destination: Destination) -> DownloadRequest {
        var request = DownloadRequest(
            url: url, destination: destination, method: method, headers: headers, body: body, target: target,
            existingFile: existingFile, retry: retry, transfer: transfer, maxRedirects: maxRedirects, checksum: checksum)
        request.minFreeSpace = minFreeSpace
        request.maxSize = maxSize
        request.allowsHTTPRedirect = allowsHTTPRedirect
        request.connections = connections
        request.rateLimiter = sharedLimiter
        return request
    }

    /// The settings a queue run applies to every item.
    func runOptions(jobs: Int) -> QueueRunOptions {
        var options = QueueRunOptions(maxConcurrent: jobs, retry: retry, transfer: transfer, maxRedirects: maxRedirects, rateLimiter: sharedLimiter)
        options.connections = connections
        options.allowsHTTPRedirect = allowsHTTPRedirect
        options.maxSize = maxSize
        return options
    }

    static func url(_ text: String) throws(UsageError) -> URL {
        do throws(DownloadList.URLProblem) {
            return try DownloadList.parseHTTPURL(text)
        } catch {
            throw UsageError(message: "\(error.message): \(text)")
        }
    }

    private static func body(_ data: String) throws(UsageError) -> [UInt8] {
        guard data.hasPrefix("@") else { return Array(data.utf8) }
        let path = String(data.dropFirst())
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw UsageError(message: "--data @\(path): cannot read the file")
        }
        return Array(contents)
    }

    static func integer(_ parsed: ParsedArguments, _ name: String, default value: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = parsed.value(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(message: "--\(name) needs a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return number
    }

    private static func seconds(_ parsed: ParsedArguments, _ name: String, default value: Double) throws(UsageError) -> Double {
        guard let text = parsed.value(name) else { return value }
        guard let number = Double(text), number.isFinite, number > 0, number <= 86_400 else {
            throw UsageError(message: "--\(name) needs a number of seconds above 0, got \"\(text)\"")
        }
        return number
    }

    /// Parses 500, 500k, 20M, 1G (binary multiples, as curl does).
    static func rate(_ text: String) -> Int64? {
        let lowered = text.lowercased()
        let multipliers: [Character: Int64] = ["k": 1024, "m": 1024 * 1024, "g": 1024 * 1024 * 1024]
        var digits = Substring(lowered)
        var multiplier: Int64 = 1
        if let last = lowered.last, let factor = multipliers[last] {
            multiplier = factor
            digits = digits.dropLast()
        }
        guard let number = Double(digits), number.isFinite, number > 0, number * Double(multiplier) < 1e15 else { return nil }
        return Int64(number * Double(multiplier))
    }
}

/// Options every form of the command shares.
enum CommonOptions {
    static let output: [OptionSpec] = [
        OptionSpec(short: "q", long: "quiet", value: nil, help: "print only errors"),
        OptionSpec(short: nil, long: "json", value: nil, help: "print one JSON object per event on standard output"),
    ]
    static let state = OptionSpec(short: nil, long: "state", value: "DIR", help: "queue database directory (default $XDG_DATA_HOME/haul)")
    static let jobs = OptionSpec(short: "j", long: "jobs", value: "N", help: "downloads at once in a batch or queue run (default 4)")

    static func mode(_ parsed: ParsedArguments) -> OutputMode {
        parsed.flag("json") ? .json : parsed.flag("quiet") ? .quiet : .normal
    }

    static func jobs(_ parsed: ParsedArguments) throws(UsageError) -> Int {
        try RequestOptions.integer(parsed, "jobs", default: 4, range: 1...64)
    }
}
