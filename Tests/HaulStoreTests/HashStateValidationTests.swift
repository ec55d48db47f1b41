// libcrypto's layout of a saved state: these tests are Linux's (CommonCrypto's fields differ).
#if canImport(CCrypto)
    import CCrypto
    import HaulChecksum
    import HaulCore
    import Testing

    /// A saved hash state comes from a file anyone who can write beside the download can change.
    /// libcrypto trusts every field of a context, so each one it relies on is checked first.
    @Suite("Saved hash state validation")
    struct HashStateValidationTests {
        static let algorithms: [ChecksumAlgorithm] = [.md5, .sha1, .sha256, .sha512]
        static let input = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }

        /// The state after `count` bytes of `input`.
        static func saved(_ algorithm: ChecksumAlgorithm, count: Int = 1000) -> SavedHashState {
            let hash = StreamingHash(algorithm)
            input.prefix(count).withUnsafeBytes { hash.update($0) }
            return hash.save()
        }

        static func digest(_ algorithm: ChecksumAlgorithm, _ bytes: [UInt8]) -> String {
            let hash = StreamingHash(algorithm)
            bytes.withUnsafeBytes { hash.update($0) }
            return hash.finalizeHex()
        }

        /// The fields libcrypto relies on, whatever the algorithm's struct calls them.
        struct Fields {
            var num: UInt64
            var low: UInt64
            var high: UInt64
        }

        /// `saved` with its context's fields changed by `change`, and optionally another `length`.
        static func damaged(_ saved: SavedHashState, length: Int64? = nil, _ change: (inout Fields) -> Void) -> SavedHashState {
            var state = haul_hash_ctx()
            withUnsafeMutableBytes(of: &state) { $0.copyBytes(from: saved.context) }
            switch saved.algorithm {
            case .md5:
                var fields = Fields(num: UInt64(state.u.md5.num), low: UInt64(state.u.md5.Nl), high: UInt64(state.u.md5.Nh))
                change(&fields)
                state.u.md5.num = UInt32(truncatingIfNeeded: fields.num)
                state.u.md5.Nl = UInt32(truncatingIfNeeded: fields.low)
                state.u.md5.Nh = UInt32(truncatingIfNeeded: fields.high)
            case .sha1:
                var fields = Fields(num: UInt64(state.u.sha1.num), low: UInt64(state.u.sha1.Nl), high: UInt64(state.u.sha1.Nh))
                change(&fields)
                state.u.sha1.num = UInt32(truncatingIfNeeded: fields.num)
                state.u.sha1.Nl = UInt32(truncatingIfNeeded: fields.low)
                state.u.sha1.Nh = UInt32(truncatingIfNeeded: fields.high)
            case .sha256:
                var fields = Fields(num: UInt64(state.u.sha256.num), low: UInt64(state.u.sha256.Nl), high: UInt64(state.u.sha256.Nh))
                change(&fields)
                state.u.sha256.num = UInt32(truncatingIfNeeded: fields.num)
                state.u.sha256.Nl = UInt32(truncatingIfNeeded: fields.low)
                state.u.sha256.Nh = UInt32(truncatingIfNeeded: fields.high)
            case .sha512:
                var fields = Fields(num: UInt64(state.u.sha512.num), low: state.u.sha512.Nl, high: state.u.sha512.Nh)
                change(&fields)
                state.u.sha512.num = UInt32(truncatingIfNeeded: fields.num)
                state.u.sha512.Nl = fields.low
                state.u.sha512.Nh = fields.high
            case .crc32c, .crc64nvme:
                // No field of a CRC's state drives memory or counts bytes: nothing to damage here.
                break
            }
            let bytes = withUnsafeBytes(of: &state) { [UInt8]($0) }
            return SavedHashState(algorithm: saved.algorithm, length: length ?? saved.length, openSSLVersion: saved.openSSLVersion, context: bytes)
        }

        static func blockSize(_ algorithm: ChecksumAlgorithm) -> UInt64 {
            algorithm == .sha512 ? 128 : 64
        }

        /// Asserts `state` is refused with `defect`, both by `validate()` and by restoring.
        static func expectRefused(_ state: SavedHashState, _ defect: HashStateDefect, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(throws: defect, sourceLocation: sourceLocation) { try state.validate() }
            #expect(StreamingHash(restoring: state) == nil, sourceLocation: sourceLocation)
        }

        @Test(
            "GIVEN a state saved after n bytes WHEN restored THEN it validates and finishes with the one-shot digest",
            arguments: algorithms, [0, 1, 63, 64, 127, 128, 1000])
        func genuineStateRestores(algorithm: ChecksumAlgorithm, count: Int) throws {
            let saved = Self.saved(algorithm, count: count)
            #expect(throws: Never.self) { try saved.validate() }
            let restored = try #require(StreamingHash(restoring: saved))
            Self.input.dropFirst(count).withUnsafeBytes { restored.update($0) }
            #expect(restored.finalizeHex() == Self.digest(algorithm, Self.input))
        }

        @Test("GIVEN a block offset far past the block (the crash) WHEN validated THEN it is refused", arguments: algorithms)
        func hugeBlockOffsetIsRefused(algorithm: ChecksumAlgorithm) {
            Self.expectRefused(Self.damaged(Self.saved(algorithm)) { $0.num = 0x4000_0000 }, .blockOffset(0x4000_0000))
        }

        @Test("GIVEN a block offset of exactly the block size WHEN validated THEN it is refused", arguments: algorithms)
        func blockOffsetAtBlockSizeIsRefused(algorithm: ChecksumAlgorithm) {
            let size = Self.blockSize(algorithm)
            Self.expectRefused(Self.damaged(Self.saved(algorithm)) { $0.num = size }, .blockOffset(size))
        }

        @Test("GIVEN a block offset inside the block but not length mod block WHEN validated THEN it is refused", arguments: algorithms)
        func inconsistentBlockOffsetIsRefused(algorithm: ChecksumAlgorithm) {
            let expected = 1000 % Self.blockSize(algorithm)
            Self.expectRefused(Self.damaged(Self.saved(algorithm)) { $0.num = expected + 1 }, .blockOffset(expected + 1))
        }

        @Test("GIVEN a low bit-count word that is not 8 × length WHEN validated THEN it is refused", arguments: algorithms)
        func wrongLowBitCountIsRefused(algorithm: ChecksumAlgorithm) {
            Self.expectRefused(Self.damaged(Self.saved(algorithm)) { $0.low += 8 }, .bitCount)
        }

        @Test("GIVEN a high bit-count word that is not 8 × length WHEN validated THEN it is refused", arguments: algorithms)
        func wrongHighBitCountIsRefused(algorithm: ChecksumAlgorithm) {
            Self.expectRefused(Self.damaged(Self.saved(algorithm)) { $0.high = 1 }, .bitCount)
        }

        @Test("GIVEN a recorded length the state does not cover WHEN validated THEN it is refused", arguments: algorithms)
        func lengthDisagreeingWithTheStateIsRefused(algorithm: ChecksumAlgorithm) {
            // 1000 + one block: `num` still agrees, only the bit count shows the state covers fewer bytes.
            let length = 1000 + Int64(Self.blockSize(algorithm))
            Self.expectRefused(Self.damaged(Self.saved(algorithm), length: length) { _ in }, .bitCount)
        }

        @Test(
            "GIVEN a state past 4 GiB with a consistent bit count WHEN validated THEN it passes, and without the high word it does not",
            arguments: algorithms)
        func bitCountAbove32BitsIsChecked(algorithm: ChecksumAlgorithm) {
            // 2^32 is a multiple of every block size, so `num` stays right for 1000 + 2^32 bytes.
            let length: Int64 = 1000 + (1 << 32)
            let bits = UInt64(length) * 8
            let consistent = Self.damaged(Self.saved(algorithm), length: length) { fields in
                if algorithm == .sha512 {
                    fields.low = bits
                    fields.high = 0
                } else {
                    fields.low = bits & 0xFFFF_FFFF
                    fields.high = bits >> 32
                }
            }
            #expect(throws: Never.self) { try consistent.validate() }
            let truncated = Self.damaged(consistent) { fields in
                if algorithm == .sha512 { fields.low &= 0xFFFF_FFFF } else { fields.high = 0 }
            }
            Self.expectRefused(truncated, .bitCount)
        }

        @Test("GIVEN a context blob one byte short or long WHEN validated THEN it is refused", arguments: algorithms)
        func wrongSizeIsRefused(algorithm: ChecksumAlgorithm) {
            let saved = Self.saved(algorithm)
            let size = saved.context.count
            for context in [Array(saved.context.dropLast()), saved.context + [0], []] {
                let state = SavedHashState(algorithm: algorithm, length: saved.length, openSSLVersion: saved.openSSLVersion, context: context)
                Self.expectRefused(state, .wrongSize(actual: context.count, expected: size))
            }
        }

        @Test("GIVEN a state of one algorithm recorded as another WHEN validated THEN it is refused", arguments: algorithms)
        func otherAlgorithmsStateIsRefused(algorithm: ChecksumAlgorithm) {
            let saved = Self.saved(algorithm)
            for other in Self.algorithms where other != algorithm {
                let state = SavedHashState(algorithm: other, length: saved.length, openSSLVersion: saved.openSSLVersion, context: saved.context)
                Self.expectRefused(state, .wrongAlgorithm)
            }
        }

        @Test("GIVEN a negative recorded length WHEN validated THEN it is refused", arguments: algorithms)
        func negativeLengthIsRefused(algorithm: ChecksumAlgorithm) {
            let saved = Self.saved(algorithm, count: 0)
            let state = SavedHashState(algorithm: algorithm, length: -64, openSSLVersion: saved.openSSLVersion, context: saved.context)
            Self.expectRefused(state, .negativeLength)
        }

        @Test("GIVEN a state saved by another OpenSSL build WHEN validated THEN it is refused", arguments: algorithms)
        func otherOpenSSLBuildIsRefused(algorithm: ChecksumAlgorithm) {
            let saved = Self.saved(algorithm)
            let state = SavedHashState(algorithm: algorithm, length: saved.length, openSSLVersion: saved.openSSLVersion &+ 1, context: saved.context)
            Self.expectRefused(state, .otherOpenSSLBuild)
        }

        @Test("GIVEN a SHA-256 state with SHA-224's digest length WHEN validated THEN it is refused")
        func sha256DigestLengthIsChecked() {
            var state = haul_hash_ctx()
            let saved = Self.saved(.sha256)
            withUnsafeMutableBytes(of: &state) { $0.copyBytes(from: saved.context) }
            state.u.sha256.md_len = 28
            let context = withUnsafeBytes(of: &state) { [UInt8]($0) }
            Self.expectRefused(
                SavedHashState(algorithm: .sha256, length: saved.length, openSSLVersion: saved.openSSLVersion, context: context), .digestLength(28))
        }

        @Test("GIVEN a SHA-512 state with a digest length over 64 WHEN validated THEN it is refused")
        func sha512DigestLengthIsChecked() {
            var state = haul_hash_ctx()
            let saved = Self.saved(.sha512)
            withUnsafeMutableBytes(of: &state) { $0.copyBytes(from: saved.context) }
            state.u.sha512.md_len = 0xFFFF
            let context = withUnsafeBytes(of: &state) { [UInt8]($0) }
            Self.expectRefused(
                SavedHashState(algorithm: .sha512, length: saved.length, openSSLVersion: saved.openSSLVersion, context: context), .digestLength(0xFFFF))
        }
    }
#endif
