/// Whether to add connections to a segmented download, judged on the throughput of successive
/// windows. Pure: the coordinator measures and carries out.
package struct ConnectionGrowth: Sendable, Equatable {
    /// Still probing: another window will be judged.
    package private(set) var growing: Bool
    /// The throughput, and the extra connections, before the last addition; nil before the first.
    private var beforeLastAddition: (rate: Double, helpers: Int)?
    /// A gain below this factor is no gain: the connection count stops growing.
    package static let requiredGain = 1.15
    /// A gain this close to linear (per connection added) shows a per-connection cap: every
    /// connection left is added at once instead of doubling again.
    package static let linearShare = 0.85

    /// `adaptive`: probe (no `-x` given); otherwise the count is fixed and never grows.
    package init(adaptive: Bool) {
        growing = adaptive
    }

    /// One judged window: `rate` bytes per second with `helpers` extra connections running, at
    /// most `limit`, `throttled` once the server refused one (503, 429); `cpu` is what the process
    /// used in the window. Returns how many connections to add.
    ///
    /// The policy (the README's): one connection first, then one more; while the last addition
    /// raised the throughput by `requiredGain` or more the connections double (2, 4, 8, 16), and a
    /// gain near linear (a per-connection cap) takes the rest at once; growth stops for good at
    /// the first addition that did not help, at the first refusal, or at `limit`. Never more than
    /// one connection is asked for before one has shown it helps, so a server that allows one
    /// connection per client refuses one request, not seven. A busy process adds only the
    /// connections its CPU budget (`CPULoad.budgetShare` of the cores) can feed at the CPU each
    /// one costs now: on a fast local link one connection is already the machine, and more would
    /// only compete with each other and the server for the same cores.
    package mutating func judge(rate: Double, helpers: Int, limit: Int, throttled: Bool, cpu: CPULoad = .unknown) -> Int {
        guard growing else { return 0 }
        let connections = helpers + 1
        let fit = cpu.connectionsThatFit(running: connections)
        var nearLinear = false
        if let before = beforeLastAddition {
            // No real gain from the last addition: stop for good.
            guard rate >= before.rate * Self.requiredGain else {
                growing = false
                return 0
            }
            let linear = Double(connections) / Double(before.helpers + 1)
            nearLinear = rate >= before.rate * (1 + (linear - 1) * Self.linearShare)
        }
        guard !throttled, helpers < limit, fit > connections else {
            growing = false
            return 0
        }
        beforeLastAddition = (rate, helpers)
        // Doubling the connections finds a per-connection cap in a few steps; a cap already shown
        // (near-linear gain) takes the rest at once.
        let wanted = nearLinear ? limit - helpers : min(limit - helpers, connections)
        return min(wanted, fit - connections)
    }
}

/// What the process used of the machine's CPU during a judged window.
package struct CPULoad: Sendable, Equatable {
    /// Cores' worth of CPU time used per second of the window (1.5 = one and a half cores).
    package var coresUsed: Double
    /// Cores of the machine; 0 when nothing was measured.
    package var cores: Int

    /// Under this many cores' worth the process is idle: the link or the server holds it back.
    package static let idleCores = 0.25
    /// The share of all cores that connections may use; the server may need the rest (on a
    /// loopback link it runs on the same machine).
    package static let budgetShare = 0.75
    /// Nothing measured: no limit from the CPU.
    package static let unknown = CPULoad(coresUsed: 0, cores: 0)

    /// A load of `coresUsed` cores' worth of CPU on a machine of `cores` cores.
    package init(coresUsed: Double, cores: Int) {
        self.coresUsed = coresUsed
        self.cores = cores
    }

    /// The load of `cpuSeconds` used over `wallSeconds` on a machine of `cores` cores.
    package init(cpuSeconds: Double, wallSeconds: Double, cores: Int) {
        self.init(coresUsed: wallSeconds > 0 ? cpuSeconds / wallSeconds : 0, cores: wallSeconds > 0 ? cores : 0)
    }

    /// Whether the process used less than `idleCores` of CPU: the link or the server held it back.
    package var isIdle: Bool { cores > 0 && coresUsed < Self.idleCores }

    /// How many connections the CPU budget can feed, each costing what `running` cost on average.
    package func connectionsThatFit(running: Int) -> Int {
        guard cores > 0, coresUsed > 0, running > 0 else { return Int.max }
        let perConnection = coresUsed / Double(running)
        let fit = Self.budgetShare * Double(cores) / perConnection
        return fit >= Double(Int.max / 2) ? Int.max : Int(fit)
    }
}

extension ConnectionGrowth {
    package static func == (a: ConnectionGrowth, b: ConnectionGrowth) -> Bool {
        a.growing == b.growing && a.beforeLastAddition?.rate == b.beforeLastAddition?.rate
            && a.beforeLastAddition?.helpers == b.beforeLastAddition?.helpers
    }
}

/// Finds a connection far slower than the others: under a quarter of the median speed for three
/// observations in a row. Its range goes back to be claimed and its thread starts a new connection.
package struct SlowConnectionWatch: Sendable, Equatable {
    private var lastNext: [Int: Int64] = [:]
    private var slowObservations: [Int: Int] = [:]

    /// A watch that has seen nothing yet.
    package init() {}

    /// One observation of where each unfinished segment's connection has got to (taken at a
    /// steady interval), `limited` when a speed limit held the connections back. Returns the
    /// segments whose connections should be dropped.
    ///
    /// A connection held back by a speed limit is not slow: the limit decides its pace, and
    /// giving its piece to another connection would only ask for the same bytes again (and the
    /// new connection would be held back the same way). Under a limit nothing is dropped, and
    /// what was seen before it is forgotten.
    package mutating func observe(_ positions: [(index: Int, next: Int64)], limited: Bool = false) -> [Int] {
        guard !limited else {
            self = SlowConnectionWatch()
            return []
        }
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
