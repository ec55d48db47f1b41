import Testing

@Test func placeholder_HaulTests() { #expect(1 + 1 == 2) }
