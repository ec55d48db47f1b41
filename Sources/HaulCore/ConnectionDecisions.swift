/// Whether to add connections to a segmented download, judged on the throughput of successive
/// windows. Pure: the coordinator measures and carries out.
public struct ConnectionGrowth: Sendable, Equatable {
    /// Still probing: another window will be judged.
    public private(set) var growing: Bool
    /// The throughput before the last connections were added; nil before the first addition.
    private var beforeLastAddition: Double?
    /// A gain below this factor is no gain: the connection count stops growing.
    public static let requiredGain = 1.15

    /// `adaptive`: probe (no `-x` given); otherwise the count is fixed and never grows.
    public init(adaptive: Bool) {
        growing = adaptive
    }

    /// One judged window: `rate` bytes per second with `helpers` extra connections running, at
    /// most `limit`, `throttled` once the server asked for fewer. Returns how many to add.
    public mutating func judge(rate: Double, helpers: Int, limit: Int, throttled: Bool) -> Int {
        guard growing else { return 0 }
        // Near-linear gains mean a per-connection cap: add more; no real gain means stop.
        if let before = beforeLastAddition, rate < before * Self.requiredGain {
            growing = false
            return 0
        }
        guard !throttled, helpers < limit else {
            growing = false
            return 0
        }
        beforeLastAddition = rate
        // Doubling the connections each time finds a per-connection cap in a few steps.
        return min(limit - helpers, helpers + 1)
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
