#if canImport(CCurl)
    import CCurl
    import Foundation
    import HaulCore
    import Synchronization

    /// One thread drives every transfer handed to it through one libcurl multi handle, the way
    /// curl's own `--parallel` does: `curl_multi_poll` waits for any socket of any transfer (or a
    /// wake-up), `curl_multi_perform` moves them all, and each transfer's callbacks run on this
    /// thread. The multi handle's connection cache keeps connections alive across the downloads of
    /// a process (a batch's next file to the same host reuses one).
    ///
    /// New transfers, stop requests and limit changes reach it by waking it (`curl_multi_wakeup`),
    /// never by a poll interval; the wait is bounded (250 ms) only so libcurl's own timers (the
    /// progress callback a stall is judged in) keep their pace, and by the time the next transfer
    /// held back by its speed limit is due.
    ///
    /// A speed limit never blocks the loop: a chunk its pacer holds back goes back to libcurl
    /// (`CURL_WRITEFUNC_PAUSE`: libcurl keeps it and reads no more from that socket, so the sender
    /// is slowed by TCP's flow control), and the loop resumes the transfer (`curl_easy_pause`) when
    /// the pacer's wait is over; libcurl then offers the same chunk again.
    ///
    /// `@unchecked Sendable`: everything but `incoming` and the atomics is the loop thread's alone.
    final class CurlMultiLoop: @unchecked Sendable {
        /// The process's loop, started on first use; nil if libcurl could not make a multi handle
        /// (out of memory), and transfers then run on threads of their own.
        static let shared = CurlMultiLoop()
        /// Whether `shared` was made: a limit change wakes the loop only if there is one.
        private static let started = Atomic<Bool>(false)

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
        /// A transfer paused by its pacer or its handler: when to look again, and since when it waits.
        private struct Hold {
            var due: ContinuousClock.Instant
            let since: ContinuousClock.Instant
        }

        /// Transfers paused by their pacer or their handler; the loop thread's alone.
        private var held: [UnsafeMutableRawPointer: Hold] = [:]
        /// Who goes first when a limit lets bytes through again (groups: pacers, that is downloads;
        /// members: transfers); the loop thread's alone.
        private var turns = FairTurns<ObjectIdentifier, Int>()
        /// The origin of the waiting times given to `turns`.
        private let origin = ContinuousClock.now
        private var lastAbortCheck = ContinuousClock.now
        /// A stop was requested: the handlers are asked at the next turn, whenever the last time was.
        private let stopAsked = Atomic<Bool>(false)
        /// A pace changed: the held transfers ask their pacers again at the next turn.
        private let paceChanged = Atomic<Bool>(false)

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
            Self.started.store(true, ordering: .releasing)
        }

        /// Hands a configured transfer to the loop; `done` is called on the loop thread with its result.
        func add(_ transfer: Transfer) {
            incoming.withLock { $0.append(transfer) }
            curl_multi_wakeup(multi)
        }

        /// Wakes the loop now: a stop request is looked at without waiting for libcurl's next timer.
        func wake() {
            stopAsked.store(true, ordering: .releasing)
            curl_multi_wakeup(multi)
        }

        /// Wakes the running loop, if any, so that its held transfers ask their pacers (and handlers) again.
        static func wakeIfRunning() {
            guard started.load(ordering: .acquiring), let loop = shared else { return }
            loop.paceChanged.store(true, ordering: .releasing)
            curl_multi_wakeup(loop.multi)
        }

        private func run() {
            // Every blocking call asks whether it is here (`LoopThread.mustNotBlock`).
            LoopThread.markCurrent()
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
                    let raw = transfer.handle.raw
                    running[raw] = transfer
                    transfer.context.holdBack = { [unowned self] seconds in
                        let now = ContinuousClock.now
                        // Held again: it waits behind the others of its download.
                        held[raw] = Hold(due: now + .milliseconds(Int64((seconds * 1000).rounded(.up))), since: now)
                    }
                }
                stopAborted()
                resumeDue()
                curl_multi_perform(multi, &active)
                collectFinished()
                // Bounded so libcurl's timers (connect timeouts, the progress callback) keep their pace.
                var timeout = 250
                curl_multi_timeout(multi, &timeout)
                var wait = timeout < 0 ? 250 : min(timeout, 250)
                if let due = held.values.map(\.due).min() {
                    let left = (due - .now) / .milliseconds(1)
                    wait = min(wait, max(0, Int(left.rounded(.up))))
                }
                curl_multi_poll(multi, nil, 0, Int32(wait), nil)
            }
        }

        /// Resumes the held transfers whose wait is over (or, after a pace changed, whose pacer now
        /// says so), in `FairTurns`' order, so a limit is shared evenly between downloads and
        /// between the connections of each; a pacer that still holds one back gives it a new due
        /// time, and it keeps its place.
        private func resumeDue() {
            guard !held.isEmpty else { return }
            let recheck = paceChanged.exchange(false, ordering: .acquiringAndReleasing)
            let now = ContinuousClock.now
            var waiting: [FairTurns<ObjectIdentifier, Int>.Waiter] = []
            var handles: [Int: UnsafeMutableRawPointer] = [:]
            for (raw, hold) in held where recheck || hold.due <= now {
                guard let transfer = running[raw] else {
                    held[raw] = nil
                    continue
                }
                handles[Int(bitPattern: raw)] = raw
                // A transfer held by its handler alone (a record being saved) is a group of its own.
                let group = transfer.context.pacer.map { ObjectIdentifier($0) } ?? ObjectIdentifier(transfer.context)
                waiting.append(.init(member: Int(bitPattern: raw), group: group, since: (hold.since - origin).inSeconds))
            }
            for member in turns.order(waiting) {
                guard let raw = handles[member], let transfer = running[raw] else { continue }
                let group = transfer.context.pacer.map { ObjectIdentifier($0) } ?? ObjectIdentifier(transfer.context)
                let wait = transfer.context.secondsBeforeNextChunk()
                if wait >= TransferPacing.minimumWait {
                    held[raw]?.due = now + .milliseconds(Int64((wait * 1000).rounded(.up)))
                    continue
                }
                held[raw] = nil
                turns.served(group)
                transfer.context.resumed()
                // libcurl offers the held chunk again within this call; the pacer may hold it again.
                let code = curl_easy_pause(raw, Int32(CURLPAUSE_CONT))
                // The handler ended the transfer on the chunk offered again (a stop, a write that
                // failed): it ends here, as it would have in `curl_multi_perform`.
                if code != CURLE_OK { finish(raw, transfer, code) }
            }
        }

        /// Transfers whose handler asks to end (a pause, a cancel) end now, not at the next callback;
        /// after a wake-up for a stop at once, else at most every 20 ms.
        private func stopAborted() {
            let now = ContinuousClock.now
            let asked = stopAsked.exchange(false, ordering: .acquiringAndReleasing)
            guard asked || now - lastAbortCheck >= .milliseconds(20) else { return }
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
            held[raw] = nil
            if let pacer = transfer.context.pacer, !running.values.contains(where: { $0.context.pacer === pacer }) {
                turns.forget(ObjectIdentifier(pacer))
            }
            transfer.context.holdBack = nil
            curl_multi_remove_handle(multi, raw)
            transfer.done(code)
        }
    }
#endif
