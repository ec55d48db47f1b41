import HaulCore

/// A batch's speed: the bytes its downloads moved in this run, measured over time like one
/// download's (`ProgressMeter`: over a second at least, none before). Not the sum of its
/// downloads' speeds: a download shorter than the second a speed is measured over never has
/// one, and a batch of small files would show none, or the last ones' closing figures. Bytes a
/// download resumed from are not moved by this run, and bytes it gave up (a restart from 0) are
/// not taken back: only what arrived counts. Pure; owned by the queue's live state.
struct BatchSpeed: Sendable {
    /// Each running download's bytes on disk when last seen (from its start: what it resumed from).
    private var seen: [Int64: Int64] = [:]
    /// Bytes moved by this run's downloads so far.
    private var moved: Int64 = 0
    private var meter = ProgressMeter()

    /// `id` started with `bytes` already on disk.
    mutating func started(_ id: Int64, from bytes: Int64) {
        seen[id] = bytes
    }

    /// `id` has `bytes` on disk now: what it gained since it was last seen was moved.
    mutating func reported(_ id: Int64, bytes: Int64) {
        if let last = seen[id], bytes > last { moved += bytes - last }
        seen[id] = bytes
    }

    /// `id` left the run.
    mutating func ended(_ id: Int64) {
        seen.removeValue(forKey: id)
    }

    /// A sample for the meter, `now` seconds on a monotonic clock.
    mutating func sample(at now: Double) {
        meter.record(bytes: moved, at: now)
    }

    /// Bytes per second over the last seconds; 0 until a second has been measured.
    var bytesPerSecond: Double { meter.bytesPerSecond }
}
