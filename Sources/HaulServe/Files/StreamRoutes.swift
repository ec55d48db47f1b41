import Foundation
import Haul
import HaulCore
import HaulRPC
import HaulStore

/// `haul serve`'s long answers, each run on a worker that returns as soon as it decided (the event
/// loop sends the bytes as the socket drains):
///
/// - `GET`/`HEAD /haul/file/<gid>`: a complete download's file, only the one Haul finished (its
///   `FinishedMark`, proven on the open descriptor), only inside the download root, with `Range`,
///   `ETag`, `If-None-Match`, `If-Range` and `Content-Disposition`. Only with `--secret`: the token
///   as `Authorization: Bearer <secret>` or `X-Haul-Token: <secret>`, or a signed link from
///   `haul.fileLink` (`?expires=…&signature=…`).
/// - `GET /haul/events`: Server-Sent Events, every notification with its journal id, resumed from
///   `Last-Event-ID`; the token as for the file route, or `?token=` (EventSource sends no header).
struct StreamRoutes: Sendable {
    let service: RPCService
    let policy: RequestPolicy
    let links: FileLink?

    static let filePrefix = "/haul/file/"
    static let eventsPath = "/haul/events"

    init(service: RPCService, policy: RequestPolicy) {
        self.service = service
        self.policy = policy
        links = service.secret.flatMap { $0.isEmpty ? nil : FileLink(secret: $0) }
    }

    static func handles(_ path: String) -> Bool {
        path.hasPrefix(filePrefix) || path == eventsPath
    }

    /// The answer, with CORS fields for a page of an origin the user allowed (`--allow-origin`):
    /// an `EventSource` or `fetch` there reads it; a link followed needs none.
    func answer(_ head: HTTPRequestHead) -> HTTPStreamReply {
        let reply = decide(head)
        guard let origin = head.header("Origin"), policy.admitsCrossOrigin(origin) else { return reply }
        let cors = [
            HTTPHeader(name: "Access-Control-Allow-Origin", value: origin), HTTPHeader(name: "Vary", value: "Origin"),
            HTTPHeader(name: "Access-Control-Expose-Headers", value: "Content-Disposition, Content-Range, ETag"),
        ]
        func adding(_ response: HTTPResponse) -> HTTPResponse {
            HTTPResponse(status: response.status, headers: response.headers + cors, body: response.body, announcedLength: response.announcedLength)
        }
        switch reply {
        case .whole(let response): return .whole(adding(response))
        case .file(let response, let body): return .file(adding(response), body)
        case .events(let response, let initial, let after): return .events(adding(response), initial: initial, after: after)
        }
    }

    private func decide(_ head: HTTPRequestHead) -> HTTPStreamReply {
        let query = Self.query(of: head.target)
        if head.path == Self.eventsPath {
            guard head.method == "GET" else { return .whole(Self.text(405, "use GET for \(Self.eventsPath)")) }
            if let refusal = tokenRefusal(head, query: query, queryTokenAllowed: true) { return .whole(refusal) }
            return events(head, query: query)
        }
        guard head.method == "GET" || head.method == "HEAD" else { return .whole(Self.text(405, "use GET or HEAD for a file")) }
        let gid = String(head.path.dropFirst(Self.filePrefix.count))
        guard let links else {
            return .whole(
                Self.text(
                    403,
                    "files are served only when haul serve runs with --secret: without a secret anyone who reaches the port could read every download; restart it with --secret"
                ))
        }
        if query["signature"] != nil || query["expires"] != nil {
            let expires = query["expires"].flatMap { Int64($0) }
            if let reason = links.refusal(gid: gid, expires: expires, signature: query["signature"], now: Int64(Date().timeIntervalSince1970)) {
                return .whole(Self.text(403, reason))
            }
        } else if let refusal = tokenRefusal(head, query: query, queryTokenAllowed: false) {
            return .whole(refusal)
        }
        return file(gid: gid, head)
    }

    // MARK: the file

    private func file(gid: String, _ head: HTTPRequestHead) -> HTTPStreamReply {
        guard let id = GID.id(gid) else { return .whole(Self.text(400, "\(gid) is not a GID (16 hexadecimal digits)")) }
        let opened: Result<(file: FinishedFile, path: String), FinishedFileRefusal>
        do {
            opened = try service.queue.openFinishedFile(id)
        } catch {
            return .whole(Self.text(503, "the queue's store cannot be read: \(error.message)"))
        }
        let file: FinishedFile
        let path: String
        switch opened {
        case .failure(.noSuchDownload):
            return .whole(Self.text(404, "no download with GID \(gid)"))
        case .failure(.notComplete(let state)):
            return .whole(Self.text(409, "download \(gid) is not complete (it is \(state.rawValue)): only a finished file is served"))
        case .failure(.missing(let path)):
            return .whole(Self.text(410, "download \(gid) is complete, but its file is no longer at \(path)"))
        case .failure(.notProven(let path)):
            return .whole(
                Self.text(
                    409,
                    "the file at \(path) is not the one haul finished for download \(gid) (replaced or changed since, or a request haul cannot recognise its file by): it is not served"
                ))
        case .failure(.unreadable(let path, let reason)):
            return .whole(Self.text(503, "the file of download \(gid) at \(path) cannot be opened now (\(reason)): try again"))
        case .success(let value):
            (file, path) = value
        }
        // Owns the descriptor from here: closed with it on every refusal below.
        let body = FileBody(fd: file.fd, offset: 0, length: file.identity.size)
        let root = ConfinedPath.resolved(service.settings.root)
        guard !root.isEmpty, ConfinedPath.relative(ConfinedPath.resolved(path), within: root) != nil else {
            return .whole(Self.text(403, "the file of download \(gid) is outside the download directory: it is not served"))
        }
        let identity = file.identity
        let etag = FileValidators.etag(
            device: identity.device, inode: identity.inode, size: identity.size, modifiedSeconds: identity.modifiedSeconds,
            modifiedNanoseconds: identity.modifiedNanoseconds)
        var headers = [
            HTTPHeader(name: "Content-Type", value: "application/octet-stream"), HTTPHeader(name: "Accept-Ranges", value: "bytes"),
            HTTPHeader(name: "ETag", value: etag), HTTPHeader(name: "Cache-Control", value: "private, no-cache"),
            HTTPHeader(name: "X-Content-Type-Options", value: "nosniff"),
            HTTPHeader(name: "Content-Security-Policy", value: "sandbox; default-src 'none'"),
            HTTPHeader(
                name: "Content-Disposition", value: FileValidators.contentDisposition(fileName: AbsolutePath.name(of: path))),
        ]
        if FileValidators.noneMatchHits(head.header("If-None-Match"), etag: etag) {
            return .whole(HTTPResponse(status: 304, headers: headers))
        }
        let length = identity.size
        switch FileRange.of(head.header("Range"), ifRange: head.header("If-Range"), length: length, etag: etag) {
        case .whole:
            return .file(HTTPResponse(status: 200, headers: headers, announcedLength: Int(length)), body)
        case .partial(let first, let last):
            headers.append(HTTPHeader(name: "Content-Range", value: "bytes \(first)-\(last)/\(length)"))
            let count = last - first + 1
            body.select(offset: first, length: count)
            return .file(HTTPResponse(status: 206, headers: headers, announcedLength: Int(count)), body)
        case .unsatisfiable:
            headers.append(HTTPHeader(name: "Content-Range", value: "bytes */\(length)"))
            return .whole(HTTPResponse(status: 416, headers: headers, body: Data("the range is past the file's end (\(length) bytes)\n".utf8)))
        }
    }

    // MARK: the events

    private func events(_ head: HTTPRequestHead, query: [String: String]) -> HTTPStreamReply {
        let lastEventID = head.header("Last-Event-ID") ?? query["lastEventId"]
        let page: JournalPage
        do {
            let after = lastEventID.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) } ?? .max
            page = try service.queue.journal(after: max(0, after), limit: ServeEvents.kept)
        } catch {
            return .whole(Self.text(503, "the queue's store cannot be read: \(error.message)"))
        }
        let opening = EventStreamFormat.opening(lastEventID: lastEventID, page: page)
        let headers = [
            HTTPHeader(name: "Content-Type", value: "text/event-stream; charset=utf-8"), HTTPHeader(name: "Cache-Control", value: "no-store"),
            HTTPHeader(name: "X-Content-Type-Options", value: "nosniff"), HTTPHeader(name: "X-Accel-Buffering", value: "no"),
        ]
        return .events(HTTPResponse(status: 200, headers: headers), initial: opening.initial, after: opening.after)
    }

    // MARK: shared

    /// The refusal of a request without the token (nil when it has it). `queryTokenAllowed`: the
    /// token may come as `?token=` (the event stream, which EventSource opens without headers).
    private func tokenRefusal(_ head: HTTPRequestHead, query: [String: String], queryTokenAllowed: Bool) -> HTTPResponse? {
        guard let secret = service.secret, !secret.isEmpty else { return nil }
        var given = head.header("X-Haul-Token")
        if given == nil, let authorization = head.header("Authorization"), authorization.lowercased().hasPrefix("bearer ") {
            given = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        if given == nil, queryTokenAllowed { given = query["token"] }
        guard let given else {
            return Self.text(401, "the token is missing: send Authorization: Bearer <secret> or X-Haul-Token: <secret>", authenticate: true)
        }
        guard FileLink.constantTimeEquals(Array(given.utf8), Array(secret.utf8)) else {
            return Self.text(401, "the token is not this server's --secret", authenticate: true)
        }
        return nil
    }

    static func text(_ status: Int, _ message: String, authenticate: Bool = false) -> HTTPResponse {
        let plain = HTTPResponse.text(status, message)
        guard authenticate else { return plain }
        return HTTPResponse(status: status, headers: plain.headers + [HTTPHeader(name: "WWW-Authenticate", value: "Bearer")], body: plain.body)
    }

    /// The query's fields, percent-decoded (the first of a repeated name).
    static func query(of target: String) -> [String: String] {
        guard let question = target.firstIndex(of: "?") else { return [:] }
        var fields: [String: String] = [:]
        for pair in target[target.index(after: question)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = parts.first?.removingPercentEncoding, fields[name] == nil else { continue }
            let value = parts.count > 1 ? String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" : ""
            fields[name] = value
        }
        return fields
    }
}
