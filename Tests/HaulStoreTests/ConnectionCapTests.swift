import Foundation
import HaulCore
import Testing

@testable import HaulStore

/// A host that refused an extra connection is remembered, the lowest count it took, and the
/// record keeps it across runs (issue 36, item 12).
@Suite("Connection caps")
struct ConnectionCapTests {
    @Test func aHostsCapIsTheLowestCountItTookAndAtLeastOne() {
        var caps: [ConnectionCap] = []
        #expect(caps.cap(for: "a.test") == nil)
        caps.note(host: "a.test", connections: 4)
        caps.note(host: "b.test", connections: 0)
        caps.note(host: "a.test", connections: 6)
        #expect(caps.cap(for: "a.test") == 4)
        #expect(caps.cap(for: "b.test") == 1)
        caps.note(host: "a.test", connections: 2)
        #expect(caps == [ConnectionCap(host: "a.test", connections: 2), ConnectionCap(host: "b.test", connections: 1)])
    }

    @Test func theRecordKeepsTheCapsThroughItsJSON() throws {
        var record = ResumeRecord(originalURL: "http://a.test/f", finalURL: "http://a.test/f")
        record.connectionCaps = [ConnectionCap(host: "a.test", connections: 1)]
        let text = try ResumeRecordCodec.encode(record)
        #expect(text.contains(#""connectionCaps":[{"connections":1,"host":"a.test"}]"#), "\(text)")
        let decoded = try JSONDecoder().decode(ResumeRecord.self, from: Data(text.utf8))
        #expect(decoded.connectionCaps == record.connectionCaps)
    }
}
