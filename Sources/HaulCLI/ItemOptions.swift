import Foundation
import Haul

/// The options that shape one download, the same for `haul URL` and `haul queue add`: its
/// request, checks and trust, proxy, credential files, connections and mirrors (what a queued
/// item keeps). One place builds the request from them, so the two commands cannot drift apart.
struct ItemOptions: ParsableOptions {
    static var specs: [OptionSpec] {
        RequestOptions.specs + DownloadSettings.specs + ProxyOptions.specs + CredentialFileOptions.specs + ConnectionsOptions.specs
            + MirrorOptions.specs
    }

    let request: RequestOptions
    let download: DownloadSettings
    let proxy: ProxyOptions
    let credentials: CredentialFileOptions
    let connections: ConnectionsOptions
    let mirrors: MirrorOptions

    init(_ parsed: ParsedArguments) throws(UsageError) {
        request = try RequestOptions(parsed)
        download = try DownloadSettings(parsed)
        proxy = try ProxyOptions(parsed)
        credentials = try CredentialFileOptions(parsed)
        connections = try ConnectionsOptions(parsed)
        mirrors = try MirrorOptions(parsed)
    }

    /// The request, then the destination, then what depends on how many downloads there are.
    func validate(downloads: DownloadCount, destination: DestinationOptions) throws(UsageError) {
        try request.validate()
        try destination.validate(downloads: downloads)
        try download.validate(downloads: downloads)
        try mirrors.validate(downloads: downloads, request: request, destination: destination, connections: connections)
    }

    /// One download as these options shape it.
    func request(_ url: URL, _ destination: Destination) -> DownloadRequest {
        let shaped = download.applied(to: request.request(url, destination), connections: connections)
        return mirrors.applied(to: proxy.applied(to: credentials.applied(to: shaped)))
    }
}
