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
        let headerList: CurlHeaderList
        do {
            headerList = try configure(handle, request, options, context)
        } catch {
            return Self.outcome(refused: error)
        }
        let code = withExtendedLifetime((context, headerList)) {
            curl_easy_perform(handle.raw)
        }
        return outcome(code, handle: handle, context: context)
    }

    /// A refused option ends the transfer before anything is sent; retrying with the same libcurl
    /// would be refused the same way.
    static func outcome(refused error: CurlOptionError) -> TransferOutcome {
        .failed(TransportError(.optionRefused, error.description))
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
        do {
            try handle.set(.writeData, pointer: nil)
            try handle.set(.headerData, pointer: nil)
            try handle.set(.xferInfoData, pointer: nil)
        } catch {
            // A handle that may still point at this transfer's context is not reused; deinit frees it.
            return
        }
        idle.withLock { pool in
            if pool.count < 16 { pool.append(handle) }
        }
    }

    private func configure(
        _ handle: CurlEasyHandle,
        _ request: TransferRequest,
        _ options: TransferOptions,
        _ context: CurlCallContext
    ) throws(CurlOptionError) -> CurlHeaderList {
        try handle.set(.errorBuffer, pointer: UnsafeMutableRawPointer(handle.errorBuffer))
        try handle.set(.url, request.url.absoluteString)
        // Checked like every option: a libcurl that ignored it would let a URL reach file://, ftp://...
        try handle.set(.protocols, "http,https")
        try handle.set(.noSignal, 1)
        try handle.set(.followLocation, 0)
        try handle.set(.bufferSize, bufferSize)
        try handle.set(.tcpKeepAlive, 1)
        switch request.method {
        case "GET": try handle.set(.httpGet, 1)
        case "HEAD": try handle.set(.noBody, 1)
        default: try handle.set(.customRequest, request.method)
        }
        if let body = request.body {
            try handle.set(.postFieldSize, offset: Int64(body.count))
            try handle.setCopiedPostFields(body)
        }
        var lines = request.headers.map { "\($0.name): \($0.value)" }
        // An empty value removes a header libcurl would add on its own.
        lines.append("Expect:")
        if !request.headers.contains("Accept") { lines.append("Accept: */*") }
        let headerList = CurlHeaderList(lines)
        try handle.set(.httpHeader, pointer: UnsafeMutableRawPointer(headerList.raw))
        if let timeout = options.connectTimeout {
            try handle.set(.connectTimeout, Int(timeout * 1000))
        }
        if !options.verifyTLS {
            try handle.set(.verifyPeer, 0)
            try handle.set(.verifyHost, 0)
        }
        if let caFile = options.caFile {
            try handle.set(.caInfo, caFile)
        }
        let opaque = Unmanaged.passUnretained(context).toOpaque()
        try handle.set(.headerFunction, callback: curlHeaderCallback)
        try handle.set(.headerData, pointer: opaque)
        try handle.set(.writeFunction, callback: curlWriteCallback)
        try handle.set(.writeData, pointer: opaque)
        try handle.setProgressCallback(curlProgressCallback)
        try handle.set(.xferInfoData, pointer: opaque)
        try handle.set(.noProgress, 0)
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
