import Foundation
import HaulCore
import HaulStore
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Cookie files on disk: read, checked, merged and written private")
struct CookieFileTests {
    let now: Int64 = 1_700_000_000

    func url(_ text: String) throws -> URL {
        try #require(URL(string: text))
    }

    @Test func theJarIsWrittenPrivateAndReadsBack() throws {
        // GIVEN a jar with a cookie received from a server
        let directory = try TemporaryDirectory(prefix: "haul-cookies")
        var jar = CookieJar()
        jar.receive(setCookie: "session=abc; Max-Age=3600", from: try url("http://a.test/"), now: now)

        // WHEN it is saved where no file is yet
        let path = directory.file("jar.txt")
        try CookieFile.save(jar, to: path, readFromIt: false, now: now)

        // THEN the file is 0600 (cookies are credentials), holds the cookie, and leaves no temporary behind
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try CookieFile.load(path).cookies == jar.cookies)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["jar.txt"])
    }

    @Test func twoDownloadsSavingOneJarKeepEachOthersCookies() throws {
        // GIVEN two downloads, each with a cookie of its own, saving to one jar one after the other
        let directory = try TemporaryDirectory(prefix: "haul-cookies")
        let path = directory.file("jar.txt")
        var first = CookieJar()
        first.receive(setCookie: "one=1", from: try url("http://a.test/"), now: now)
        var second = CookieJar()
        second.receive(setCookie: "two=2", from: try url("http://b.test/"), now: now)

        // WHEN both save
        try CookieFile.save(first, to: path, readFromIt: false, now: now)
        try CookieFile.save(second, to: path, readFromIt: false, now: now)

        // THEN the jar holds both
        #expect(try CookieFile.load(path).cookies.map(\.name).sorted() == ["one", "two"])
    }

    @Test func aFileThatIsNoCookieFileIsNeitherReadNorReplaced() throws {
        // GIVEN a file of something else where the jar would go
        let directory = try TemporaryDirectory(prefix: "haul-cookies")
        let path = directory.file("notes.txt")
        let precious = "my notes\nline two\n"
        try precious.write(toFile: path, atomically: true, encoding: .utf8)

        // WHEN it is read as cookies, checked or written as a jar
        let loaded = #expect(throws: StoreError.self) { try CookieFile.load(path) }
        let checked = #expect(throws: StoreError.self) { try CookieFile.checkWritable(path) }
        let saved = #expect(throws: StoreError.self) { try CookieFile.save(CookieJar(), to: path, readFromIt: false, now: now) }

        // THEN each refuses, naming the line, and the file is untouched
        for error in [loaded, checked, saved] { #expect(error?.message.contains("line 1") == true, "\(error?.message ?? "")") }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == precious)
    }

    @Test func aJarInAMissingDirectoryIsRefusedBeforehand() throws {
        let directory = try TemporaryDirectory(prefix: "haul-cookies")
        let error = #expect(throws: StoreError.self) { try CookieFile.checkWritable(directory.file("no/such/jar.txt")) }
        #expect(error?.message.contains("does not exist") == true)
    }
}

@Suite("Queue store: a download that can no longer run keeps no proxy password")
struct StoredProxySecretTests {
    @Test func completingAnItemForgetsItsProxyPasswordButKeepsThePaths() throws {
        // GIVEN an item stored with a proxy password, a netrc file and cookie files
        let directory = try TemporaryDirectory(prefix: "haul-queue")
        let store = try QueueStore(directory: directory.path)
        var options = StoredOptions()
        options.proxy = "socks5h://alice:PROXYSECRET@127.0.0.1:1080"
        options.noProxy = "localhost"
        options.netrcFile = "/home/u/.netrc"
        options.cookieFile = "/tmp/in.txt"
        options.cookieJar = "/tmp/jar.txt"
        let new = NewDownload(url: "http://127.0.0.1:1/f", destinationKind: .file, destination: directory.file("out/f"), options: options)
        let id = try #require(try store.add([new]).first)
        #expect(try store.item(id)?.options == options)

        // WHEN it completes (and the run ends: the write-ahead log is truncated)
        _ = try store.claimNext(for: LeaseOwner())
        try store.apply(.transferCompleted, to: id)
        store.forgetRemovedSecrets()

        // THEN its proxy keeps the user but not the password, the paths stay, and no byte of the
        // database holds the password
        let kept = try #require(try store.item(id)?.options)
        #expect(kept.proxy == "socks5h://alice@127.0.0.1:1080")
        #expect(kept.noProxy == "localhost" && kept.netrcFile == "/home/u/.netrc" && kept.cookieJar == "/tmp/jar.txt")
        let files = [store.location, store.location + "-wal"].compactMap { FileManager.default.contents(atPath: $0) }
        for data in files { #expect(data.range(of: Data("PROXYSECRET".utf8)) == nil) }
    }
}
