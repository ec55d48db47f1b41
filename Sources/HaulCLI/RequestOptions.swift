import Foundation
import Haul
import HaulCore

/// The options that shape one download's request and what it does with a file already there:
/// what a queued download keeps with its item. `haul URL` and `haul queue add` take them.
struct RequestOptions: ParsableOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(short: "c", long: "continue", value: nil, help: "continue a file already at the destination (checked first)"),
        OptionSpec(short: nil, long: "force", value: nil, help: "replace an existing complete file", setting: .overwrite),
        OptionSpec(short: "r", long: "range", value: "RANGE", help: "only bytes x-y, the last z (-z) or from q (q-)"),
        OptionSpec(short: "X", long: "request", value: "METHOD", help: "HTTP method (default GET, POST with --data)"),
        OptionSpec(short: "H", long: "header", value: "LINE", help: "add a header \"Name: value\" (repeatable)", repeatable: true),
        OptionSpec(short: nil, long: "data", value: "DATA", help: "request body; @FILE reads it from FILE"),
    ]

    var method = "GET"
    var headers = HTTPHeaders()
    var body: [UInt8]?
    var target: DownloadTarget = .whole
    var forces: Bool
    var continues: Bool

    init(_ parsed: ParsedArguments) throws(UsageError) {
        forces = parsed.flag("force")
        continues = parsed.flag("continue")
        if let range = parsed.value("range") {
            do throws(ByteRangeSpecError) {
                target = .range(try ByteRangeSpec(parsing: range))
            } catch {
                throw UsageError(message: "--range \(range): \(error.message)")
            }
        }
        for line in parsed.all("header") {
            try headers.add(Self.header(line))
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
    }

    func validate() throws(UsageError) {
        if forces && continues {
            throw UsageError(message: "--force and --continue contradict each other")
        }
    }

    var existingFile: ExistingFilePolicy {
        forces ? .overwrite : continues ? .continueIt : .refuse
    }

    /// A request for `url` into `destination` shaped by these options; the rest at its defaults.
    func request(_ url: URL, _ destination: Destination) -> DownloadRequest {
        DownloadRequest(
            url: url, destination: destination, method: method, headers: headers, body: body, target: target,
            existingFile: existingFile)
    }

    private static func header(_ line: String) throws(UsageError) -> (name: String, value: String) {
        do throws(HeaderLineError) {
            let field = try HTTPHeaders.field(line: line)
            return (field.name, field.value)
        } catch .notNameAndValue {
            throw UsageError(message: "--header needs \"Name: value\", got \"\(line)\"")
        } catch .reserved(let name) {
            throw UsageError(message: "Haul sets \(name) itself; use --range to download part of a file")
        } catch {
            throw UsageError(message: "--header has an invalid name or value: \"\(line)\"")
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
}

private extension HTTPHeaders {
    mutating func add(_ field: (name: String, value: String)) {
        add(field.name, field.value)
    }
}
