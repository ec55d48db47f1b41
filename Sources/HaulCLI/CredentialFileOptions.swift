import Foundation
import Haul
import HaulCore
import HaulEngine

/// Credentials read from files: `--netrc` / `--netrc-file FILE` (a login and password for each
/// host), `--cookies FILE` and `--cookie-jar FILE` (Netscape cookie files, as curl's `-b` and `-c`).
/// A queued item keeps the paths, never what the files hold: they are read when it runs. Each
/// file is checked here, so a wrong one is refused before anything is sent or queued.
struct CredentialFileOptions: ParsableOptions {
    static let specs: [OptionSpec] = [
        OptionSpec(short: nil, long: "netrc", value: nil, help: "log in with ~/.netrc's entry for each host (refused if others can read it)"),
        OptionSpec(short: nil, long: "netrc-file", value: "FILE", help: "log in with FILE's entry for each host (refused if others can read it)"),
        OptionSpec(short: nil, long: "cookies", value: "FILE", help: "send the cookies of FILE, a Netscape cookie file (curl -b)"),
        OptionSpec(short: nil, long: "cookie-jar", value: "FILE", help: "write the cookies to FILE when the download ends (curl -c)"),
    ]

    /// An absolute path, as the queue keeps it.
    let netrcFile: String?
    let cookieFile: String?
    let cookieJar: String?

    init(_ parsed: ParsedArguments) throws(UsageError) {
        if parsed.flag("netrc") {
            guard parsed.value("netrc-file") == nil else {
                throw UsageError(message: "--netrc reads ~/.netrc and --netrc-file another file: give one of them")
            }
            netrcFile = Self.homeDirectory() + "/.netrc"
        } else {
            netrcFile = parsed.value("netrc-file").map(AbsolutePath.of)
        }
        cookieFile = parsed.value("cookies").map(AbsolutePath.of)
        cookieJar = parsed.value("cookie-jar").map(AbsolutePath.of)
        do throws(DownloadError) {
            if let netrcFile { try NetrcFile.check(netrcFile) }
            try CookieFiles.check(file: cookieFile, jar: cookieJar)
        } catch {
            throw UsageError(message: error.message)
        }
    }

    /// `$HOME`, as curl finds `~/.netrc`; the password database when it is unset.
    private static func homeDirectory() -> String {
        if let home = ProcessInfo.processInfo.environment["HOME"], !home.isEmpty { return home }
        return NSHomeDirectory()
    }

    func applied(to request: DownloadRequest) -> DownloadRequest {
        var request = request
        request.transfer.netrcFile = netrcFile
        request.cookieFile = cookieFile
        request.cookieJar = cookieJar
        return request
    }
}
