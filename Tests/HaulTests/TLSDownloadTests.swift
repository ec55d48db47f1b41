import Foundation
import Haul
import HaulCore
import HaulEngine
import HaulTestSupport
import Testing

/// The library over real TLS: nginx on loopback with a certificate from a throwaway CA.
@Suite("Downloader over TLS against nginx", .serialized)
struct TLSDownloadTests {
    let body = TestData.bytes(count: 300_000, seed: 81)

    /// nginx serving `body` as /file.bin over HTTPS, and the CA that signed its certificate.
    func start(
        _ root: TemporaryDirectory, _ certificates: TemporaryDirectory
    ) throws -> (nginx: NginxServer, caCert: String) {
        try Data(body).write(to: URL(fileURLWithPath: root.file("file.bin")))
        let made = try TestCertificates.make(in: certificates.path)
        let nginx = try NginxServer(
            documentRoot: root.path, tls: NginxTLS(certificatePath: made.serverCert, keyPath: made.serverKey))
        return (nginx, made.caCert)
    }

    func request(_ nginx: NginxServer, to path: String, transfer: TransferOptions) throws -> DownloadRequest {
        let url = try #require(URL(string: nginx.baseURL + "/file.bin"))
        return DownloadRequest(
            url: url, destination: .file(path), retry: RetryPolicy(maxRetries: 0), transfer: transfer)
    }

    @Test(.timeLimit(.minutes(1)))
    func untrustedCertificateFailsAsANetworkErrorAndWritesNothing() async throws {
        // GIVEN nginx over HTTPS with a certificate from an untrusted CA
        let root = try TemporaryDirectory(prefix: "haul-tls-root")
        let certificates = try TemporaryDirectory(prefix: "haul-tls-certs")
        let (nginx, _) = try start(root, certificates)
        let work = try TemporaryDirectory(prefix: "haul-tls-out")

        // WHEN the library downloads with default verification
        let download = Downloader().download(
            try request(nginx, to: work.file("f"), transfer: TransferOptions()))

        // THEN it fails in the network category, naming the certificate problem, and writes nothing
        do throws(DownloadError) {
            _ = try await download.result()
            Issue.record("a certificate from an untrusted CA was accepted")
        } catch {
            #expect(error.category == .network, "\(error)")
            #expect(error.message.lowercased().contains("certificate"), "\(error.message)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: work.path).isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func trustedCAFileDownloadsTheExactBytes() async throws {
        // GIVEN nginx over HTTPS and the CA that signed its certificate
        let root = try TemporaryDirectory(prefix: "haul-tls-root")
        let certificates = try TemporaryDirectory(prefix: "haul-tls-certs")
        let (nginx, caCert) = try start(root, certificates)
        let work = try TemporaryDirectory(prefix: "haul-tls-out")

        // WHEN the library downloads trusting that CA file
        let completion = try await Downloader().download(
            try request(nginx, to: work.file("f"), transfer: TransferOptions(caFile: caCert))
        ).result()

        // THEN the file is complete and exact, fetched from the https URL
        #expect(completion.bytes == Int64(body.count))
        #expect(FileManager.default.contents(atPath: work.file("f")).map(Array.init) == body)
        #expect(completion.finalURL.scheme == "https")
    }
}
