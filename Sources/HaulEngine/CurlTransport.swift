#if canImport(CCurl)
    import CCurl
    import Foundation
    import HaulCore
    import Synchronization

    /// The libcurl engine: HTTP/1.1 and HTTP/2 over TCP and TLS at curl's own speed.
    ///
    /// Redirects are not followed here (the download layer does it, with its own rules), no content
    /// coding is decoded (bytes are stored as the server sent them), and only http and https are allowed.
    package final class CurlTransport: HTTPTransport {
        /// Idle easy handles; each keeps its connections alive for the next request.
        private let idle = Mutex<[CurlEasyHandle]>([])
        /// libcurl's receive buffer: larger than its default 16 KiB, so a fast transfer reads its socket
        /// in fewer, larger calls (about 105 KiB each on loopback). The body still reaches the write
        /// callback 16 KiB at a time at most (libcurl's `CURL_MAX_WRITE_SIZE`), whatever this size.
        package let bufferSize: Int

        /// A libcurl engine whose handles receive into buffers of `bufferSize` bytes (256 KiB by default).
        package init(bufferSize: Int = TransferPacing.standardReceiveBuffer) {
            self.bufferSize = bufferSize
        }

        package func perform(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler) -> TransferOutcome {
            let transfer: Prepared
            switch prepare(request, options, handler) {
            case .ready(let ready): transfer = ready
            case .ended(let outcome): return outcome
            }
            defer { giveBack(transfer.handle) }
            let code = withExtendedLifetime((transfer.context, transfer.headerList)) {
                curl_easy_perform(transfer.handle.raw)
            }
            return outcome(code, handle: transfer.handle, context: transfer.context, request: request, options: options)
        }

        /// The transfer on the process's event loop (`CurlMultiLoop`): no thread waits for it, and a
        /// speed limit (`TransferOptions.pacer`) pauses this transfer alone. A handler that may
        /// block runs on a thread of its own instead, so its waits hold up no other transfer.
        package func transfer(_ request: TransferRequest, options: TransferOptions, handler: any TransferHandler, handlerMayBlock: Bool) async
            -> TransferOutcome
        {
            guard !handlerMayBlock, let loop = CurlMultiLoop.shared else {
                return await performOnThread(request, options: options, handler: handler)
            }
            let transfer: Prepared
            switch prepare(request, options, handler) {
            case .ready(let ready): transfer = ready
            case .ended(let outcome): return outcome
            }
            defer { giveBack(transfer.handle) }
            let code = await withCheckedContinuation { (continuation: CheckedContinuation<CURLcode, Never>) in
                loop.add(
                    CurlMultiLoop.Transfer(handle: transfer.handle, context: transfer.context, keepAlive: transfer.headerList) {
                        continuation.resume(returning: $0)
                    })
            }
            return outcome(code, handle: transfer.handle, context: transfer.context, request: request, options: options)
        }

        /// One transfer's handle, configured, with the state its callbacks share and the header
        /// list libcurl reads during it.
        private struct Prepared {
            let handle: CurlEasyHandle
            let context: CurlCallContext
            let headerList: CurlHeaderList
        }

        /// What `perform` and `transfer` both start with: a handle from the pool, configured for
        /// `request`; or the outcome that ends the transfer before anything is sent (the handle
        /// already given back).
        private enum Preparation {
            case ready(Prepared)
            case ended(TransferOutcome)
        }

        private func prepare(_ request: TransferRequest, _ options: TransferOptions, _ handler: any TransferHandler) -> Preparation {
            guard let (handle, reused) = takeHandle() else {
                return .ended(.failed(TransportError(.other, "libcurl could not create a transfer handle")))
            }
            let context = CurlCallContext(handler: handler, stallTimeout: options.stallTimeout, pacer: options.pacer)
            do {
                return .ready(Prepared(handle: handle, context: context, headerList: try configure(handle, request, options, context)))
            } catch {
                guard reused, let fresh = CurlEasyHandle() else {
                    giveBack(handle)
                    return .ended(Self.outcome(refused: error))
                }
                // A handle libcurl still holds a receive buffer for (its HTTP/2 stream not let go
                // yet) refuses a buffer size (libcurl 7.88: "bad argument"): it is dropped, and the
                // transfer gets a new handle.
                do {
                    return .ready(Prepared(handle: fresh, context: context, headerList: try configure(fresh, request, options, context)))
                } catch {
                    giveBack(fresh)
                    return .ended(Self.outcome(refused: error))
                }
            }
        }

        package func wake() {
            CurlMultiLoop.shared?.wake()
        }

        /// A refused option ends the transfer before anything is sent; retrying with the same libcurl
        /// would be refused the same way.
        static func outcome(refused error: CurlOptionError) -> TransferOutcome {
            .failed(TransportError(.optionRefused, error.description))
        }

        /// A handle from the pool (`reused`), else a new one.
        private func takeHandle() -> (handle: CurlEasyHandle, reused: Bool)? {
            if let handle = idle.withLock({ $0.popLast() }) {
                handle.reset()
                return (handle, true)
            }
            return CurlEasyHandle().map { ($0, false) }
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
            if let share = CurlShare.handle {
                try handle.set(.share, pointer: share)
            }
            try handle.set(.followLocation, 0)
            try handle.set(.bufferSize, TransferPacing.receiveBuffer(standard: bufferSize, pace: options.pacer?.bytesPerSecondNow))
            try handle.set(.tcpKeepAlive, 1)
            // Through an http proxy, an https request starts with CONNECT; its answer ("200 Connection
            // established") must never be taken for the server's response head (no length, no validators).
            try handle.set(.suppressConnectHeaders, 1)
            // HTTP/1.1 unless HTTP/2 is asked for (then where TLS negotiates it): see `allowsHTTP2`.
            try handle.set(.httpVersion, options.allowsHTTP2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1)
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
            let headerList = try CurlHeaderList(lines)
            try handle.set(.httpHeader, pointer: UnsafeMutableRawPointer(headerList.raw))
            if let timeout = options.connectTimeout {
                try handle.set(.connectTimeout, Int(timeout * 1000))
            }
            // One trust for every TLS connection of the transfer: the server's and an https:// proxy's.
            if !options.verifyTLS {
                try handle.set(.verifyPeer, 0)
                try handle.set(.verifyHost, 0)
                try handle.set(.proxyVerifyPeer, 0)
                try handle.set(.proxyVerifyHost, 0)
            }
            if let caFile = options.caFile {
                try handle.set(.caInfo, caFile)
                try handle.set(.proxyCAInfo, caFile)
            }
            // Unset (as `takeHandle` leaves every option), libcurl reads http_proxy, https_proxy,
            // all_proxy and no_proxy itself, with curl's rules.
            if let proxy = options.proxy {
                try handle.set(.proxy, proxy)
            }
            if let noProxy = options.noProxy {
                try handle.set(.noProxy, noProxy)
            }
            if let netrcFile = options.netrcFile {
                // Looked up by the host of this request alone: each hop of a redirect is a request of
                // its own, so another host never gets this host's entry.
                try handle.set(.netrc, Int(CURL_NETRC_OPTIONAL.rawValue))
                try handle.set(.netrcFile, netrcFile)
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

        private func outcome(
            _ code: CURLcode, handle: CurlEasyHandle, context: CurlCallContext, request: TransferRequest, options: TransferOptions
        ) -> TransferOutcome {
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
            var kind = Self.kind(of: code)
            if code == CURLE_PROXY, let detail = handle.info(long: CURLINFO_PROXY_ERROR), Self.isRefusal(CURLproxycode(UInt32(detail))) {
                kind = .proxyRefused
            }
            if let connect = handle.info(long: CURLINFO_HTTP_CONNECTCODE), connect >= 300 {
                // An http proxy refused the tunnel: refused for its login (407) or by its rules (403),
                // it will refuse again; its other errors (502: the server is unreachable from there)
                // are like a connect failure.
                kind = connect == 407 || connect == 403 ? .proxyRefused : .connect
            }
            guard !context.headDelivered,
                let route = ProxyRoute.resolve(
                    for: request.url, proxy: options.proxy, noProxy: options.noProxy, environment: ProcessInfo.processInfo.environment)
            else {
                return .failed(TransportError(kind, message, code: Int(code.rawValue)))
            }
            return .failed(TransportError(kind, Self.naming(route, in: message, code: code), code: Int(code.rawValue)))
        }

        /// A failure on the way through a proxy names the proxy (without its password) and where it
        /// came from: libcurl's own message shows only an address, or nothing of the proxy at all.
        static func naming(_ route: ProxyRoute, in message: String, code: CURLcode) -> SettingText {
            let proxy: SettingText = "\(ProxyRoute.shown(route.proxy)) (from \(route.source))"
            if code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_PROXY {
                return "cannot reach the proxy \(proxy): \(message)"
            }
            if code == CURLE_PROXY || message.hasPrefix("CONNECT tunnel failed") {
                return "the proxy \(proxy) failed: \(message)"
            }
            return "\(message) (through the proxy \(proxy))"
        }

        /// SOCKS answers that the same request will get again: a refused login, a method or address
        /// type the proxy does not support, a name too long for the protocol.
        static func isRefusal(_ code: CURLproxycode) -> Bool {
            let refusals: [CURLproxycode] = [
                CURLPX_USER_REJECTED, CURLPX_NO_AUTH, CURLPX_BAD_VERSION, CURLPX_UNKNOWN_MODE, CURLPX_LONG_USER, CURLPX_LONG_PASSWD,
                CURLPX_LONG_HOSTNAME, CURLPX_REPLY_NOT_ALLOWED, CURLPX_REPLY_COMMAND_NOT_SUPPORTED, CURLPX_REPLY_ADDRESS_TYPE_NOT_SUPPORTED,
                CURLPX_BAD_ADDRESS_TYPE,
            ]
            return refusals.contains(code)
        }

        static func kind(of code: CURLcode) -> TransportError.Kind {
            switch code {
            case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: return .invalidURL
            case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .nameResolution
            case CURLE_COULDNT_CONNECT, CURLE_PROXY: return .connect
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
#endif
