import Foundation

extension URLSessionTransport {
    /// What URLSession cannot do on this platform; the command line and every `perform` refuse
    /// the options named here, and the conformance suite holds an expectation for each of the others.
    package static var limitations: [EngineLimitation] {
        #if canImport(FoundationNetworking)
            let waiting = defaultMaxQueuedChunks * 16 / 1024
            return [
                EngineLimitation(
                    need: .caFile, text: "FoundationNetworking trusts only the system's CA bundle: a CA file (\(setting: .caFile)) cannot be added"),
                EngineLimitation(need: .insecureTLS, text: "FoundationNetworking always verifies certificates: \(setting: .insecureTLS) cannot be honoured"),
                EngineLimitation(
                    need: .proxy,
                    text:
                        "FoundationNetworking takes no proxy setting (its libcurl reads http_proxy and https_proxy from the environment by itself): \(setting: .proxy) cannot be honoured"
                ),
                EngineLimitation(
                    need: .environmentProxyForHTTPS,
                    text:
                        "an https download through a proxy from the environment (https_proxy, all_proxy) is not tested on FoundationNetworking, whose libcurl passes the proxy's CONNECT answer on as a response; unset it for this download"
                ),
                EngineLimitation(need: .noProxy, text: "FoundationNetworking takes no \(setting: .noProxy) list (no_proxy in the environment applies)"),
                EngineLimitation(need: .netrc, text: "FoundationNetworking reads no netrc file"),
                EngineLimitation(
                    need: nil,
                    text:
                        "FoundationNetworking decodes a compressed body by itself, so a server that answers gzip to 'Accept-Encoding: identity' is refused instead of storing other bytes than it sent"
                ),
                EngineLimitation(
                    need: nil,
                    text:
                        "FoundationNetworking reads on while a chunk is written (no backpressure): past \(waiting) MiB not yet written the transfer is ended and resumed by range; \(setting: .rateLimit) is refused"
                ),
                EngineLimitation(
                    need: nil,
                    text:
                        "response headers arrive merged by name and out of order (Set-Cookie fields are split again); a header line without a space after its colon fails the response (FoundationNetworking 6.3.1)"
                ),
                EngineLimitation(
                    need: nil,
                    text:
                        "a redirect's body is buffered whole by FoundationNetworking before the 3xx is handed over, so a large or slow one ends as stalled"
                ),
                EngineLimitation(
                    need: nil, text: "every request also carries Connection: keep-alive and an Accept-Language from the locale"),
                EngineLimitation(need: nil, text: "HTTP/2 is negotiated on TLS whenever the server offers it (\(setting: .http2) cannot be turned off)"),
            ]
        #else
            return [
                EngineLimitation(need: .caFile, text: "a CA file (\(setting: .caFile)) is not wired to URLSession's trust evaluation"),
                EngineLimitation(need: .insecureTLS, text: "\(setting: .insecureTLS) is not wired to URLSession's trust evaluation"),
                EngineLimitation(need: .proxy, text: "\(setting: .proxy) is not wired to URLSession (the system's proxy settings apply)"),
                EngineLimitation(need: .noProxy, text: "\(setting: .noProxy) is not wired to URLSession (the system's proxy settings apply)"),
                EngineLimitation(need: .netrc, text: "URLSession reads no netrc file"),
            ]
        #endif
    }
}
