#if canImport(CCurl)
    import CCurl
    import Foundation
    import HaulCore

    /// Per-transfer state shared by libcurl's callbacks; lives as long as its transfer.
    ///
    /// All callbacks run on one thread, the one inside `curl_easy_perform` or the event loop's
    /// (`CurlMultiLoop`), while the caller waits, so no locking is needed.
    final class CurlCallContext {
        /// A response head larger than this is refused: no legitimate download needs more.
        static let maxHeaderBytes = 64 * 1024
        static let maxHeaderFields = 200

        let handler: any TransferHandler
        let stallTimeout: Double?
        /// The speed limit the body is kept to, if any.
        let pacer: (any TransferPacer)?
        /// Set by the event loop: a chunk the pacer holds back is handed back to libcurl (the
        /// transfer paused) and this is told for how many seconds. Nil on a thread of the
        /// transfer's own (`perform`), which waits instead.
        var holdBack: ((Double) -> Void)?
        /// Paused by the pacer: the silence is the limit's, not the server's.
        private var heldBack = false
        private var status = 0
        private var headers = HTTPHeaders()
        private var headerBytes = 0
        private(set) var headDelivered = false
        private(set) var stoppedByHandler = false
        private(set) var failure: TransportError?
        private var lastBodyBytes: Int64 = 0
        private var lastActivity = ContinuousClock.now

        init(handler: any TransferHandler, stallTimeout: Double?, pacer: (any TransferPacer)? = nil) {
            self.handler = handler
            self.stallTimeout = stallTimeout
            self.pacer = pacer
        }

        /// One header line as libcurl delivers it, CRLF included. Returns false to abort.
        ///
        /// Parsed as bytes, not Characters: "\r\n" is one Character in Swift, and a ":" or "/"
        /// followed by a combining mark would fuse into one too.
        func receiveHeaderLine(_ raw: UnsafeRawBufferPointer) -> Bool {
            headerBytes += raw.count
            var end = raw.count
            while end > 0, raw[end - 1] == 0x0A || raw[end - 1] == 0x0D { end -= 1 }
            let line = raw[0..<end]
            if line.starts(with: "HTTP/".utf8) {
                status = Self.statusCode(line)
                headers = HTTPHeaders()
                headerBytes = raw.count
                return true
            }
            if headerBytes > Self.maxHeaderBytes || headers.count >= Self.maxHeaderFields {
                failure = TransportError(
                    .headerTooLarge, "the server's response headers are too large (over \(Self.maxHeaderBytes / 1024) KiB or \(Self.maxHeaderFields) fields)")
                return false
            }
            guard let first = line.first else {
                // 1xx heads (100 Continue, 103 Early Hints) precede the real one.
                if (100..<200).contains(status) { return true }
                return deliverHead()
            }
            if first == 0x20 || first == 0x09, let last = headers.fields.last {
                // obs-fold: a continuation of the previous field.
                headers.set(last.name, last.value + " " + Self.text(Self.trimmed(line)))
                return true
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return true }
            headers.add(Self.text(Self.trimmed(line[..<colon])), Self.text(Self.trimmed(line[(colon + 1)...])))
            return true
        }

        /// The status code of a status line ("HTTP/1.1 206 Partial Content", "HTTP/2 200"); 0 if none.
        static func statusCode(_ line: Slice<UnsafeRawBufferPointer>) -> Int {
            guard let space = line.firstIndex(of: 0x20) else { return 0 }
            var code = 0
            var digits = 0
            for byte in line[(space + 1)...] {
                guard byte >= 0x30, byte <= 0x39, digits < 3 else { break }
                code = code * 10 + Int(byte - 0x30)
                digits += 1
            }
            return digits == 3 ? code : 0
        }

        /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
        static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
            var slice = bytes
            while let first = slice.first, first == 0x20 || first == 0x09 { slice = slice.dropFirst() }
            while let last = slice.last, last == 0x20 || last == 0x09 { slice = slice.dropLast() }
            return slice
        }

        /// Lossless: two values that differ in bytes that are not UTF-8 stay different (`HeaderText`).
        static func text(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
            HeaderText.decode(UnsafeRawBufferPointer(rebasing: bytes))
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

        /// What becomes of a body chunk libcurl offers.
        enum BodyAnswer {
            /// The handler took it.
            case taken
            /// The pacer holds it back: libcurl keeps it and offers it again once resumed.
            case heldBack
            /// The transfer ends.
            case abort
        }

        /// A body chunk: taken, held back for the speed limit, or the end of the transfer.
        func receiveBody(_ bytes: UnsafeRawBufferPointer) -> BodyAnswer {
            if !headDelivered && !deliverHead() { return .abort }
            if let holdBack {
                // Asked again when the chunk is offered again; only the handler accounts for it.
                let wait = secondsBeforeNextChunk()
                if wait >= TransferPacing.minimumWait {
                    heldBack = true
                    holdBack(wait)
                    return .heldBack
                }
            } else if let pacer {
                if !TransferPacing.waitOnThisThread(for: pacer, shouldStop: { handler.transferShouldAbort() }) {
                    stoppedByHandler = true
                    return .abort
                }
            }
            if handler.transferDidReceiveBody(bytes) == .stop {
                stoppedByHandler = true
                return .abort
            }
            return .taken
        }

        /// Seconds the next chunk waits on the event loop: the handler's own wait (a record being
        /// saved), else the speed limit's.
        func secondsBeforeNextChunk() -> Double {
            let own = handler.secondsBeforeNextChunk()
            if own >= TransferPacing.minimumWait { return own }
            return pacer?.secondsBeforeNextChunk() ?? 0
        }

        /// The event loop resumed the transfer: the wait for the limit is over.
        func resumed() {
            heldBack = false
            lastActivity = .now
        }

        /// Whether the handler asks to end the transfer (looked at by the event loop when it wakes).
        func abortIfAsked() -> Bool {
            guard handler.transferShouldAbort() else { return false }
            stoppedByHandler = true
            return true
        }

        /// Called by libcurl at least once a second. Returns false to abort.
        func tick(downloaded: Int64) -> Bool {
            if handler.transferShouldAbort() {
                stoppedByHandler = true
                return false
            }
            let now = ContinuousClock.now
            if downloaded != lastBodyBytes || heldBack {
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
        switch context.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) {
        case .taken: return length
        case .heldBack: return Int(CURL_WRITEFUNC_PAUSE)
        case .abort: return 0
        }
    }

    let curlProgressCallback: haul_curl_xferinfo_callback = { opaque, _, downloaded, _, _ in
        guard let context = context(opaque) else { return 1 }
        return context.tick(downloaded: Int64(downloaded)) ? 0 : 1
    }
#endif
