import Foundation

/// How long a lease lasts, and how often its owner renews it.
package enum LeaseDuration {
    /// The default lease: long enough for a pause of the process (a slow disk, a swap storm), short
    /// enough that a dead worker's items run again soon.
    package static let defaultSeconds: Double = 20

    /// `HAUL_LEASE_SECONDS` when it is a number of at least 1, else `defaultSeconds`.
    package static let fromEnvironment: Double = {
        guard let text = ProcessInfo.processInfo.environment["HAUL_LEASE_SECONDS"], let value = Double(text), value >= 1 else {
            return defaultSeconds
        }
        return value
    }()

    /// How often a lease of `seconds` is renewed: three renewals fit in one lease, at most every 2 s.
    package static func renewalInterval(_ seconds: Double) -> Double {
        min(2, seconds / 3)
    }
}
