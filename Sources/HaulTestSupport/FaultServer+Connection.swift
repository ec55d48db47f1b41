import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Serves the requests of one accepted socket, on that connection's own thread.
///
/// Not shared between threads: it is created, used and dropped on the connection thread.
final class FaultServerConnection {
    private let fd: Int32
    private let core: FaultServerCore
    private var buffer: [UInt8] = []
    /// Index of the first unconsumed byte in `buffer`.
    private var readIndex = 0
    private var scratch = [UInt8](repeating: 0, count: 64 * 1024)

    private static let maxHeadBytes = 64 * 1024
    private static let chunkSize = 16 * 1024
    private static let plainSendSize = 256 * 1024

    init(fd: Int32, core: FaultServerCore) {
        self.fd = fd
        self.core = core
    }

    /// Reads and answers requests until the client closes, a fault closes, or the server stops.
    func serve() {
        while !core.isStopping {
            guard let head = readHead() else { return }
            guard let request = ParsedRequestHead(text: head) else {
                sendSimple(status: 400, body: "bad request")
                closeGracefully()
                return
            }
            guard let body = readBody(of: request) else {
                sendSimple(status: 400, body: "bad request body")
                closeGracefully()
                return
            }
            core.record(
                RecordedRequest(method: request.method, path: request.target, headers: request.headers, body: body))
            let path = request.resourcePath
            let (faults, resource) = core.takeFaultsAndResource(path: path)
            let plan = ResponsePlan(method: request.method, request: request, resource: resource, faults: faults)
            guard respond(plan, path: path) else { return }
        }
    }

    // MARK: - Reading

    /// Appends whatever the socket has; false on end of stream or error.
    private func fill() -> Bool {
        if readIndex > 0, readIndex >= buffer.count / 2 {
            buffer.removeFirst(readIndex)
            readIndex = 0
        }
        while true {
            let count = scratch.withUnsafeMutableBytes { raw in
                recv(fd, raw.baseAddress, raw.count, 0)
            }
            if count > 0 {
                buffer.append(contentsOf: scratch[0..<count])
                return true
            }
            if count < 0, errno == EINTR { continue }
            return false
        }
    }

    /// The request line and headers up to the blank line, consumed; nil on EOF or oversize.
    private func readHead() -> String? {
        var searchFrom = readIndex
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffer, from: searchFrom) {
                let text = String(decoding: buffer[readIndex..<end], as: UTF8.self)
                readIndex = end + 4
                return text
            }
            guard buffer.count - readIndex <= Self.maxHeadBytes else { return nil }
            searchFrom = max(readIndex, buffer.count - 3)
            let offsetFromRead = searchFrom - readIndex
            guard fill() else { return nil }
            searchFrom = readIndex + offsetFromRead
        }
    }

    private func readExactly(_ count: Int) -> [UInt8]? {
        while buffer.count - readIndex < count {
            guard fill() else { return nil }
        }
        let bytes = Array(buffer[readIndex..<(readIndex + count)])
        readIndex += count
        return bytes
    }

    private func readLine() -> String? {
        while true {
            if let end = Self.find([13, 10], in: buffer, from: readIndex) {
                let text = String(decoding: buffer[readIndex..<end], as: UTF8.self)
                readIndex = end + 2
                return text
            }
            guard buffer.count - readIndex <= Self.maxHeadBytes, fill() else { return nil }
        }
    }

    /// The body by `Content-Length` or chunked transfer coding; nil when malformed or cut.
    private func readBody(of request: ParsedRequestHead) -> [UInt8]? {
        let chunked = request.header("Transfer-Encoding")?.lowercased().contains("chunked") ?? false
        let length = request.header("Content-Length").flatMap { Int($0) }
        if request.header("Content-Length") != nil, length == nil || (length ?? 0) < 0 { return nil }
        let expectsBody = chunked || (length ?? 0) > 0
        if expectsBody, request.header("Expect")?.lowercased() == "100-continue" {
            _ = sendBytes(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        if chunked {
            var body: [UInt8] = []
            while true {
                guard let line = readLine() else { return nil }
                let sizeText = line.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                    return nil
                }
                if size == 0 {
                    // Trailer fields, then the final blank line.
                    while true {
                        guard let trailer = readLine() else { return nil }
                        if trailer.isEmpty { return body }
                    }
                }
                guard let data = readExactly(size), readLine() == "" else { return nil }
                body += data
            }
        }
        guard let length, length > 0 else { return [] }
        return readExactly(length)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = max(0, start)
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == needle[0] {
                var matches = true
                for offset in 1..<needle.count where haystack[index + offset] != needle[offset] {
                    matches = false
                    break
                }
                if matches { return index }
            }
            index += 1
        }
        return nil
    }

    // MARK: - Writing

    /// Carries out one response plan; false when the connection must end.
    private func respond(_ plan: ResponsePlan, path: String) -> Bool {
        if plan.headerDelay > 0, !core.pause(plan.headerDelay) { return false }
        if plan.closeWithoutReply {
            closeGracefully()
            return false
        }
        var head = ""
        if let interim = plan.informational {
            head += "HTTP/1.1 \(interim) \(ResponsePlan.reasonPhrase(interim))\r\nLink: </style.css>; rel=preload\r\n\r\n"
        }
        head += "HTTP/1.1 \(plan.status) \(ResponsePlan.reasonPhrase(plan.status))\r\n"
        let separator = plan.headersWithoutSpace ? ":" : ": "
        for (name, value) in plan.headers { head += "\(name)\(separator)\(value)\r\n" }
        head += "\r\n"
        guard sendBytes(FaultServer.wireBytes(head)) else {
            closeAbruptly()
            return false
        }

        var limit = plan.sendsBody ? plan.bodyRange.count : 0
        if let drop = plan.dropAfter { limit = min(limit, drop) }
        if let stall = plan.stall { limit = min(limit, stall.afterBytes) }
        let countedPath = plan.countsAsResourceBody ? path : nil
        guard sendBody(plan, bytes: limit, countingFor: countedPath) else {
            closeAbruptly()
            return false
        }

        if plan.dropAfter != nil {
            closeAbruptly()
            return false
        }
        if let stall = plan.stall {
            _ = core.pause(stall.seconds)
            closeAbruptly()
            return false
        }
        if plan.sendsBody {
            if plan.framing == .chunked, !sendBytes(Array("0\r\n\r\n".utf8)) {
                closeAbruptly()
                return false
            }
            if plan.extraBytes > 0 {
                _ = sendBytes([UInt8](repeating: UInt8(ascii: "X"), count: plan.extraBytes))
            }
        }
        if plan.closesAfter {
            closeGracefully()
            return false
        }
        return true
    }

    /// Sends `count` bytes of the plan's body, framed and paced as planned.
    private func sendBody(_ plan: ResponsePlan, bytes count: Int, countingFor path: String?) -> Bool {
        guard count > 0 else { return true }
        var piece = plan.framing == .chunked ? Self.chunkSize : Self.plainSendSize
        if let rate = plan.bytesPerSecond {
            piece = min(piece, Self.chunkSize, max(1, rate / 20))
        }
        let start = plan.bodyRange.lowerBound
        let end = start + count
        let began = DispatchTime.now().uptimeNanoseconds
        return plan.storage.withUnsafeBytes { raw -> Bool in
            guard let base = raw.baseAddress else { return false }
            var offset = start
            while offset < end {
                let length = min(piece, end - offset)
                if plan.framing == .chunked, !sendBytes(Array("\(String(length, radix: 16))\r\n".utf8)) {
                    return false
                }
                // Counted before sending so the count is already right when the client has the
                // bytes; bytes the peer did not take are subtracted before the socket is closed.
                if let path { core.addBodyBytes(length, path: path) }
                let sent = sendAll(base + offset, length)
                guard sent == length else {
                    if let path { core.addBodyBytes(sent - length, path: path) }
                    return false
                }
                if plan.framing == .chunked, !sendBytes([13, 10]) { return false }
                offset += length
                if let rate = plan.bytesPerSecond {
                    let due = Double(offset - start) / Double(rate)
                    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - began) / 1e9
                    if due > elapsed, !core.pause(due - elapsed) { return false }
                }
            }
            return true
        }
    }

    /// Writes as much of the buffer as the peer accepts; returns the bytes accepted.
    private func sendAll(_ pointer: UnsafeRawPointer, _ count: Int) -> Int {
        var sent = 0
        while sent < count {
            let result = send(fd, pointer + sent, count - sent, Int32(MSG_NOSIGNAL))
            if result > 0 {
                sent += result
            } else if result < 0, errno == EINTR {
                continue
            } else {
                break
            }
        }
        return sent
    }

    private func sendBytes(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return true }
            return sendAll(base, raw.count) == raw.count
        }
    }

    private func sendSimple(status: Int, body: String) {
        let bytes = Array(body.utf8)
        let head =
            "HTTP/1.1 \(status) \(ResponsePlan.reasonPhrase(status))\r\nContent-Type: text/plain\r\n"
            + "Content-Length: \(bytes.count)\r\nConnection: close\r\n\r\n"
        _ = sendBytes(Array(head.utf8) + bytes)
    }

    /// Ends our side after the data already written; the thread closes the fd afterwards.
    private func closeGracefully() {
        shutdown(fd, Int32(SHUT_WR))
    }

    /// Cuts the connection both ways at once, as a crashed server would.
    private func closeAbruptly() {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}
