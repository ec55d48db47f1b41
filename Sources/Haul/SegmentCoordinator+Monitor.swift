import Foundation
import HaulCore
import HaulStore

extension SegmentCoordinator {
    // MARK: monitor: checkpoints and the adaptive connection count

    func monitor() {
        var lastBytes = state.withLock { $0.mainNext + $0.table.bytesDone }
        // The throughput before the last connection was added; nil before the first addition.
        var beforeLastAddition: Double?
        var growing = setup.adaptive
        var pace = Pace()
        var ticks = 0
        while true {
            // Every 0.1 s the progress is recorded for this boot (a killed process re-fetches
            // little); every second the file is synced and the record made durable. While the
            // connection count grows, the throughput is judged every half second.
            let window = growing ? 0.5 : 1.0
            var slept = 0.0
            while slept < window, !state.withLock({ $0.stopping }) {
                Thread.sleep(forTimeInterval: 0.1)
                slept += 0.1
                recordProgress()
            }
            ticks += 1
            if !growing || ticks % 2 == 0 { checkpointRecordingFailure() }
            if state.withLock({ $0.stopping }) {
                checkpointRecordingFailure()
                return
            }
            if !growing { dropSlowConnections(&pace) }
            let bytes = state.withLock { $0.mainNext + $0.table.bytesDone }
            let rate = Double(bytes - lastBytes) / max(slept, 0.1)
            lastBytes = bytes
            guard growing else { continue }
            // Near-linear gains mean a per-connection cap: add more; no real gain means stop.
            if let before = beforeLastAddition, rate < before * 1.15 {
                growing = false
                continue
            }
            let (helpers, throttled, limit) = state.withLock { ($0.helpers, $0.throttled, $0.maxHelpers) }
            guard !throttled, helpers < limit else {
                growing = false
                continue
            }
            beforeLastAddition = rate
            // Doubling the connections each time finds a per-connection cap in a few steps.
            for _ in 0..<min(limit - helpers, helpers + 1) { addHelper() }
        }
    }

    /// Per-second progress of each connection's segment, to find one far behind the others.
    struct Pace {
        var lastNext: [Int: Int64] = [:]
        var slowSeconds: [Int: Int] = [:]
    }

    /// A connection at under a quarter of the median speed for three seconds in a row is dropped:
    /// its range goes back to be claimed (or stolen from), and its thread starts a new connection.
    func dropSlowConnections(_ pace: inout Pace) {
        let owned = state.withLock { state in state.table.owned.map { ($0, state.table.segments[$0]) } }
        var rates: [Int: Int64] = [:]
        for (index, segment) in owned where !segment.isDone {
            if let last = pace.lastNext[index] { rates[index] = segment.next - last }
            pace.lastNext[index] = segment.next
        }
        guard rates.count >= 2 else { return }
        let sorted = rates.values.sorted()
        let median = sorted[sorted.count / 2]
        guard median > 0 else { return }
        for (index, rate) in rates {
            pace.slowSeconds[index] = rate * 4 < median ? pace.slowSeconds[index, default: 0] + 1 : 0
            if pace.slowSeconds[index, default: 0] >= 3 {
                pace.slowSeconds[index] = 0
                state.withLock { _ = $0.dropped.insert(index) }
            }
        }
    }

    /// Data first, then the record that claims it.
    func checkpoint() throws(StoreError) {
        let (prefix, segments) = state.withLock { ($0.mainNext, $0.table.segments) }
        try file.syncData()
        try saveRecord(prefix, segments, true)
    }

    /// A checkpoint from the monitor: a failure stops every connection and is reported by the
    /// runner when it joins them.
    func checkpointRecordingFailure() {
        do {
            try checkpoint()
        } catch {
            stop(failing: error)
        }
    }

    /// The progress as written (not yet synced), trusted only within this boot.
    func recordProgress() {
        let (prefix, segments) = state.withLock { ($0.mainNext, $0.table.segments) }
        do {
            try saveRecord(prefix, segments, false)
        } catch {
            stop(failing: error)
        }
    }

    /// Stops every connection because a write, sync or record save failed; the first failure is
    /// the one the runner reports.
    func stop(failing error: StoreError) {
        state.withLock { state in
            state.stopping = true
            if state.ioFailure == nil { state.ioFailure = error }
        }
    }
}
