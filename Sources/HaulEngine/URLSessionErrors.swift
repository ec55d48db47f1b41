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
            headers.add(name, value)
        }
        return ResponseHead(status: response.statusCode, headers: headers)
    }

    /// The failure a task ended with, in Haul's kinds. On Linux most libcurl failures arrive as
    /// `NSURLErrorUnknown` with libcurl's text, so the text decides there.
    static func transportError(_ error: any Error, afterHead: Bool) -> TransportError {
        let nsError = error as NSError
        let message = nsError.localizedDescription
        guard nsError.domain == NSURLErrorDomain else { return TransportError(.other, message) }
        if let kind = kind(ofCode: nsError.code) { return TransportError(kind, message) }
        return TransportError(kind(ofText: message, afterHead: afterHead), message)
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
        case NSURLErrorBadServerResponse, NSURLErrorCannotParseResponse, NSURLErrorCannotDecodeRawData,
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
