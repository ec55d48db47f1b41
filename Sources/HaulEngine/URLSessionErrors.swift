import Foundation
import HaulCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Translations from Foundation's networking types to Haul's: pure, tested without a network.
enum URLSessionErrors {
    /// The response head as Haul reads it. URLSession merges fields by name and keeps no order,
    /// so the fields are sorted by name for a stable result.
    static func head(of response: HTTPURLResponse) -> ResponseHead {
        var headers = HTTPHeaders()
        let fields = response.allHeaderFields.compactMap { key, value -> (String, String)? in
            guard let name = key as? String else { return nil }
            return (name, value as? String ?? String(describing: value))
        }
        for (name, value) in fields.sorted(by: { $0.0.lowercased() < $1.0.lowercased() }) {
            if name.lowercased() == "set-cookie" {
                for cookie in splitCookies(value) { headers.add(name, cookie) }
            } else {
                headers.add(name, value)
            }
        }
        return ResponseHead(status: response.statusCode, headers: headers)
    }

    /// Set-Cookie fields that FoundationNetworking joined with ", ", apart again. A comma starts a
    /// new cookie only where `name=` follows it; an `Expires` date's comma ("Wed, 21 Oct 2026")
    /// is followed by a day number and a space, never by `name=`.
    static func splitCookies(_ joined: String) -> [String] {
        var cookies: [String] = []
        var current = Substring(joined)
        var searchFrom = current.startIndex
        while let comma = current[searchFrom...].firstIndex(of: ",") {
            let rest = current[current.index(after: comma)...].drop { $0 == " " }
            let name = rest.prefix { $0 != "=" && $0 != ";" && $0 != "," && $0 != " " }
            if !name.isEmpty, rest.dropFirst(name.count).first == "=" {
                cookies.append(String(current[..<comma]))
                current = rest
                searchFrom = current.startIndex
            } else {
                searchFrom = current.index(after: comma)
            }
        }
        cookies.append(String(current))
        return cookies.filter { !$0.isEmpty }
    }

    /// The failure a task ended with, in Haul's kinds. On Linux most libcurl failures arrive as
    /// `NSURLErrorUnknown` with libcurl's text, so the text decides there.
    static func transportError(_ error: any Error, afterHead: Bool) -> TransportError {
        let nsError = error as NSError
        let message = nsError.localizedDescription
        guard nsError.domain == NSURLErrorDomain else { return TransportError(.other, message) }
        if let kind = kind(ofCode: nsError.code) { return TransportError(kind, message, code: nsError.code) }
        return TransportError(kind(ofText: message, afterHead: afterHead), message, code: nsError.code)
    }

    static func kind(ofCode code: Int) -> TransportError.Kind? {
        switch code {
        case NSURLErrorBadURL, NSURLErrorUnsupportedURL: return .invalidURL
        case NSURLErrorCannotFindHost, NSURLErrorDNSLookupFailed: return .nameResolution
        case NSURLErrorCannotConnectToHost: return .connect
        case NSURLErrorTimedOut: return .timeout
        case NSURLErrorNetworkConnectionLost, NSURLErrorNotConnectedToInternet: return .connectionLost
        case NSURLErrorSecureConnectionFailed, NSURLErrorServerCertificateHasBadDate, NSURLErrorServerCertificateUntrusted,
            NSURLErrorServerCertificateHasUnknownRoot, NSURLErrorServerCertificateNotYetValid, NSURLErrorClientCertificateRejected,
            NSURLErrorClientCertificateRequired:
            return .tls
        case NSURLErrorBadServerResponse:
            // FoundationNetworking's name for libcurl's "empty reply from server": a connection
            // closed before any answer, which trying again may get past (libcurl's engine: same).
            #if canImport(FoundationNetworking)
                return .connectionLost
            #else
                return .protocolViolation
            #endif
        case NSURLErrorCannotParseResponse, NSURLErrorCannotDecodeRawData,
            NSURLErrorCannotDecodeContentData, NSURLErrorZeroByteResource:
            return .protocolViolation
        default: return nil
        }
    }

    /// libcurl's error text (FoundationNetworking passes it on as the description).
    static func kind(ofText text: String, afterHead: Bool) -> TransportError.Kind {
        let lowered = text.lowercased()
        let rules: [(TransportError.Kind, [String])] = [
            (.nameResolution, ["could not resolve", "couldn't resolve"]),
            (.tls, ["ssl", "certificate", "tls"]),
            (.connect, ["failed to connect", "couldn't connect", "could not connect", "connection refused"]),
            (.timeout, ["timed out", "timeout"]),
            (.connectionLost, ["partial file", "recv failure", "send failure", "connection reset", "connection died", "end of file"]),
            (.protocolViolation, ["weird server reply", "invalid", "malformed", "header"]),
        ]
        for (kind, words) in rules where words.contains(where: lowered.contains) { return kind }
        // A failure in the middle of a body is most often the connection; before it, unknown.
        return afterHead ? .connectionLost : .other
    }
}
