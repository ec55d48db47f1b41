import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The built `haul` executable and ways to run it.
enum HaulBinary {
    /// The path of the `haul` binary that `swift build --build-tests` put beside the test bundle.
    ///
    /// `HAUL_BINARY` overrides it. Otherwise the directories above the running test executable
    /// (`.../debug/HaulPackageTests.xctest`) are searched for an executable named `haul`.
    static func path() throws -> String {
        try BuiltBinary.path("haul")
    }

    /// Runs `haul` with `arguments` to completion (stdin is /dev/null), killing it after `timeout` seconds.
    static func run(_ arguments: [String], environment: [String: String]? = nil, timeout: Double = 60) throws -> ProcessResult {
        let merged = environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } }
        return try ProcessRunner.run(try path(), arguments, environment: merged, timeout: timeout)
    }
}

/// A `haul` process running in the background, for tests that signal or kill it mid-download.
final class RunningHaul {
    let process = Process()
    private let scratch: TemporaryDirectory
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `haul` with `arguments`, in `environment` when given (else this process's own).
    init(_ arguments: [String], environment: [String: String]? = nil) throws {
        scratch = try TemporaryDirectory(prefix: "haul-cli-run")
        let captured = try CapturedOutput(in: scratch)
        defer { captured.close() }
        process.executableURL = URL(fileURLWithPath: try HaulBinary.path())
        process.arguments = arguments
        if let environment { process.environment = environment }
        captured.attach(to: process)
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
    }

    deinit {
        // Never leave a child behind when a test fails early.
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    var pid: Int32 { process.processIdentifier }

    /// Sends `signal` to this process only (by its PID).
    func send(_ signal: Int32) {
        kill(pid, signal)
    }

    /// How the process ended.
    enum Ending: Equatable {
        case exited(Int32)
        case signalled(Int32)
    }

    /// Waits for the process to end; kills it and throws after `timeout` seconds. A second call
    /// (a `defer` after the test's own wait) returns at once.
    func wait(timeout: Double = 60) throws -> Ending {
        if !process.isRunning || exited.wait(timeout: .now() + timeout) == .success {
            process.waitUntilExit()
            return process.terminationReason == .uncaughtSignal
                ? .signalled(process.terminationStatus) : .exited(process.terminationStatus)
        }
        kill(pid, SIGKILL)
        process.waitUntilExit()
        throw TestSupportError("haul did not end within \(timeout) s and was killed; stderr: \(stderr)")
    }

    var stderr: String {
        (try? String(contentsOfFile: scratch.file("stderr"), encoding: .utf8)) ?? ""
    }

    var stdout: String {
        (try? String(contentsOfFile: scratch.file("stdout"), encoding: .utf8)) ?? ""
    }
}

/// Small file-system and socket helpers for the CLI tests.
enum Disk {
    static func exists(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: path)
    }

    static func bytes(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    /// nil when the file at `path` holds exactly `expected`; otherwise a short account of how it differs
    /// (test output stays readable for large files).
    static func difference(_ path: String, _ expected: [UInt8]) -> String? {
        guard let actual = bytes(path) else { return "\(path) does not exist" }
        return Bytes.difference(actual, expected)
    }

    /// Bytes in the partial files (`.haul-partial`) of `directory`.
    static func partialBytes(in directory: String) -> Int64 {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".haul-partial") }.reduce(Int64(0)) { $0 + (size(directory + "/" + $1) ?? 0) }
    }

    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int64(info.st_size)
    }

    static func write(_ bytes: [UInt8], to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
            throw TestSupportError("cannot write \(path)")
        }
    }

    /// Polls until `condition` holds or `timeout` seconds pass; returns whether it held.
    static func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(5_000)
        }
        return condition()
    }
}

/// A loopback port that refuses connections: bound (so nobody else takes it) but never listening.
final class RefusingPort {
    let port: Int
    private let fd: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard bound == 0, named == 0 else {
            close(fd)
            throw TestSupportError("cannot bind a loopback port")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// Parses `--json` output: one object per line.
enum JSONLines {
    /// Every line as a JSON object; a line that is not one is recorded as a test issue and skipped.
    static func parse(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { line in
            let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)", sourceLocation: sourceLocation)
            return object
        }
    }

    static func events(_ objects: [[String: Any]]) -> [String] {
        objects.map { ($0["event"] as? String) ?? "<no event key>" }
    }
}

/// Comparing byte arrays with short failure messages.
enum Bytes {
    /// nil when equal; otherwise the sizes and the first differing offset.
    static func difference(_ actual: [UInt8], _ expected: [UInt8]) -> String? {
        if actual == expected { return nil }
        let firstDifference =
            zip(actual, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            ?? min(actual.count, expected.count)
        return "\(actual.count) bytes where \(expected.count) were expected; first difference at byte \(firstDifference)"
    }
}
