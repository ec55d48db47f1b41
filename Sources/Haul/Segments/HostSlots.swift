import Synchronization

/// Connections per host across the process (every segmented download's connections, its first
/// one included, for all the downloads of a queue), so a queue of segmented downloads stays polite.
/// A download that does not segment uses one connection and is bounded by the queue's `-j`.
final class HostSlots: Sendable {
    static let shared = HostSlots(limit: 16)
    let limit: Int
    private let counts = Mutex<[String: Int]>([:])

    init(limit: Int) {
        self.limit = limit
    }

    func acquire(_ host: String) -> Bool {
        counts.withLock { counts in
            guard counts[host, default: 0] < limit else { return false }
            counts[host, default: 0] += 1
            return true
        }
    }

    func release(_ host: String) {
        counts.withLock { counts in
            counts[host, default: 1] -= 1
            if counts[host] == 0 { counts.removeValue(forKey: host) }
        }
    }
}
