/// Whether to add connections to a segmented download, judged on the throughput of successive
/// windows. Pure: the coordinator measures and carries out.
public struct ConnectionGrowth: Sendable, Equatable {
    /// Still probing: another window will be judged.
    public private(set) var growing: Bool
    /// The throughput, and the extra connections, before the last addition; nil before the first.
    private var beforeLastAddition: (rate: Double, helpers: Int)?
    /// A gain below this factor is no gain: the connection count stops growing.
    public static let requiredGain = 1.15
    /// A gain this close to linear (per connection added) shows a per-connection cap: every
    /// connection left is added at once instead of doubling again.
    public static let linearShare = 0.85

    /// `adaptive`: probe (no `-x` given); otherwise the count is fixed and never grows.
    public init(adaptive: Bool) {
        growing = adaptive
    }

    /// One judged window: `rate` bytes per second with `helpers` extra connections running, at
    /// most `limit`, `throttled` once the server asked for fewer, `cpuSaturated` when the process
    /// used nearly every core in the window (more connections would only compete for CPU: on a
    /// fast local link one connection is already the whole machine). Returns how many to add.
    public mutating func judge(rate: Double, helpers: Int, limit: Int, throttled: Bool, cpuSaturated: Bool = false) -> Int {
        guard growing else { return 0 }
        guard !cpuSaturated else {
            growing = false
            return 0
        }
        var nearLinear = false
        if let before = beforeLastAddition {
            // No real gain from the last addition: stop for good.
            guard rate >= before.rate * Self.requiredGain else {
                growing = false
                return 0
            }
            let linear = Double(helpers + 1) / Double(before.helpers + 1)
            nearLinear = rate >= before.rate * (1 + (linear - 1) * Self.linearShare)
        }
        guard !throttled, helpers < limit else {
            growing = false
            return 0
        }
        beforeLastAddition = (rate, helpers)
        // Doubling the connections finds a per-connection cap in a few steps; a cap already shown
        // (near-linear gain) takes the rest at once.
        return nearLinear ? limit - helpers : min(limit - helpers, helpers + 1)
    }
}

extension ConnectionGrowth {
    public static func == (a: ConnectionGrowth, b: ConnectionGrowth) -> Bool {
        a.growing == b.growing && a.beforeLastAddition?.rate == b.beforeLastAddition?.rate
            && a.beforeLastAddition?.helpers == b.beforeLastAddition?.helpers
    }
}

/// Finds a connection far slower than the others: under a quarter of the median speed for three
/// observations in a row. Its range goes back to be claimed and its thread starts a new connection.
public struct SlowConnectionWatch: Sendable, Equatable {
    private var lastNext: [Int: Int64] = [:]
    private var slowObservations: [Int: Int] = [:]

    public init() {}

    /// One observation of where each unfinished segment's connection has got to (taken at a
    /// steady interval). Returns the segments whose connections should be dropped.
    public mutating func observe(_ positions: [(index: Int, next: Int64)]) -> [Int] {
        var rates: [Int: Int64] = [:]
        for (index, next) in positions {
            if let last = lastNext[index] { rates[index] = next - last }
            lastNext[index] = next
        }
        guard rates.count >= 2 else { return [] }
        let sorted = rates.values.sorted()
        let median = sorted[sorted.count / 2]
        guard median > 0 else { return [] }
        var dropped: [Int] = []
        for (index, rate) in rates.sorted(by: { $0.key < $1.key }) {
            slowObservations[index] = rate * 4 < median ? slowObservations[index, default: 0] + 1 : 0
            if slowObservations[index, default: 0] >= 3 {
                slowObservations[index] = 0
                dropped.append(index)
            }
        }
        return dropped
    }
}
