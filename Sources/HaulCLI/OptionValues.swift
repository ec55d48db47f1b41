import Foundation
import Haul
import HaulCLIText
import HaulCore

/// Turning one option's text into a typed value, with the message a person can act on.
enum OptionValue {
    static func integer(_ parsed: ParsedArguments, _ name: String, default value: Int, range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let text = parsed.value(name) else { return value }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(message: "--\(name) needs a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return number
    }

    static func seconds(_ parsed: ParsedArguments, _ name: String, default value: Double) throws(UsageError) -> Double {
        guard let text = parsed.value(name) else { return value }
        guard let number = Double(text), number.isFinite, number > 0, number <= 86_400 else {
            throw UsageError(message: "--\(name) needs a number of seconds above 0, got \"\(text)\"")
        }
        return number
    }

    /// Parses 500, 500k, 20M, 1G (binary multiples, as curl does).
    static func bytes(_ text: String) -> Int64? {
        guard let value = quantity(text), value < 1e15 else { return nil }
        return Int64(value)
    }

    /// A speed limit in bytes per second, as `bytes` reads it, from 1 byte per second to
    /// `SpeedLimit.maximumBytesPerSecond` (1024G): the bound is named when it is passed, and a
    /// rate below one byte per second is refused rather than taken as none.
    static func speed(_ parsed: ParsedArguments, _ name: String) throws(UsageError) -> Int64? {
        guard let text = parsed.value(name) else { return nil }
        guard let value = quantity(text) else {
            throw UsageError(message: "--\(name) needs a rate such as 500k or 20M, got \"\(text)\"")
        }
        guard value <= Double(SpeedLimit.maximumBytesPerSecond) else {
            throw UsageError(message: "--\(name) \(text) is above the largest limit, 1024G (\(SpeedLimit.maximumDescription))")
        }
        guard value >= 1 else { throw UsageError(message: "--\(name) \(text) is below 1 byte per second") }
        // Within 1...2^40: the conversion is exact in range and cannot trap.
        return Int64(value)
    }

    /// A positive finite number with an optional k, m or g (binary multiples), as a `Double`.
    private static func quantity(_ text: String) -> Double? {
        let lowered = text.lowercased()
        let multipliers: [Character: Double] = ["k": 1024, "m": 1024 * 1024, "g": 1024 * 1024 * 1024]
        var digits = Substring(lowered)
        var multiplier: Double = 1
        if let last = lowered.last, let factor = multipliers[last] {
            multiplier = factor
            digits = digits.dropLast()
        }
        guard let number = Double(digits), number.isFinite, number > 0, (number * multiplier).isFinite else { return nil }
        return number * multiplier
    }

    /// An http(s) URL with a host, as an operand.
    /// Every operand as an http(s) URL; the first that is not one is refused.
    static func urls(_ operands: [String]) throws(UsageError) -> [URL] {
        var urls: [URL] = []
        for text in operands {
            urls.append(try url(text))
        }
        return urls
    }

    static func url(_ text: String) throws(UsageError) -> URL {
        do throws(DownloadList.URLProblem) {
            return try DownloadList.parseHTTPURL(text)
        } catch {
            throw UsageError(message: "\(error.message): \(text)")
        }
    }
}
