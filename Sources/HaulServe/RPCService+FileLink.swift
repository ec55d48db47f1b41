import Foundation
import Haul
import HaulRPC

/// `haul.fileLink`: a short-lived signed link to a complete download's file, for a browser (which
/// cannot add the token to a link it follows).
extension RPCService {
    /// How long a link lasts unless asked otherwise, and at most.
    static let fileLinkSeconds: Int64 = 300
    static let fileLinkMaximumSeconds: Int64 = 86_400

    /// `[gid, seconds?]` → `{"path": "/haul/file/<gid>?expires=…&signature=…", "expires": <unix seconds>}`.
    func fileLink(_ params: [JSONValue]) throws -> JSONValue {
        let (gid, id) = try RPCParams.gid(params)
        let seconds = params.count > 1 ? try RPCParams.integer(params, at: 1, "seconds") : Self.fileLinkSeconds
        guard (1...Self.fileLinkMaximumSeconds).contains(seconds) else {
            throw RPCError.invalidParams("a link lasts 1 to \(Self.fileLinkMaximumSeconds) seconds")
        }
        guard let secret, !secret.isEmpty else {
            throw RPCError("files are served only when haul serve runs with --secret: restart it with --secret to hand out links")
        }
        let state = try item(id, gid).state
        guard state == .completed else { throw RPCError("download \(gid) is not complete (it is \(state.rawValue)): only a finished file is served") }
        let expires = Int64(Date().timeIntervalSince1970) + seconds
        let signature = FileLink(secret: secret).signature(gid: gid, expires: expires)
        return ["path": .string("\(StreamRoutes.filePrefix)\(gid)?expires=\(expires)&signature=\(signature)"), "expires": .int(expires)]
    }
}
