import Foundation
import HaulTestSupport
import Testing

/// What haul sends: method, headers and body come from the flags.
@Suite("haul request shaping")
struct CLIRequestTests {
    @Test func methodHeaderAndBodyFromAFileReachTheServer() throws {
        // GIVEN a server and a body file
        let server = try FaultServer()
        let reply = TestData.bytes(count: 3000, seed: 31)
        server.setResource("/upload", body: reply)
        let directory = try TemporaryDirectory()
        let payload = TestData.bytes(count: 20_000, seed: 32)
        try Disk.write(payload, to: directory.file("payload.bin"))
        let output = directory.file("reply.bin")
        // WHEN haul sends -X PUT -H "X-A: 1" --data @file
        let result = try HaulBinary.run([
            "-q", "-X", "PUT", "-H", "X-A: 1", "-H", "X-Second:  spaced value ", "--data", "@" + directory.file("payload.bin"),
            "-o", output, server.url("/upload"),
        ])
        // THEN the server recorded that method, those headers and exactly that body; the reply is saved
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let request = try #require(server.requests.first)
        #expect(server.requests.count == 1)
        #expect(request.method == "PUT")
        #expect(request.header("X-A") == "1")
        #expect(request.header("X-Second") == "spaced value")
        #expect(request.body == payload)
        #expect(request.header("User-Agent")?.hasPrefix("haul/") == true)
        #expect(Disk.difference(output, reply) == nil)
    }

    @Test func inlineDataDefaultsToPost() throws {
        // GIVEN a server
        let server = try FaultServer()
        server.setResource("/form", body: Array("ok".utf8))
        let directory = try TemporaryDirectory()
        // WHEN haul sends --data without -X
        let result = try HaulBinary.run(["-q", "--data", "a=1&b=2", "-o", directory.file("r"), server.url("/form")])
        // THEN it is a POST with a form content type and that body
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let request = try #require(server.requests.first)
        #expect(request.method == "POST")
        #expect(request.body == Array("a=1&b=2".utf8))
        #expect(request.header("Content-Type") == "application/x-www-form-urlencoded")
    }

    @Test func userAgentAndContentTypeCanBeOverridden() throws {
        // GIVEN a server
        let server = try FaultServer()
        server.setResource("/api", body: Array("{}".utf8))
        let directory = try TemporaryDirectory()
        // WHEN haul is given its own User-Agent and Content-Type
        let result = try HaulBinary.run([
            "-q", "-H", "User-Agent: tester/2", "-H", "Content-Type: application/json", "--data", "{\"a\":1}",
            "-o", directory.file("r"), server.url("/api"),
        ])
        // THEN those are sent, once each
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let request = try #require(server.requests.first)
        #expect(request.header("User-Agent") == "tester/2")
        #expect(request.headers.filter { $0.name.lowercased() == "user-agent" }.count == 1)
        #expect(request.header("Content-Type") == "application/json")
        #expect(request.headers.filter { $0.name.lowercased() == "content-type" }.count == 1)
    }

    @Test func redirectIsFollowedAndTheFileSaved() throws {
        // GIVEN a URL that redirects to the resource
        let server = try FaultServer()
        let body = TestData.bytes(count: 9000, seed: 33)
        server.setResource("/real.bin", body: body)
        server.setResource("/old", body: [])
        server.setPersistentFaults("/old", [.redirect(status: 302, location: "/real.bin")])
        let directory = try TemporaryDirectory()
        // WHEN haul downloads the old URL into a directory
        let result = try HaulBinary.run(["-q", "-d", directory.path, server.url("/old")])
        // THEN it follows the redirect and names the file after the final URL
        #expect(result.status == 0, "stderr: \(result.stderr)")
        #expect(Disk.difference(directory.file("real.bin"), body) == nil)
        #expect(server.requests.map(\.path) == ["/old", "/real.bin"])
    }

    @Test func redirectLoopExitsNine() throws {
        // GIVEN a URL that redirects to itself
        let server = try FaultServer()
        server.setResource("/loop", body: [])
        server.setPersistentFaults("/loop", [.redirect(status: 302, location: "/loop")])
        let directory = try TemporaryDirectory()
        // WHEN haul follows it
        let result = try HaulBinary.run(["-q", "--retry", "0", "-o", directory.file("x"), server.url("/loop")])
        // THEN it detects the loop and stops with the protocol exit code, creating nothing
        #expect(result.status == 9, "stderr: \(result.stderr)")
        #expect(server.requests.count <= 11)
        #expect(server.requests.allSatisfy { $0.path == "/loop" })
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test func tooManyRedirectsExitsNine() throws {
        // GIVEN a chain of distinct redirects /r1 -> /r2 -> ... -> /r6
        let server = try FaultServer()
        for hop in 1...5 {
            server.setResource("/r\(hop)", body: [])
            server.setPersistentFaults("/r\(hop)", [.redirect(status: 302, location: "/r\(hop + 1)")])
        }
        server.setResource("/r6", body: TestData.bytes(count: 100))
        let directory = try TemporaryDirectory()
        // WHEN haul allows only 3 redirects
        let result = try HaulBinary.run(["-q", "--retry", "0", "--max-redirects", "3", "-o", directory.file("x"), server.url("/r1")])
        // THEN it stops with the protocol exit code after the 4th request, creating nothing
        #expect(result.status == 9, "stderr: \(result.stderr)")
        #expect(server.requests.map(\.path) == ["/r1", "/r2", "/r3", "/r4"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}
