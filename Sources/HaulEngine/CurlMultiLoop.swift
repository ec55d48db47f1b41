#if canImport(CCurl)
    import CCurl
    import Foundation
    import Synchronization

    /// One thread drives every transfer handed to it through one libcurl multi handle, the way
    /// curl's own `--parallel` does: `curl_multi_poll` waits for any socket of any transfer (or a
    /// wake-up), `curl_multi_perform` moves them all, and each transfer's callbacks run on this
    /// thread. The multi handle's connection cache keeps connections alive across the downloads of
    /// a process (a batch's next file to the same host reuses one).
    ///
    /// New transfers and stop requests reach it by waking it (`curl_multi_wakeup`), never by a
    /// poll interval; the wait is bounded (250 ms) only so libcurl's own timers (the progress
    /// callback a stall is judged in) keep their pace.
    final class CurlMultiLoop: @unchecked Sendable {
        /// The process's loop, started on first use; nil if libcurl could not make a multi handle
        /// (out of memory), and transfers then run on threads of their own.
        static let shared = CurlMultiLoop()

        /// A transfer waiting to be added, or running: the handle, the state its callbacks share,
        /// and who hears the result. Touched by the loop thread only, once added.
        struct Transfer: @unchecked Sendable {
            let handle: CurlEasyHandle
            let context: CurlCallContext
            /// Kept alive until the transfer ends: libcurl reads the header list during it.
            let keepAlive: AnyObject
            let done: @Sendable (CURLcode) -> Void
        }

        private let multi: UnsafeMutableRawPointer
        private let incoming = Mutex<[Transfer]>([])
        /// Running transfers by their easy handle; the loop thread's alone.
        private var running: [UnsafeMutableRawPointer: Transfer] = [:]
        private var lastAbortCheck = ContinuousClock.now

        private init?() {
            CurlGlobal.ensureInitialized()
            guard let multi = curl_multi_init() else { return nil }
            self.multi = multi
            // Idle connections kept for reuse: enough for a wide batch against a few hosts.
            _ = haul_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, 256)
            let thread = Thread { [self] in run() }
            thread.name = "haul-curl-loop"
            thread.stackSize = 1 << 20
            thread.start()
        }

        /// Hands a configured transfer to the loop; `done` is called on the loop thread with its result.
        func add(_ transfer: Transfer) {
            incoming.withLock { $0.append(transfer) }
            curl_multi_wakeup(multi)
        }

        /// Wakes the loop now: a stop request is looked at without waiting for libcurl's next timer.
        func wake() {
            curl_multi_wakeup(multi)
        }

        private func run() {
            var active: Int32 = 0
            while true {
                for transfer in incoming.withLock({ list in
                    defer { list.removeAll() }
                    return list
                }) {
                    let code = curl_multi_add_handle(multi, transfer.handle.raw)
                    if code != CURLM_OK {
                        transfer.done(CURLE_FAILED_INIT)
                        continue
                    }
                    running[transfer.handle.raw] = transfer
                }
                stopAborted()
                curl_multi_perform(multi, &active)
                collectFinished()
                // Bounded so libcurl's timers (connect timeouts, the progress callback) keep their pace.
                var timeout = 250
                curl_multi_timeout(multi, &timeout)
                let wait = timeout < 0 ? 250 : min(timeout, 250)
                curl_multi_poll(multi, nil, 0, Int32(wait), nil)
            }
        }

        /// Transfers whose handler asks to end (a pause, a cancel) end now, not at the next callback.
        private func stopAborted() {
            let now = ContinuousClock.now
            guard now - lastAbortCheck >= .milliseconds(20) else { return }
            lastAbortCheck = now
            for (raw, transfer) in running where transfer.context.abortIfAsked() {
                finish(raw, transfer, CURLE_ABORTED_BY_CALLBACK)
            }
        }

        private func collectFinished() {
            var left: Int32 = 0
            while let message = curl_multi_info_read(multi, &left) {
                guard message.pointee.msg == CURLMSG_DONE, let raw = message.pointee.easy_handle,
                    let transfer = running[raw]
                else { continue }
                finish(raw, transfer, haul_curl_msg_result(message))
            }
        }

        private func finish(_ raw: UnsafeMutableRawPointer, _ transfer: Transfer, _ code: CURLcode) {
            running[raw] = nil
            curl_multi_remove_handle(multi, raw)
            transfer.done(code)
        }
    }
#endif
