#if canImport(CCurl)
    import CCurl
    import Foundation

    /// What every transfer of the process shares, whichever thread runs it (the event loop, or a
    /// segment connection's own): the DNS cache and TLS sessions, so the next connection to a host
    /// skips the lookup and resumes the TLS session instead of a full handshake. libcurl locks each
    /// kind of shared data through the callbacks below.
    enum CurlShare {
        /// The share handle; nil if libcurl could not make one (each handle then keeps its own caches).
        nonisolated(unsafe) static let handle: UnsafeMutableRawPointer? = makeHandle()

        /// One mutex per kind of data libcurl shares (`curl_lock_data` values are small integers).
        nonisolated(unsafe) private static let locks: UnsafeMutablePointer<pthread_mutex_t> = {
            let locks = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: count)
            for index in 0..<count { pthread_mutex_init(locks + index, nil) }
            return locks
        }()
        private static let count = 16

        private static func makeHandle() -> UnsafeMutableRawPointer? {
            CurlGlobal.ensureInitialized()
            guard let share = curl_share_init() else { return nil }
            _ = locks
            let lock: haul_curl_lock_callback = { _, data, _, _ in
                let index = Int(data.rawValue)
                if index < CurlShare.count { pthread_mutex_lock(CurlShare.locks + index) }
            }
            let unlock: haul_curl_unlock_callback = { _, data, _ in
                let index = Int(data.rawValue)
                if index < CurlShare.count { pthread_mutex_unlock(CurlShare.locks + index) }
            }
            guard haul_curl_share_set_locks(share, lock, unlock) == CURLSHE_OK,
                haul_curl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_DNS.rawValue)) == CURLSHE_OK,
                haul_curl_share_setopt_long(share, CURLSHOPT_SHARE, Int(CURL_LOCK_DATA_SSL_SESSION.rawValue)) == CURLSHE_OK
            else {
                curl_share_cleanup(share)
                return nil
            }
            return share
        }
    }
#endif
