import Testing

@Test func placeholder_HaulCoreTests() { #expect(1 + 1 == 2) }
