import Foundation
import HaulCore
import HaulEngine
import HaulTestSupport
import Testing

/// Keeps whether a head arrived; the body is dropped.
private final class Sink: TransferHandler {
    var status: Int?
    func transferDidReceiveHead(_ head: ResponseHead) -> TransferControl {
        status = head.status
        return .proceed
    }
    func transferDidReceiveBody(_ chunk: UnsafeRawBufferPointer) -> TransferControl { .proceed }
    func transferShouldAbort() -> Bool { false }
}

/// The transport pools its libcurl handles: what one transfer sets (a proxy, a netrc file) must
/// be gone for the next transfer that takes the same handle.
@Suite("libcurl handles reused: one transfer's proxy and netrc never reach the next", .serialized)
struct CurlTransportReuseTests {
    @Test func aProxyIsForgottenByTheNextTransfer() throws {
        // GIVEN a server, and a proxy address where nothing listens any more
        let server = try FaultServer()
        server.setResource("/f", body: Array(repeating: 7, count: 1000))
        let gone = try FaultServer()
        let deadProxy = "http://127.0.0.1:\(gone.port)"
        gone.stop()
        let transport = CurlTransport()
        let request = TransferRequest(url: try #require(URL(string: server.url("/f"))))

        // WHEN one transfer goes through that proxy and the next, on the same transport, has none
        var through = TransferOptions()
        through.proxy = deadProxy
        let first = transport.perform(request, options: through, handler: Sink())
        let sink = Sink()
        let second = transport.perform(request, options: TransferOptions(), handler: sink)

        // THEN the first fails naming the proxy, and the second reaches the server directly
        guard case .failed(let error) = first else {
            Issue.record("expected a failure, got \(first)")
            return
        }
        #expect(error.kind == .connect)
        #expect(error.message.hasPrefix("cannot reach the proxy \(deadProxy) (from transfer.proxy)"), "\(error.message)")
        #expect(error.text.settings == [.proxy])
        #expect(error.code == 7)
        #expect(second == .completed)
        #expect(sink.status == 200)
        #expect(server.requests.count == 1)
    }

    @Test func netrcCredentialsAreForgottenByTheNextTransfer() throws {
        // GIVEN a netrc entry for 127.0.0.1
        let server = try FaultServer()
        server.setResource("/f", body: Array(repeating: 1, count: 100))
        let directory = try TemporaryDirectory(prefix: "haul-netrc")
        let netrc = directory.file("netrc")
        try "machine 127.0.0.1 login alice password wonderland\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        let transport = CurlTransport()
        let request = TransferRequest(url: try #require(URL(string: server.url("/f"))))

        // WHEN a transfer uses the netrc file and the next one does not
        var withNetrc = TransferOptions()
        withNetrc.netrcFile = netrc
        #expect(transport.perform(request, options: withNetrc, handler: Sink()) == .completed)
        #expect(transport.perform(request, options: TransferOptions(), handler: Sink()) == .completed)

        // THEN only the first carried the credentials
        let sent = server.requests.map { $0.header("Authorization") }
        #expect(sent == ["Basic " + Data("alice:wonderland".utf8).base64EncodedString(), nil])
    }
}
