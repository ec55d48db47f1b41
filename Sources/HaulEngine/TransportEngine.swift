import Foundation
import HaulCore

/// The engines that can move a download's bytes: what an app chooses (`Downloader(engine:)`,
/// `DownloadQueue(engine:)`); each is one of Haul's own transports behind its `HTTPTransport` seam.
public enum TransportEngine: String, Sendable, CaseIterable {
    /// libcurl, called directly: the default on Linux (curl's own speed, every option).
    case curl
    /// Foundation's `URLSession`: the default on Apple platforms, where libcurl is not linked; on
    /// Linux it runs on FoundationNetworking, with limits of its own: an option it cannot honour
    /// is refused before anything is sent, never ignored.
    case urlsession

    /// The engine used when none is chosen: libcurl where it is linked, otherwise URLSession.
    public static var platformDefault: TransportEngine {
        #if canImport(CCurl)
            return .curl
        #else
            return .urlsession
        #endif
    }

    /// The engines this build can run (libcurl is linked on Linux only).
    public static var available: [TransportEngine] {
        #if canImport(CCurl)
            return [.curl, .urlsession]
        #else
            return [.urlsession]
        #endif
    }

    /// A new transport of this engine, or nil where this build does not have it.
    package func makeTransport() -> (any HTTPTransport)? {
        switch self {
        case .curl:
            #if canImport(CCurl)
                return CurlTransport()
            #else
                return nil
            #endif
        case .urlsession:
            return URLSessionTransport()
        }
    }

    /// Whether the engine stops reading from the network while a chunk is being written: what keeps
    /// memory constant on a slow disk, and what a speed limit (`--limit-rate`) works through.
    /// FoundationNetworking's URLSession reads on and queues every chunk for its delegate.
    public var hasBackpressure: Bool {
        switch self {
        case .curl: return true
        case .urlsession:
            #if canImport(FoundationNetworking)
                return false
            #else
                return true
            #endif
        }
    }

    /// What this engine cannot do on this platform, each said plainly; empty for libcurl.
    package var limitations: [EngineLimitation] {
        switch self {
        case .curl: return []
        case .urlsession: return URLSessionTransport.limitations
        }
    }

    /// Why this engine cannot carry out a transfer with these options, or nil when it can. The one
    /// rule the command line checks before anything starts and the transport checks again before
    /// it sends anything: an option an engine cannot honour is refused, never ignored.
    /// - Parameter url: the download's URL, when known: an https URL the environment routes
    ///   through a proxy is a need of its own.
    package func refusal(
        of options: TransferOptions, for url: URL? = nil, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> SettingText? {
        guard !limitations.isEmpty else { return nil }
        let asked = EngineLimitation.Need.all(of: options, url: url, environment: environment)
        guard let limit = limitations.first(where: { $0.need.map(asked.contains) ?? false }) else { return nil }
        return "the \(rawValue) engine cannot do this here: \(limit.text) (use \(setting: .curlEngine))"
    }
}

/// One thing an engine cannot do on this platform.
package struct EngineLimitation: Sendable, Equatable {
    /// A transfer option an engine may be unable to honour.
    package enum Need: String, Sendable, CaseIterable {
        /// `TransferOptions.caFile`.
        case caFile
        /// `TransferOptions.verifyTLS == false`.
        case insecureTLS
        /// `TransferOptions.proxy` set (or set to "" while the environment names a proxy).
        case proxy
        /// `TransferOptions.noProxy`.
        case noProxy
        /// `TransferOptions.netrcFile`.
        case netrc
        /// An https URL that the environment (`https_proxy`, `all_proxy`) sends through a proxy.
        case environmentProxyForHTTPS

        /// Every need these options have.
        static func all(of options: TransferOptions, url: URL?, environment: [String: String]) -> Set<Need> {
            var needs: Set<Need> = []
            if options.caFile != nil { needs.insert(.caFile) }
            if !options.verifyTLS { needs.insert(.insecureTLS) }
            if let proxy = options.proxy, !proxy.isEmpty || ProxyRoute.environmentNamesProxy(environment) {
                needs.insert(.proxy)
            }
            if options.noProxy != nil { needs.insert(.noProxy) }
            if options.netrcFile != nil { needs.insert(.netrc) }
            if options.proxy == nil, let url, url.scheme?.lowercased() == "https",
                ProxyRoute.resolve(for: url, proxy: nil, noProxy: options.noProxy, environment: environment) != nil
            {
                needs.insert(.environmentProxyForHTTPS)
            }
            return needs
        }
    }

    /// The option this limitation refuses; nil for a limitation that refuses nothing up front
    /// (a behaviour the transport enforces while it runs, such as refusing a compressed body).
    package let need: Need?
    /// What the engine cannot do and what happens instead, in a sentence.
    package let text: SettingText

    /// A limitation that refuses `need` (nil: nothing up front), told by `text`.
    package init(need: Need?, text: SettingText) {
        self.need = need
        self.text = text
    }
}
