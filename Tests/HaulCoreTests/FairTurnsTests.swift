import HaulCore
import Testing

/// Who goes next when a speed limit lets bytes through, and what a limit means for a connection
/// that looks slow (issue 36, item 7).
@Suite("Fair turns under a shared limit")
struct FairTurnsTests {
    typealias Turns = FairTurns<String, String>

    /// Serves, turn after turn, the first of `order`'s answer for everyone waiting (as the event
    /// loop does: the first it asks takes the bytes, the others wait again, keeping their place);
    /// the one served waits again at the back. Returns who was served, in order.
    static func serve(_ members: [(member: String, group: String)], turns count: Int) -> [String] {
        var turns = Turns()
        var since = Dictionary(uniqueKeysWithValues: members.enumerated().map { ($1.member, Double($0)) })
        let groups = Dictionary(uniqueKeysWithValues: members.map { ($0.member, $0.group) })
        var clock = Double(members.count)
        var served: [String] = []
        for _ in 0..<count {
            let waiting = members.map { Turns.Waiter(member: $0.member, group: $0.group, since: since[$0.member] ?? 0) }
            guard let first = turns.order(waiting).first, let group = groups[first] else { break }
            served.append(first)
            turns.served(group)
            since[first] = clock
            clock += 1
        }
        return served
    }

    @Test func twoDownloadsAlternateWhateverTheirConnections() {
        // GIVEN download a with four connections and b with one, all waiting for the limit
        let members = [("a1", "a"), ("a2", "a"), ("a3", "a"), ("a4", "a"), ("b1", "b")].map { (member: $0.0, group: $0.1) }

        // WHEN the limit lets eight chunks through
        let served = Self.serve(members, turns: 8)

        // THEN the downloads take turns (half each), and a's connections take a's turns in order
        #expect(served == ["a1", "b1", "a2", "b1", "a3", "b1", "a4", "b1"])
    }

    @Test func theConnectionsOfOneDownloadTakeTurnsInTheOrderTheyWaited() {
        // GIVEN one download's three connections, the third waiting longest
        var turns = Turns()
        let waiting = [Turns.Waiter(member: "x", group: "d", since: 5), .init(member: "y", group: "d", since: 7), .init(member: "z", group: "d", since: 1)]

        // THEN the one that waited longest is asked first, and serving the group changes nothing within it
        #expect(turns.order(waiting) == ["z", "x", "y"])
        turns.served("d")
        #expect(turns.order(waiting) == ["z", "x", "y"])
    }

    @Test func aGroupServedLongAgoOrNeverGoesFirstAndAForgottenOneStartsAfresh() {
        var turns = Turns()
        turns.served("old")
        turns.served("recent")
        let waiting = [
            Turns.Waiter(member: "r", group: "recent", since: 0), .init(member: "o", group: "old", since: 9), .init(member: "n", group: "new", since: 20),
        ]
        #expect(turns.order(waiting) == ["n", "o", "r"])
        turns.forget("recent")
        #expect(turns.order(waiting) == ["r", "n", "o"])
    }

    @Test func aConnectionHeldBackByALimitIsNeverDroppedAsSlow() {
        // GIVEN a connection far behind the others, as a limit that serves them unevenly leaves it
        var watch = SlowConnectionWatch()
        var positions: [(index: Int, next: Int64)] = [(0, 0), (1, 0), (2, 0)]
        #expect(watch.observe(positions, limited: true).isEmpty)

        // WHEN it stays behind for five observations under the limit
        var dropped: [Int] = []
        for _ in 0..<5 {
            positions = [(0, positions[0].next + 1000), (1, positions[1].next + 1000), (2, positions[2].next + 100)]
            dropped += watch.observe(positions, limited: true)
        }

        // THEN it is not dropped; and once the limit is lifted, it takes three slow observations again
        #expect(dropped.isEmpty)
        var after: [[Int]] = []
        for _ in 0..<4 {
            positions = [(0, positions[0].next + 1000), (1, positions[1].next + 1000), (2, positions[2].next + 100)]
            after.append(watch.observe(positions))
        }
        #expect(after == [[], [], [], [2]])
    }
}
