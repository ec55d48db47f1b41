import Foundation
import Haul
import HaulCore
import HaulEngine

/// `--proxy URL` and `--noproxy HOSTS`: how one download reaches its server. A queued item keeps
/// them (`haul URL`, `haul queue add`). Without `--proxy`, libcurl reads `http_proxy`,
/// `https_proxy`, `all_proxy` and `no_proxy` from the environment of the process that downloads,
/// as curl does; `--proxy ""` or `--noproxy '*'` turns every proxy off.
struct ProxyOptions: ParsableOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(
            short: nil, long: "proxy", value: "URL", help: "go through this proxy: http://, https://, socks5:// or socks5h:// ('' for none)", setting: .proxy),
        OptionSpec(
            short: nil, long: "noproxy", value: "HOSTS", help: "reach these hosts directly: names, domains, addresses (comma-separated; * for all)",
            setting: .noProxy),
    ]

    /// nil: the environment decides.
    let proxy: String?
    /// nil: `no_proxy` decides.
    let noProxy: String?

    init(_ parsed: ParsedArguments) throws(UsageError) {
        proxy = parsed.value("proxy")
        if let proxy {
            do throws(ProxyURLError) {
                try ProxyRoute.validate(proxy)
            } catch {
                throw UsageError(message: error.text.rendered(.flags))
            }
        }
        noProxy = parsed.value("noproxy")
        if let noProxy, noProxy.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw UsageError(message: "--noproxy needs host names, domains or addresses separated by commas")
        }
    }

    func applied(to request: DownloadRequest) -> DownloadRequest {
        var request = request
        request.transfer.proxy = proxy
        request.transfer.noProxy = noProxy
        return request
    }

    /// A batch's run carries them as well, for queue items stored without them.
    func applied(to run: QueueRunOptions) -> QueueRunOptions {
        var run = run
        run.transfer.proxy = proxy
        run.transfer.noProxy = noProxy
        return run
    }
}
