/// The servers the connections of a segmented download fetch from, and the rules for sharing
/// connections over them: the primary (the server the download's first response came from,
/// index 0) and its mirrors. A new connection goes to the source with the fewest connections
/// (the runner's own counts for the primary), so connections spread round-robin; a mirror is
/// probed by the first connection given to it (`MirrorProbe`) and used only once admitted; a
/// mirror that disagrees or keeps failing is dropped for the rest of the run, and the primary
/// never is. Pure: no I/O, no threads.
package struct SegmentSources: Sendable, Equatable {
    /// Where a source stands in this run.
    package enum Standing: Sendable, Equatable {
        /// Not proven yet: the next connection given to it probes it first.
        case unproven
        /// A connection is probing it; no other connection is given to it meanwhile.
        case probing
        /// Proven to serve the same file: its segment requests carry these validators in `If-Range`.
        case admitted(Validators)
        /// Refused or failed, for this reason: not used again in this run.
        case dropped(String)
    }

    /// One server of a segmented download and how it is used now.
    package struct Source: Sendable, Equatable {
        /// Whether it is proven, being probed, in use or dropped.
        package var standing: Standing
        /// Connections using it now.
        package var connections: Int
        /// Transfer failures in a row since it last delivered a whole segment.
        package var failures: Int
    }

    /// What a new connection is to do.
    package enum Assignment: Sendable, Equatable {
        /// Fetch segments from this admitted source, with its validators in `If-Range`.
        case fetch(source: Int, validators: Validators)
        /// Probe this mirror first; `admit` or `drop` it afterwards.
        case probe(source: Int)
        /// Another connection is probing this mirror: wait for its verdict (`standing(of:)`).
        case awaitProbe(source: Int)

        /// The index of the source the assignment names.
        package var source: Int {
            switch self {
            case .fetch(let source, _), .probe(let source), .awaitProbe(let source): return source
            }
        }
    }

    /// The primary's index.
    package static let primary = 0
    /// A mirror whose transfers failed this many times in a row (without a whole segment between)
    /// is dropped: the primary and the other mirrors are there to take its ranges.
    package static let failuresBeforeDrop = 2

    /// The primary (index 0), then the mirrors in the order given.
    package private(set) var sources: [Source]

    /// The primary, admitted with the download's validators and holding the runner's own
    /// connection, then `mirrorCount` unproven mirrors.
    package init(primaryValidators: Validators, mirrorCount: Int) {
        sources = [Source(standing: .admitted(primaryValidators), connections: 1, failures: 0)]
        sources += Array(repeating: Source(standing: .unproven, connections: 0, failures: 0), count: max(0, mirrorCount))
    }

    /// Gives a new connection a source: the one not dropped with the fewest connections (the
    /// lowest index on a tie), never one in `excluded` (e.g. whose host has no free slot). A
    /// mirror being probed counts like any other, so connections started together still spread
    /// over every source. Nil when every source is excluded.
    package mutating func assign(excluding excluded: Set<Int> = []) -> Assignment? {
        let candidates = sources.indices.filter { !excluded.contains($0) && !isDropped($0) }
        guard let chosen = candidates.min(by: { sources[$0].connections < sources[$1].connections }) else { return nil }
        sources[chosen].connections += 1
        switch sources[chosen].standing {
        case .admitted(let validators):
            return .fetch(source: chosen, validators: validators)
        case .probing:
            return .awaitProbe(source: chosen)
        case .unproven, .dropped:
            sources[chosen].standing = .probing
            return .probe(source: chosen)
        }
    }

    /// Where `source` stands now (a connection awaiting a probe polls it).
    package func standing(of source: Int) -> Standing {
        sources.indices.contains(source) ? sources[source].standing : .dropped("no such source")
    }

    /// The probe proved the mirror: its segments are held to `validators`.
    package mutating func admit(_ source: Int, validators: Validators) {
        guard sources.indices.contains(source), sources[source].standing == .probing else { return }
        sources[source].standing = .admitted(validators)
    }

    /// Drops a mirror for the rest of the run. Returns true the first time (say so once); the
    /// primary is never dropped (its disagreements restart the download instead).
    @discardableResult
    package mutating func drop(_ source: Int, reason: String) -> Bool {
        guard source != Self.primary, sources.indices.contains(source) else { return false }
        if case .dropped = sources[source].standing { return false }
        sources[source].standing = .dropped(reason)
        return true
    }

    /// A transfer from `source` failed (dropped, stalled, refused, throttled). Returns true when
    /// that drops the mirror.
    package mutating func failed(_ source: Int, reason: String) -> Bool {
        guard source != Self.primary, sources.indices.contains(source) else { return false }
        sources[source].failures += 1
        guard sources[source].failures >= Self.failuresBeforeDrop else { return false }
        return drop(source, reason: reason)
    }

    /// `source` delivered a whole segment: its failures are forgiven.
    package mutating func delivered(_ source: Int) {
        guard sources.indices.contains(source) else { return }
        sources[source].failures = 0
    }

    /// A connection stops using the source it was given. A probe that ended without a verdict
    /// (the download stopped) leaves the mirror unproven; a connection that only awaited the
    /// probe leaves it to its prober.
    package mutating func release(_ assignment: Assignment) {
        let source = assignment.source
        guard sources.indices.contains(source) else { return }
        sources[source].connections = max(0, sources[source].connections - 1)
        if case .probe = assignment, sources[source].standing == .probing { sources[source].standing = .unproven }
    }

    /// Whether `source` was dropped.
    package func isDropped(_ source: Int) -> Bool {
        guard sources.indices.contains(source) else { return true }
        if case .dropped = sources[source].standing { return true }
        return false
    }
}
