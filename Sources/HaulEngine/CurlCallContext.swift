import CCurl
import Foundation
import HaulCore

/// Per-transfer state shared by libcurl's callbacks; lives on the stack of `CurlTransport.perform`.
///
/// All callbacks run on the thread inside `curl_easy_perform`, so no locking is needed.
final class CurlCallContext {
    /// A response head larger than this is refused: no legitimate download needs more.
    static let maxHeaderBytes = 64 * 1024
    static let maxHeaderFields = 200

    let handler: any TransferHandler
    let stallTimeout: Double?
    private var status = 0
    private var headers = HTTPHeaders()
    private var headerBytes = 0
    private(set) var headDelivered = false
    private(set) var stoppedByHandler = false
    private(set) var failure: TransportError?
    private var lastBodyBytes: Int64 = 0
    private var lastActivity = ContinuousClock.now

    init(handler: any TransferHandler, stallTimeout: Double?) {
        self.handler = handler
        self.stallTimeout = stallTimeout
    }

    /// One header line as libcurl delivers it, CRLF included. Returns false to abort.
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) -> Bool {
        headerBytes += bytes.count
        // Strip CR and LF as bytes: in Swift "\r\n" is one Character, so hasSuffix("\n") misses it.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        let line = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[0..<end]), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            let parts = line.split(separator: " ", maxSplits: 2)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            headers = HTTPHeaders()
            headerBytes = bytes.count
            return true
        }
        if headerBytes > Self.maxHeaderBytes || headers.count >= Self.maxHeaderFields {
            failure = TransportError(.headerTooLarge, "the server's response headers are too large (over \(Self.maxHeaderBytes / 1024) KiB or \(Self.maxHeaderFields) fields)")
            return false
        }
        if line.isEmpty {
            // 1xx heads (100 Continue, 103 Early Hints) precede the real one.
            if (100..<200).contains(status) { return true }
            return deliverHead()
        }
        if line.first == " " || line.first == "\t", let last = headers.fields.last {
            // obs-fold: a continuation of the previous field.
            headers.set(last.name, last.value + " " + line.trimmingCharacters(in: .whitespaces))
            return true
        }
        guard let colon = line.firstIndex(of: ":") else { return true }
        let name = line[..<colon].trimmingCharacters(in: .whitespaces)
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        headers.add(name, value)
        return true
    }

    private func deliverHead() -> Bool {
        guard !headDelivered else { return true }
        headDelivered = true
        lastActivity = .now
        if handler.transferDidReceiveHead(ResponseHead(status: status, headers: headers)) == .stop {
            stoppedByHandler = true
            return false
        }
        return true
    }

    /// A body chunk. Returns false to abort.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if !headDelivered && !deliverHead() { return false }
        if handler.transferDidReceiveBody(bytes) == .stop {
            stoppedByHandler = true
            return false
        }
        return true
    }

    /// Called by libcurl at least once a second. Returns false to abort.
    func tick(downloaded: Int64) -> Bool {
        if handler.transferShouldAbort() {
            stoppedByHandler = true
            return false
        }
        let now = ContinuousClock.now
        if downloaded != lastBodyBytes {
            lastBodyBytes = downloaded
            lastActivity = now
            return true
        }
        if let stallTimeout, now - lastActivity > .milliseconds(Int64(stallTimeout * 1000)) {
            failure = TransportError(.stalled, "no data received for \(Self.format(stallTimeout)) seconds")
            return false
        }
        return true
    }

    private static func format(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}

private func context(_ pointer: UnsafeMutableRawPointer?) -> CurlCallContext? {
    guard let pointer else { return nil }
    return Unmanaged<CurlCallContext>.fromOpaque(pointer).takeUnretainedValue()
}

let curlHeaderCallback: haul_curl_data_callback = { data, size, count, opaque in
    let length = size * count
    guard let context = context(opaque), let data else { return 0 }
    return context.receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

let curlWriteCallback: haul_curl_data_callback = { data, size, count, opaque in
    let length = size * count
    guard let context = context(opaque), let data else { return 0 }
    return context.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
}

let curlProgressCallback: haul_curl_xferinfo_callback = { opaque, _, downloaded, _, _ in
    guard let context = context(opaque) else { return 1 }
    return context.tick(downloaded: Int64(downloaded)) ? 0 : 1
}
