import Foundation
import HaulCore
import HaulStore

extension DownloadRequest {
    /// The request as the user described it, sent to `url` (the request's, or a refreshed one),
    /// with the headers Haul always controls.
    func transferRequest(to url: URL) -> TransferRequest {
        var headers = headers
        // Ranges and their guard are Haul's to set; a user's own would defeat the verification.
        headers.remove("Range")
        headers.remove("If-Range")
        if !headers.contains("Accept-Encoding") {
            // Bytes must be stored as the server has them, or no byte offset would mean anything.
            headers.set("Accept-Encoding", "identity")
        }
        if !headers.contains("User-Agent") {
            headers.set("User-Agent", "haul/\(HaulVersion.current)")
        }
        if options.checksum == nil, options.verifiesServerDigest, !headers.contains(ServerDigests.wantHeader.name) {
            // Servers that can publish a digest of the file (RFC 9530) are asked for SHA-256.
            headers.set(ServerDigests.wantHeader.name, ServerDigests.wantHeader.value)
        }
        if options.asksS3Checksum, !headers.contains("x-amz-checksum-mode") {
            headers.set("x-amz-checksum-mode", "ENABLED")
        }
        return TransferRequest(url: url, method: method, headers: headers, body: body)
    }

    /// The range as recorded, so a run with another range does not reuse the partial.
    var targetDescription: String? {
        if case .range(let spec) = target { return spec.headerValue }
        return nil
    }

    /// What the file keeper opens for this request; a fresh download starts with a record of its
    /// URL, method and range.
    var outputRequest: PartialDownload.Request {
        let fresh = ResumeRecord(originalURL: url.absoluteString, finalURL: url.absoluteString, method: method, range: targetDescription)
        // A finished file is recognised by its URL, method and range only where they alone name
        // what was fetched: not with a body, headers of the request's own or credentials.
        let provable =
            body == nil && headers.fields.isEmpty && options.cookieFile == nil && options.transfer.netrcFile == nil && url.user == nil && url.password == nil
            && (method == "GET" || method == "HEAD")
        return PartialDownload.Request(destination: destination, existingFile: existingFile, url: url, fresh: fresh, provable: provable)
    }
}
