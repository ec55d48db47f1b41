import Foundation

/// When each request was being served, from a second access log (`$msec $request_time
/// $request_uri`): what tests need to count concurrent connections.
package struct NginxRequestInterval: Sendable, Equatable {
    /// The request URI.
    package let uri: String
    /// When nginx read the request (seconds since 1970, millisecond precision).
    package let start: Double
    /// When the response was sent.
    package let end: Double
}

extension NginxServer {
    /// The requests finished so far, with when each was served.
    package func requestIntervals() -> [NginxRequestInterval] {
        guard let text = try? String(contentsOfFile: directory + "/timing.log", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 3, let end = Double(fields[0]), let duration = Double(fields[1]) else { return nil }
            return NginxRequestInterval(uri: String(fields[2]), start: end - duration, end: end)
        }
    }

    /// The most requests `uriPrefix` had in flight at one moment.
    package func maxConcurrentRequests(matching uriPrefix: String = "/") -> Int {
        var edges: [(time: Double, change: Int)] = []
        for interval in requestIntervals() where interval.uri.hasPrefix(uriPrefix) {
            edges.append((interval.start, 1))
            edges.append((interval.end, -1))
        }
        // An end at the same instant as a start counts first: back-to-back is not concurrent.
        edges.sort { $0.time == $1.time ? $0.change < $1.change : $0.time < $1.time }
        var current = 0
        var most = 0
        for edge in edges {
            current += edge.change
            most = max(most, current)
        }
        return most
    }
}
