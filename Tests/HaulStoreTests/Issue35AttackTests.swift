import Foundation
import HaulTestSupport
import Testing

/// Attacks on issue 35's test support: each test here failed on the commit it was written against.
@Suite("issue 35's test support, attacked", .serialized)
struct Issue35AttackTests {
    /// `TCPRelay`'s `deinit` stops it, but its accept thread holds the relay strongly (`[self]`),
    /// so a relay a test dropped without `stop()` (an early `throw` before its `defer`, a helper
    /// that forgot) is never released: its listener and thread stay for the rest of the test
    /// process, and it goes on relaying to a server the test thinks it let go of.
    @Test(.timeLimit(.minutes(1)))
    func aRelayNoOneHoldsAnyMoreStopsListening() throws {
        let port: Int = try {
            let relay = try TCPRelay(to: 9)
            return relay.port
        }()
        Thread.sleep(forTimeInterval: 0.3)
        let client = try? RawClient(port: port)
        #expect(client == nil, "the relay on port \(port) still accepts connections after its last reference went away")
    }
}
