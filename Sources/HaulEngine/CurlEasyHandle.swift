#if canImport(CCurl)
    import CCurl

    /// Owns one libcurl easy handle; cleaned up in deinit.
    ///
    /// A handle is used by one thread at a time (the pool hands it out exclusively); reusing it keeps
    /// its connection cache, so consecutive requests to one host share a keep-alive connection.
    /// `@unchecked Sendable`: the pool moves a handle between threads, but only one thread holds it
    /// at a time (it is taken out of the pool's mutex before use and put back after).
    final class CurlEasyHandle: @unchecked Sendable {
        let raw: UnsafeMutableRawPointer
        /// libcurl writes a detailed message here when a transfer fails.
        let errorBuffer: UnsafeMutablePointer<CChar>

        init?() {
            CurlGlobal.ensureInitialized()
            guard let raw = curl_easy_init() else { return nil }
            self.raw = raw
            errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
            errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        }

        deinit {
            curl_easy_cleanup(raw)
            errorBuffer.deallocate()
        }

        /// Forgets every option of the last transfer, keeping connections and the DNS cache.
        func reset() {
            curl_easy_reset(raw)
            errorBuffer[0] = 0
        }

        var errorDetail: String {
            String(cString: errorBuffer)
        }

        // Every setter checks libcurl's answer: an option that did not take effect is an error, never
        // a transfer that quietly runs without it.

        func set(_ option: CurlOption, _ value: Int) throws(CurlOptionError) {
            try Self.check(haul_curl_setopt_long(raw, option.id, value), option)
        }

        func set(_ option: CurlOption, offset value: Int64) throws(CurlOptionError) {
            try Self.check(haul_curl_setopt_off(raw, option.id, curl_off_t(value)), option)
        }

        /// libcurl copies string options, so the Swift string need only live for the call.
        func set(_ option: CurlOption, _ value: String) throws(CurlOptionError) {
            try Self.check(value.withCString { haul_curl_setopt_string(raw, option.id, $0) }, option)
        }

        func set(_ option: CurlOption, pointer: UnsafeMutableRawPointer?) throws(CurlOptionError) {
            try Self.check(haul_curl_setopt_pointer(raw, option.id, pointer), option)
        }

        /// COPYPOSTFIELDS copies, so the array need not outlive this call.
        func setCopiedPostFields(_ body: [UInt8]) throws(CurlOptionError) {
            let code = body.withUnsafeBytes { bytes in
                haul_curl_setopt_pointer(raw, CurlOption.copyPostFields.id, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            }
            try Self.check(code, .copyPostFields)
        }

        func set(_ option: CurlOption, callback: haul_curl_data_callback) throws(CurlOptionError) {
            try Self.check(haul_curl_setopt_data_callback(raw, option.id, callback), option)
        }

        func setProgressCallback(_ callback: haul_curl_xferinfo_callback) throws(CurlOptionError) {
            try Self.check(haul_curl_setopt_xferinfo_callback(raw, callback), .xferInfoFunction)
        }

        /// A `long` the last transfer left (CURLINFO_PROXY_ERROR, ...); nil when libcurl has none.
        func info(long info: CURLINFO) -> Int? {
            var value = 0
            return haul_curl_getinfo_long(raw, info, &value) == CURLE_OK ? value : nil
        }

        private static func check(_ code: CURLcode, _ option: CurlOption) throws(CurlOptionError) {
            guard code == CURLE_OK else { throw CurlOptionError(option: option, code: code) }
        }
    }

    /// `curl_global_init` must run once before any handle exists, and is not thread-safe itself.
    enum CurlGlobal {
        private static let initialized: Bool = {
            curl_global_init(Int(CURL_GLOBAL_ALL)) == CURLE_OK
        }()

        static func ensureInitialized() {
            _ = initialized
        }
    }

    /// A list of header lines for CURLOPT_HTTPHEADER; freed in deinit, after the transfer that used it.
    final class CurlHeaderList {
        typealias Append = (UnsafeMutablePointer<curl_slist>?, String) -> UnsafeMutablePointer<curl_slist>?

        private(set) var raw: UnsafeMutablePointer<curl_slist>?

        /// Every line, or an error: `curl_slist_append` returns NULL when it cannot allocate, and
        /// a request without one of its lines (an `If-Range`, an `Authorization`) must never go
        /// out. `append` is libcurl's (tests give one that fails).
        init(_ lines: [String], append: Append = { list, line in curl_slist_append(list, line) }) throws(CurlOptionError) {
            for line in lines {
                // On NULL the list built so far is untouched: kept, to be freed in deinit.
                guard let longer = append(raw, line) else {
                    throw CurlOptionError(option: .httpHeader, code: CURLE_OUT_OF_MEMORY)
                }
                raw = longer
            }
        }

        deinit {
            curl_slist_free_all(raw)
        }
    }
#endif
