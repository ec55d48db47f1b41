import Foundation
import HaulCore
import Testing

@Suite("Digests a server publishes")
struct ServerDigestTests {
    // SHA-256 and MD5 of "hello world\n", base64 and hex.
    static let sha256Base64 = "qUiQTy8PR5uPgZdpSzAYSw0u0cHNKh7A+4XSmaGSpEc="
    static let sha256Hex = "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"
    static let md5Base64 = "b1kCrCNwJL3QwXbLkwY9xA=="

    static func read(_ pairs: [(String, String)], status: Int = 200) -> ServerDigests.Found {
        ServerDigests.read(HTTPHeaders(pairs), status: status)
    }

    @Test func aRangeDownloadKeepsNoWholeFileDigestAndSaysSo() {
        let headers = HTTPHeaders([("Repr-Digest", "sha-256=:\(Self.sha256Base64):"), ("x-goog-hash", "md5=\(Self.md5Base64)")])
        let range = ServerDigests.read(headers, status: 206, keepsWholeFile: false)
        #expect(range.best == nil)
        #expect(range.unverifiable.contains { $0.contains("Repr-Digest") && $0.contains("x-goog-hash") && $0.contains("not checked") })
        #expect(ServerDigests.read(headers, status: 206).best?.algorithm == .sha256)
    }

    @Test func reprDigestAndTheLegacyDigestHeaderAreRead() {
        let repr = Self.read([("Repr-Digest", "sha-256=:\(Self.sha256Base64):, unixsum=:AAA=:")], status: 206)
        #expect(repr.best == ServerDigest(algorithm: .sha256, expectedHex: Self.sha256Hex, source: "Repr-Digest"))
        let legacy = Self.read([("Digest", "MD5=\(Self.md5Base64), SHA-256=\(Self.sha256Base64)")])
        #expect(legacy.best?.algorithm == .sha256)
        #expect(legacy.usable.map(\.algorithm) == [.sha256, .md5])
        #expect(legacy.usable.last?.expectedHex == "6f5902ac237024bdd0c176cb93063dc4")
    }

    @Test func contentDigestCountsOnlyForAWholeResponse() {
        let header = ("Content-Digest", "sha-256=:\(Self.sha256Base64):")
        #expect(Self.read([header], status: 200).best != nil)
        // A 206's Content-Digest covers only the part sent: not the file
        #expect(Self.read([header], status: 206).best == nil)
    }

    @Test func cloudStorageChecksumsAreReadAndMultipartOnesAreNotVerifiable() {
        let google = Self.read([("x-goog-hash", "crc32c=4waSgw=="), ("x-goog-hash", "md5=\(Self.md5Base64)")])
        #expect(google.usable.map(\.algorithm) == [.md5, .crc32c])
        #expect(google.usable.last?.expectedHex == "e3069283")
        let amazon = Self.read([("x-amz-checksum-crc64nvme", "rosUhgp5mIg="), ("x-amz-checksum-sha256", Self.sha256Base64)])
        #expect(amazon.best?.source == "x-amz-checksum-sha256")
        #expect(amazon.usable.last == ServerDigest(algorithm: .crc64nvme, expectedHex: "ae8b14860a799888", source: "x-amz-checksum-crc64nvme"))
        // Multipart: a digest of part digests
        let multipart = Self.read([("x-amz-checksum-crc32c", "4waSgw==-3")])
        #expect(multipart.usable.isEmpty && multipart.unverifiable.count == 1)
        let composite = Self.read([("x-amz-checksum-sha256", Self.sha256Base64), ("x-amz-checksum-type", "COMPOSITE")])
        #expect(composite.usable.isEmpty && !composite.unverifiable.isEmpty)
    }

    @Test func damagedOrUnknownValuesAreIgnored() {
        for value in ["sha-256=:not base64!:", "sha-256=:AAAA:", "sha-256=\(Self.sha256Base64)", "md5=:\(Self.md5Base64):", "", ",,="] {
            #expect(Self.read([("Repr-Digest", value)]).usable.isEmpty, "\(value)")
        }
        #expect(Self.read([("Digest", "SHA-256=AAAA")]).usable.isEmpty)
        #expect(Self.read([("x-amz-checksum-crc32", "4waSgw==")]).usable.isEmpty)
    }
}
