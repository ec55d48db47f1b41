import Testing

@Test func placeholder_HaulCLITests() { #expect(1 + 1 == 2) }
