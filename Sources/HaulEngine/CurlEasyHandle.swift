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

    @discardableResult
    func set(_ option: CURLoption, _ value: Int) -> CURLcode {
        haul_curl_setopt_long(raw, option, value)
    }

    @discardableResult
    func set(_ option: CURLoption, offset value: Int64) -> CURLcode {
        haul_curl_setopt_off(raw, option, curl_off_t(value))
    }

    /// libcurl copies string options, so the Swift string need only live for the call.
    @discardableResult
    func set(_ option: CURLoption, _ value: String) -> CURLcode {
        value.withCString { haul_curl_setopt_string(raw, option, $0) }
    }

    @discardableResult
    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) -> CURLcode {
        haul_curl_setopt_pointer(raw, option, pointer)
    }

    func responseCode() -> Int {
        var code = 0
        _ = haul_curl_getinfo_long(raw, CURLINFO_RESPONSE_CODE, &code)
        return code
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
    private(set) var raw: UnsafeMutablePointer<curl_slist>?

    init(_ lines: [String]) {
        for line in lines {
            raw = curl_slist_append(raw, line)
        }
    }

    deinit {
        curl_slist_free_all(raw)
    }
}
