import CCurl
import Foundation
import HaulCore
import Synchronization

/// The libcurl engine: HTTP/1.1 and HTTP/2 over TCP and TLS at curl's own speed.
///
/// Redirects are not followed here (the download layer does it, with its own rules), no content
/// coding is decoded (bytes are stored as the server sent them), and only http and https are allowed.
public final class CurlTransport: HTTPTransport {
    /// Idle easy handles; each keeps its connections alive for the next request.
    private let idle = Mutex<[CurlEasyHandle]>([])
    /// Read buffer size: larger than curl's default 16 KiB so a fast transfer makes fewer, larger writes.
    public let bufferSize: Int

    public init(bufferSize: Int = 256 * 1024) {
        self.bufferSize = bufferSize
    }

    public func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome {
        guard let handle = takeHandle() else {
            return .failed(TransportError(.other, "libcurl could not create a transfer handle"))
        }
        defer { giveBack(handle) }
        let context = CurlCallContext(handler: handler, stallTimeout: options.stallTimeout)
        let headerList = configure(handle, request, options, context)
        let code = withExtendedLifetime((context, headerList)) {
            curl_easy_perform(handle.raw)
        }
        return outcome(code, handle: handle, context: context)
    }

    private func takeHandle() -> CurlEasyHandle? {
        if let handle = idle.withLock({ $0.popLast() }) {
            handle.reset()
            return handle
        }
        return CurlEasyHandle()
    }

    private func giveBack(_ handle: CurlEasyHandle) {
        // Callbacks and their context must not outlive this transfer.
        handle.set(CURLOPT_WRITEDATA, pointer: nil)
        handle.set(CURLOPT_HEADERDATA, pointer: nil)
        handle.set(CURLOPT_XFERINFODATA, pointer: nil)
        idle.withLock { pool in
            if pool.count < 16 { pool.append(handle) }
        }
    }

    private func configure(
        _ handle: CurlEasyHandle,
        _ request: TransferRequest,
        _ options: TransferOptions,
        _ context: CurlCallContext
    ) -> CurlHeaderList {
        handle.set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(handle.errorBuffer))
        handle.set(CURLOPT_URL, request.url.absoluteString)
        handle.set(CURLOPT_PROTOCOLS_STR, "http,https")
        handle.set(CURLOPT_NOSIGNAL, 1)
        handle.set(CURLOPT_FOLLOWLOCATION, 0)
        handle.set(CURLOPT_BUFFERSIZE, bufferSize)
        handle.set(CURLOPT_TCP_KEEPALIVE, 1)
        switch request.method {
        case "GET": handle.set(CURLOPT_HTTPGET, 1)
        case "HEAD": handle.set(CURLOPT_NOBODY, 1)
        default: handle.set(CURLOPT_CUSTOMREQUEST, request.method)
        }
        if let body = request.body {
            handle.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(body.count))
            body.withUnsafeBytes { bytes in
                // COPYPOSTFIELDS copies, so the array need not outlive this call.
                _ = haul_curl_setopt_pointer(handle.raw, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            }
        }
        var lines = request.headers.map { "\($0.name): \($0.value)" }
        // An empty value removes a header libcurl would add on its own.
        lines.append("Expect:")
        if !request.headers.contains("Accept") { lines.append("Accept: */*") }
        let headerList = CurlHeaderList(lines)
        handle.set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headerList.raw))
        if let timeout = options.connectTimeout {
            handle.set(CURLOPT_CONNECTTIMEOUT_MS, Int(timeout * 1000))
        }
        if let rate = options.maxBytesPerSecond {
            handle.set(CURLOPT_MAX_RECV_SPEED_LARGE, offset: rate)
        }
        if !options.verifyTLS {
            handle.set(CURLOPT_SSL_VERIFYPEER, 0)
            handle.set(CURLOPT_SSL_VERIFYHOST, 0)
        }
        if let caFile = options.caFile {
            handle.set(CURLOPT_CAINFO, caFile)
        }
        let opaque = Unmanaged.passUnretained(context).toOpaque()
        _ = haul_curl_setopt_data_callback(handle.raw, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
        handle.set(CURLOPT_HEADERDATA, pointer: opaque)
        _ = haul_curl_setopt_data_callback(handle.raw, CURLOPT_WRITEFUNCTION, curlWriteCallback)
        handle.set(CURLOPT_WRITEDATA, pointer: opaque)
        _ = haul_curl_setopt_xferinfo_callback(handle.raw, curlProgressCallback)
        handle.set(CURLOPT_XFERINFODATA, pointer: opaque)
        handle.set(CURLOPT_NOPROGRESS, 0)
        return headerList
    }

    private func outcome(_ code: CURLcode, handle: CurlEasyHandle, context: CurlCallContext) -> TransferOutcome {
        if let failure = context.failure { return .failed(failure) }
        if context.stoppedByHandler { return .stoppedByHandler }
        if code == CURLE_OK {
            if !context.headDelivered {
                return .failed(TransportError(.protocolViolation, "the server closed the connection without a complete response"))
            }
            return .completed
        }
        let detail = handle.errorDetail
        let summary = String(cString: curl_easy_strerror(code))
        let message = detail.isEmpty ? summary : detail
        if code == CURLE_OUT_OF_MEMORY || (detail.contains("Rejected") && detail.contains("header")) {
            // libcurl 7.x reports a header line over its own 100 KiB limit as out of memory
            // (later versions say CURLE_TOO_LARGE); nothing else here can run libcurl out of memory.
            return .failed(TransportError(.headerTooLarge, "the server sent an absurdly large response header (over libcurl's 100 KiB limit)"))
        }
        return .failed(TransportError(Self.kind(of: code), message))
    }

    static func kind(of code: CURLcode) -> TransportError.Kind {
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: return .invalidURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .nameResolution
        case CURLE_COULDNT_CONNECT: return .connect
        case CURLE_OPERATION_TIMEDOUT: return .timeout
        case CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return .connectionLost
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH:
            return .tls
        case CURLE_WEIRD_SERVER_REPLY, CURLE_BAD_CONTENT_ENCODING: return .protocolViolation
        default: return .other
        }
    }
}
