import Testing

@testable import HaulStore

@Suite("LeaseOwner: its text in the lease_owner column")
struct LeaseOwnerTests {
    @Test("GIVEN an owner WHEN encoded and read back THEN the same owner")
    func roundTrips() {
        let owner = LeaseOwner(bootID: "0b5c6d2e-8f1a-4c3b-9d7e-112233445566", pid: 4242, token: "a1b2c3d4e5f6")
        #expect(LeaseOwner(encoded: owner.encoded) == owner)
        #expect(LeaseOwner(encoded: "boot|7|") == LeaseOwner(bootID: "boot", pid: 7, token: ""))
        #expect(LeaseOwner(encoded: "é|7|ß") == LeaseOwner(bootID: "é", pid: 7, token: "ß"))
    }

    @Test("GIVEN texts that are not three parts with a process id WHEN read THEN nil")
    func refusesOtherTexts() {
        for text in ["", "boot|7", "boot|7|t|x", "boot|x|t", "boot||t", "boot|99999999999|t"] {
            #expect(LeaseOwner(encoded: text) == nil, "\(text)")
        }
    }
}
