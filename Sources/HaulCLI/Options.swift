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

/// The command line, checked and turned into a download request. Validation only: nothing runs here.
struct CommandOptions: Sendable {
    static let specs: [OptionSpec] = [
        OptionSpec(short: "o", long: "output", value: "FILE", help: "write to FILE ('-' for standard output)"),
        OptionSpec(short: "d", long: "dir", value: "DIR", help: "save into DIR under the server's file name (default: .)"),
        OptionSpec(short: "c", long: "continue", value: nil, help: "continue a file already at the destination (checked first)"),
        OptionSpec(short: nil, long: "force", value: nil, help: "replace an existing complete file"),
        OptionSpec(short: "r", long: "range", value: "RANGE", help: "only bytes x-y, the last z (-z) or from q (q-)"),
        OptionSpec(short: "X", long: "request", value: "METHOD", help: "HTTP method (default GET, POST with --data)"),
        OptionSpec(short: "H", long: "header", value: "LINE", help: "add a header \"Name: value\" (repeatable)", repeatable: true),
        OptionSpec(short: nil, long: "data", value: "DATA", help: "request body; @FILE reads it from FILE"),
        OptionSpec(short: nil, long: "max-redirects", value: "N", help: "redirects to follow (default 10)"),
        OptionSpec(short: nil, long: "connect-timeout", value: "S", help: "seconds to connect (default 30)"),
        OptionSpec(short: nil, long: "stall-timeout", value: "S", help: "seconds without data before retrying (default 30)"),
        OptionSpec(short: nil, long: "retry", value: "N", help: "retries after transient failures (default 5)"),
        OptionSpec(short: nil, long: "retry-wait", value: "S", help: "first wait between retries, doubled each time (default 1)"),
        OptionSpec(short: nil, long: "limit-rate", value: "RATE", help: "cap the speed, e.g. 500k, 20M"),
        OptionSpec(short: nil, long: "insecure", value: nil, help: "do not verify TLS certificates"),
        OptionSpec(short: nil, long: "cacert", value: "FILE", help: "trust the CA certificates in FILE (PEM)"),
        OptionSpec(short: "q", long: "quiet", value: nil, help: "print only errors"),
        OptionSpec(short: nil, long: "json", value: nil, help: "print one JSON object per event on standard output"),
        OptionSpec(short: "h", long: "help", value: nil, help: "show this help"),
        OptionSpec(short: "V", long: "version", value: nil, help: "show the version"),
    ]

    var request: DownloadRequest
    var mode: OutputMode

    static var usage: String {
        """
        Usage: haul [options] URL

        Downloads URL to disk, resumably: an interrupted run (Ctrl-C, a dropped connection,
        kill -9, a power cut) continues where it stopped when run again, and the file is only
        put in place once complete. Resumes are verified, never spliced across versions.

        Options:
        \(ArgumentParser(specs: specs).helpText())

        \(ExitCode.table)
        """
    }

    init(_ parsed: ParsedArguments) throws(UsageError) {
        guard parsed.positional.count == 1, let text = parsed.positional.first else {
            throw UsageError(message: parsed.positional.isEmpty ? "no URL given" : "give one URL (got \(parsed.positional.count))")
        }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty
        else {
            throw UsageError(message: "not an http or https URL: \(text)")
        }
        let destination = try Self.destination(parsed)
        mode = parsed.flag("json") ? .json : parsed.flag("quiet") ? .quiet : .normal
        if mode == .json, destination == .standardOutput {
            throw UsageError(message: "--json writes events to standard output, so it cannot be used with -o -")
        }
        if parsed.flag("force") && parsed.flag("continue") {
            throw UsageError(message: "--force and --continue contradict each other")
        }
        request = DownloadRequest(url: url, destination: destination)
        request.existingFile = parsed.flag("force") ? .overwrite : parsed.flag("continue") ? .continueIt : .refuse
        if let range = parsed.value("range") {
            do throws(ByteRangeSpecError) {
                request.target = .range(try ByteRangeSpec(parsing: range))
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
            request.headers.add(name, value)
        }
        if let data = parsed.value("data") {
            request.body = try Self.body(data)
            request.method = "POST"
            if !request.headers.contains("Content-Type") {
                request.headers.add("Content-Type", "application/x-www-form-urlencoded")
            }
        }
        if let method = parsed.value("request") {
            guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" }) else {
                throw UsageError(message: "--request needs a method name such as GET or POST, got \"\(method)\"")
            }
            request.method = method.uppercased()
        }
        request.maxRedirects = try Self.integer(parsed, "max-redirects", default: 10, range: 0...100)
        request.retry.maxRetries = try Self.integer(parsed, "retry", default: 5, range: 0...1000)
        request.retry.baseDelay = try Self.seconds(parsed, "retry-wait", default: 1)
        request.transfer.connectTimeout = try Self.seconds(parsed, "connect-timeout", default: 30)
        request.transfer.stallTimeout = try Self.seconds(parsed, "stall-timeout", default: 30)
        if let rate = parsed.value("limit-rate") {
            guard let bytes = Self.rate(rate), bytes > 0 else {
                throw UsageError(message: "--limit-rate needs a rate such as 500k or 20M, got \"\(rate)\"")
            }
            request.transfer.maxBytesPerSecond = bytes
        }
        request.transfer.verifyTLS = !parsed.flag("insecure")
        if let caFile = parsed.value("cacert") {
            guard FileManager.default.isReadableFile(atPath: caFile) else {
                throw UsageError(message: "--cacert \(caFile): no such readable file")
            }
            request.transfer.caFile = caFile
        }
    }

    private static func destination(_ parsed: ParsedArguments) throws(UsageError) -> Destination {
        if let output = parsed.value("output") {
            if parsed.value("dir") != nil {
                throw UsageError(message: "use either -o or -d, not both")
            }
            if output == "-" { return .standardOutput }
            guard !output.isEmpty else { throw UsageError(message: "-o needs a file name") }
            return .file(output)
        }
        return .directory(parsed.value("dir") ?? ".")
    }

    private static func body(_ data: String) throws(UsageError) -> [UInt8] {
        guard data.hasPrefix("@") else { return Array(data.utf8) }
        let path = String(data.dropFirst())
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw UsageError(message: "--data @\(path): cannot read the file")
        }
        return Array(contents)
    }

    private static func integer(_ parsed: ParsedArguments, _ name: String, default value: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
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
