import Foundation
import Haul
import HaulCore
import HaulEngine
import HaulTestSupport
import Testing

/// Downloads against a server (and a local file system) set up by an attacker: symlinks planted
/// where Haul writes, header floods, bodies longer than announced, credential-stealing redirects
/// and file names meant to escape the target directory.
@Suite("Hostile input")
struct HostileInputTests {
    // MARK: - The file system

    @Test("a symlink planted at the partial file's path is not followed")
    func symlinkAtPartialPath() async throws {
        // GIVEN a victim file outside the download directory, and the partial path a symlink to it
        let server = try FaultServer()
        server.setResource("/file.bin", body: TestData.bytes(count: 64 << 10, seed: 71))
        let outside = try TemporaryDirectory()
        let victim = outside.file("victim.txt")
        let victimBytes = Array("precious data\n".utf8)
        try Data(victimBytes).write(to: URL(fileURLWithPath: victim))
        let directory = try TemporaryDirectory()
        let destination = directory.file("file.bin")
        try FileManager.default.createSymbolicLink(atPath: destination + ".haul-partial", withDestinationPath: victim)

        // WHEN the file is downloaded to that destination
        let outcome = try await Self.run(Self.request(server, "/file.bin", to: .file(destination)))

        // THEN the link (a partial without a record is never trusted) is removed, not followed,
        // and the download completes into a new file of its own
        #expect(outcome.completion != nil, "expected a completion, got \(outcome)")
        #expect(Self.contents(destination) == TestData.bytes(count: 64 << 10, seed: 71))
        // AND the symlink's target is untouched, and no other file appeared beside it
        #expect(Self.contents(victim) == victimBytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["victim.txt"])
    }

    @Test("a dangling symlink at the partial file's path does not create its target")
    func danglingSymlinkAtPartialPath() async throws {
        // GIVEN the partial path a symlink to a file that does not exist yet, outside the directory
        let server = try FaultServer()
        server.setResource("/file.bin", body: TestData.bytes(count: 64 << 10, seed: 72))
        let outside = try TemporaryDirectory()
        let planted = outside.file("planted.bin")
        let directory = try TemporaryDirectory()
        let destination = directory.file("file.bin")
        try FileManager.default.createSymbolicLink(atPath: destination + ".haul-partial", withDestinationPath: planted)

        // WHEN the file is downloaded
        let outcome = try await Self.run(Self.request(server, "/file.bin", to: .file(destination)))

        // THEN nothing is created through the link: it is removed and the download completes
        #expect(outcome.completion != nil, "expected a completion, got \(outcome)")
        #expect(!Self.exists(planted))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
        #expect(Self.contents(destination) == TestData.bytes(count: 64 << 10, seed: 72))
    }

    // MARK: - Header floods

    @Test("a response with 300 header fields is refused as a protocol violation")
    func tooManyHeaderFields() async throws {
        // GIVEN a resource answered with 300 extra header fields (the engine allows 200)
        let server = try FaultServer()
        let fields = (0..<300).map { ("X-Filler-\($0)", "v") }
        server.setResource("/many.bin", body: TestData.bytes(count: 4096, seed: 73), extraHeaders: fields)
        let directory = try TemporaryDirectory()
        let destination = directory.file("many.bin")

        // WHEN it is downloaded
        let outcome = try await Self.run(Self.request(server, "/many.bin", to: .file(destination)))

        // THEN it fails as a protocol violation, and no destination file exists
        #expect(outcome.error?.category == .protocolViolation, "got \(outcome)")
        #expect(!Self.exists(destination))
        // AND it is not retried: a server that floods headers will do so again
        #expect(server.requests.count == 1)
    }

    @Test("a response with one 100 KiB header value is refused as a protocol violation")
    func hugeHeaderValue() async throws {
        // GIVEN a resource answered with a single 100 KiB header value (the engine allows 64 KiB in all)
        let server = try FaultServer()
        let value = String(repeating: "a", count: 100 << 10)
        server.setResource("/big.bin", body: TestData.bytes(count: 4096, seed: 74), extraHeaders: [("X-Huge", value)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("big.bin")

        // WHEN it is downloaded
        let outcome = try await Self.run(Self.request(server, "/big.bin", to: .file(destination)))

        // THEN it fails as a protocol violation, without retrying, and no destination file exists
        #expect(outcome.error?.category == .protocolViolation, "got \(outcome)")
        #expect(!Self.exists(destination))
        #expect(server.requests.count == 1)
    }

    @Test("a response with one 80 KiB header value is refused by the engine's own limit")
    func largeHeaderValueUnderCurlLimit() async throws {
        // GIVEN a value over Haul's 64 KiB head limit but under libcurl's 100 KiB line limit
        let server = try FaultServer()
        let value = String(repeating: "b", count: 80 << 10)
        server.setResource("/large.bin", body: TestData.bytes(count: 4096, seed: 75), extraHeaders: [("X-Large", value)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("large.bin")

        // WHEN it is downloaded
        let outcome = try await Self.run(Self.request(server, "/large.bin", to: .file(destination)))

        // THEN it fails as a protocol violation, without retrying, and no destination file exists
        #expect(outcome.error?.category == .protocolViolation, "got \(outcome)")
        #expect(!Self.exists(destination))
        #expect(server.requests.count == 1)
    }

    // MARK: - Bodies

    @Test("bytes past the announced length never reach the file")
    func moreBytesThanAnnounced() async throws {
        // GIVEN a server that sends 64 KiB of garbage after the announced body, on every request
        let server = try FaultServer()
        let body = TestData.bytes(count: (300 << 10) + 7, seed: 76)
        server.setResource("/extra.bin", body: body)
        server.setPersistentFaults("/extra.bin", [.extraBytes(count: 64 << 10)])
        let directory = try TemporaryDirectory()
        let destination = directory.file("extra.bin")

        // WHEN it is downloaded
        let outcome = try await Self.run(Self.request(server, "/extra.bin", to: .file(destination)))

        // THEN the file has exactly the resource's size and content
        let completion = try #require(outcome.completion, "failed: \(outcome)")
        #expect(completion.bytes == Int64(body.count))
        let written = try #require(Self.contents(destination))
        #expect(written.count == body.count)
        #expect(written == body)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["extra.bin"])
    }

    // MARK: - Credentials

    @Test("a redirect to another origin drops Authorization and Cookie; a same-origin one keeps them")
    func credentialsAndRedirects() async throws {
        // GIVEN an origin that redirects /away to a second server and /here to itself
        let origin = try FaultServer()
        let elsewhere = try FaultServer()
        let body = TestData.bytes(count: 32 << 10, seed: 77)
        origin.setResource("/file.bin", body: body)
        elsewhere.setResource("/file.bin", body: body)
        origin.setPersistentFaults("/away", [.redirect(status: 302, location: elsewhere.url("/file.bin"))])
        origin.setPersistentFaults("/here", [.redirect(status: 301, location: "/file.bin")])
        let directory = try TemporaryDirectory()
        let credentials = HTTPHeaders([("Authorization", "Bearer s3cret"), ("Cookie", "session=abc")])

        // WHEN both are downloaded with credentials
        let away = try await Self.run(
            Self.request(origin, "/away", to: .file(directory.file("away.bin")), headers: credentials))
        let here = try await Self.run(
            Self.request(origin, "/here", to: .file(directory.file("here.bin")), headers: credentials))

        // THEN both complete with the right bytes
        #expect(away.completion != nil, "failed: \(away)")
        #expect(here.completion != nil, "failed: \(here)")
        #expect(Self.contents(directory.file("away.bin")) == body)
        #expect(Self.contents(directory.file("here.bin")) == body)
        // AND the other origin saw neither credential
        let foreign = elsewhere.requests
        #expect(foreign.count == 1)
        for request in foreign {
            #expect(request.header("Authorization") == nil)
            #expect(request.header("Cookie") == nil)
        }
        // AND every request to the original origin, the same-origin redirect's target included, had both
        let own = origin.requests
        #expect(own.map(\.path) == ["/away", "/here", "/file.bin"])
        for request in own {
            #expect(request.header("Authorization") == "Bearer s3cret", "missing on \(request.path)")
            #expect(request.header("Cookie") == "session=abc", "missing on \(request.path)")
        }
    }

    // MARK: - Server-chosen file names

    /// What a hostile Content-Disposition must lead to.
    enum NameExpectation: Sendable {
        /// The download completes into a file of exactly this name inside the directory.
        case named(String)
        /// Either that, or the response is refused as a protocol violation and nothing is written
        /// (libcurl itself refuses some header bytes, e.g. NUL, depending on its version).
        case namedOrRefused(String)
    }

    /// Content-Disposition values meant to escape the target directory or disguise the file.
    static let hostileDispositions: [(header: String, expected: NameExpectation)] = [
        ("attachment; filename=\"../../x\"", .named("x")),
        ("attachment; filename=\"/etc/passwd\"", .named("passwd")),
        ("attachment; filename=..\\..\\x", .named("x")),
        ("attachment; filename=\"..\\\\..\\\\x\"", .named("x")),
        ("attachment; filename=\"a\u{0}b\"", .namedOrRefused("ab")),
        ("attachment; filename=\"invoice\u{202E}fdp.exe\"", .named("invoicefdp.exe")),
        (
            "attachment; filename=\"" + String(repeating: "n", count: 1000) + ".txt\"",
            .named(String(repeating: "n", count: 251) + ".txt")
        ),
        ("attachment; filename*=UTF-8''%2e%2e%2f%2e%2e%2fx", .named("x")),
        ("attachment; filename*=UTF-8''%2e%2e", .named("file.bin")),
        ("attachment; filename=\"..\"", .named("file.bin")),
        // U+06DD is a Unicode "prepend" mark: it fuses with the "/" after it into one Character,
        // so a split on Characters does not see that separator; the mark itself is then dropped.
        ("attachment; filename*=UTF-8''%DB%9D%2F..%DB%9D%2Fescaped.bin", .named("escaped.bin")),
        ("attachment; filename=\"a\u{6DD}/b\"", .named("b")),
    ]

    @Test("hostile Content-Disposition names all land inside the target directory")
    func hostileContentDisposition() async throws {
        // GIVEN one download directory per hostile name, all inside a parent whose listing is known
        let server = try FaultServer()
        let body = TestData.bytes(count: 8 << 10, seed: 78)
        let root = try TemporaryDirectory()
        let parent = root.file("parent")
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: false)
        var directories: [String] = []
        for index in Self.hostileDispositions.indices {
            let directory = parent + "/out-\(index)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            directories.append(directory)
            server.setResource("/dl/\(index)/file.bin", body: body)
            server.setPersistentFaults("/dl/\(index)/file.bin", [.contentDisposition(Self.hostileDispositions[index].header)])
        }
        let rootBefore = try Self.listing(root.path)
        let parentBefore = try Self.listing(parent)
        let etcPasswdBefore = Self.contents("/etc/passwd")

        // WHEN each is downloaded into its directory
        for (index, directory) in directories.enumerated() {
            let (header, expectation) = Self.hostileDispositions[index]
            let shown = String(header.debugDescription.prefix(90))
            let outcome = try await Self.run(Self.request(server, "/dl/\(index)/file.bin", to: .directory(directory)))

            let expected: String
            switch expectation {
            case .named(let name):
                expected = name
            case .namedOrRefused(let name):
                expected = name
                if let error = outcome.error {
                    // THEN (refused) it is a protocol violation and nothing was written
                    #expect(error.category == .protocolViolation, "\(shown): \(outcome)")
                    #expect(try Self.listing(directory).allSatisfy { $0.hasPrefix(".haul-") }, "\(shown)")
                    continue
                }
            }
            // THEN it completes into a plain, visible file directly inside its directory
            guard let completion = outcome.completion else {
                Issue.record("\(shown): \(outcome)")
                continue
            }
            guard let name = Self.childName(of: directory, path: completion.path) else {
                Issue.record("\(shown): \(completion.path.debugDescription) is not a plain file directly inside \(directory)")
                continue
            }
            #expect(name == expected, "\(shown)")
            #expect(name.utf8.count <= 255)
            #expect(!name.hasPrefix("."))
            #expect(!name.unicodeScalars.contains { $0 == "\u{0}" || $0 == "\u{202E}" || $0 == "\u{6DD}" })
            #expect(try Self.listing(directory) == [name], "\(shown)")
            #expect(Self.contents(completion.path) == body)
        }

        // AND nothing was created or changed outside the download directories
        #expect(try Self.listing(root.path) == rootBefore)
        #expect(try Self.listing(parent) == parentBefore)
        #expect(Self.contents("/etc/passwd") == etcPasswdBefore)
    }

    // MARK: - Helpers

    /// How a download ended.
    enum Outcome: CustomStringConvertible {
        case completed(DownloadCompletion)
        case failed(DownloadError)

        var completion: DownloadCompletion? {
            if case .completed(let completion) = self { completion } else { nil }
        }

        var error: DownloadError? {
            if case .failed(let error) = self { error } else { nil }
        }

        var description: String {
            switch self {
            case .completed(let completion): "completed at \(completion.path)"
            case .failed(let error): "failed (\(error.category)): \(error.message)"
            }
        }
    }

    static func request(
        _ server: FaultServer,
        _ path: String,
        to destination: Destination,
        headers: HTTPHeaders = HTTPHeaders()
    ) throws -> DownloadRequest {
        let url = try #require(URL(string: server.url(path)))
        return DownloadRequest(
            url: url,
            destination: destination,
            headers: headers,
            retry: RetryPolicy(maxRetries: 2, baseDelay: 0.05, maxDelay: 0.2),
            transfer: TransferOptions(connectTimeout: 5, stallTimeout: 5))
    }

    /// Runs a download to its end; cancels it and fails the test after `timeout` seconds.
    static func run(_ request: DownloadRequest, timeout: Double = 30) async throws -> Outcome {
        let download = Downloader().download(request)
        return try await withThrowingTaskGroup(of: Outcome?.self) { group in
            group.addTask {
                do throws(DownloadError) {
                    return .completed(try await download.result())
                } catch {
                    return .failed(error)
                }
            }
            group.addTask {
                try await Task.sleep(for: .seconds(timeout))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            guard let first else {
                download.cancel()
                throw TestSupportError("the download of \(request.url) did not end within \(timeout) s")
            }
            return first
        }
    }

    /// The entries of a directory, sorted.
    static func listing(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    /// The last component of `path` if `path` is, byte for byte, `directory/NAME` with one component.
    static func childName(of directory: String, path: String) -> String? {
        let prefix = Array((directory + "/").utf8)
        let bytes = Array(path.utf8)
        guard bytes.count > prefix.count, Array(bytes.prefix(prefix.count)) == prefix else { return nil }
        let rest = Array(bytes.dropFirst(prefix.count))
        guard !rest.contains(UInt8(ascii: "/")) else { return nil }
        return String(decoding: rest, as: UTF8.self)
    }

    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    static func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }
}
