import Foundation
import HaulCore
import Testing

@testable import Haul

/// Attacks on what a queued download keeps of its options (`DownloadOptions.toKeep`).
@Suite("Queued options: what is kept (options attack)")
struct OptionsAttackTests {
    @Test("GIVEN a relative --cacert WHEN the download is queued THEN its path is kept absolute, as netrc and cookie files are")
    func aRelativeCAFileIsKeptAbsolute() throws {
        // GIVEN a request that trusts a CA file named relative to the working directory (as
        // `haul queue add --cacert extra.pem URL` gives it; the CLI checked it is readable here)
        var request = DownloadRequest(url: try #require(URL(string: "https://127.0.0.1:9/f")), destination: .directory("/tmp"))
        request.transfer.caFile = "extra.pem"
        request.transfer.netrcFile = "my.netrc"
        request.cookieFile = "cookies.txt"

        // WHEN it is stored in the queue
        let kept = QueuedRequest.storedOptions(request)

        // THEN every file path is absolute: run later from another directory, a relative CA file
        // names another file (one the run's directory may hold, trusted for this download) or none
        let cwd = FileManager.default.currentDirectoryPath
        #expect(kept.netrcFile == cwd + "/my.netrc")
        #expect(kept.cookieFile == cwd + "/cookies.txt")
        #expect(kept.caFile == cwd + "/extra.pem", "stored caFile \(kept.caFile ?? "nil")")
    }
}
