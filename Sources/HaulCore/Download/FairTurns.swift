/// Who goes next when a speed limit lets bytes through again and several transfers wait for it:
/// the group (a download) served longest ago first, and within a group the member (a connection)
/// that has waited longest. So a limit shared by several downloads gives each about the same
/// share whatever its number of connections, the connections of one download share its part
/// evenly, and nobody waits while another is served twice. Pure: the caller says who waits and
/// who was served; turns are counted, not timed.
package struct FairTurns<Group: Hashable & Sendable, Member: Hashable & Sendable>: Sendable {
    /// A member waiting for the limit: its group, and since when it waits (any monotonic clock).
    package struct Waiter: Sendable {
        /// Who waits (a transfer).
        package let member: Member
        /// What it belongs to (a download, by its limiter): groups take turns.
        package let group: Group
        /// Since when it waits: within a group, the longest waiting goes first.
        package let since: Double

        /// `member` of `group`, waiting since `since`.
        package init(member: Member, group: Group, since: Double) {
            self.member = member
            self.group = group
            self.since = since
        }
    }

    /// The turn each group was last served in; a group never served comes first.
    private var lastServed: [Group: UInt64] = [:]
    private var turn: UInt64 = 0

    /// Turns that have served nobody yet.
    package init() {}

    /// The order in which `waiting` should be asked whether the limit lets them through.
    package func order(_ waiting: [Waiter]) -> [Member] {
        waiting.sorted { a, b in
            let servedA = lastServed[a.group] ?? 0
            let servedB = lastServed[b.group] ?? 0
            if servedA != servedB { return servedA < servedB }
            return a.since < b.since
        }.map(\.member)
    }

    /// `group` was let through now: it goes behind every group waiting.
    package mutating func served(_ group: Group) {
        turn += 1
        lastServed[group] = turn
    }

    /// `group` has nobody left: its turn is forgotten.
    package mutating func forget(_ group: Group) {
        lastServed[group] = nil
    }
}
