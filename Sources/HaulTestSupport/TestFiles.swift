import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An error raised by the test-support helpers, carrying a message a person can act on.
package struct TestSupportError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, including the path, command or system error involved.
    package let description: String

    /// Creates an error with the given message.
    package init(_ description: String) {
        self.description = description
    }

    /// An error for a failed system call, with `errno` rendered as text.
    static func posix(_ what: String, errno code: Int32 = errno) -> TestSupportError {
        TestSupportError("\(what): \(String(cString: strerror(code))) (errno \(code))")
    }
}

// MARK: - Temporary directories

/// A unique directory under the system temporary directory, removed when the object goes away.
///
/// A class rather than a `~Copyable` struct so it can be captured by test closures and shared;
/// its only state is the immutable `path`, so it is `Sendable`.
package final class TemporaryDirectory: Sendable {
    /// The absolute path of the directory.
    package let path: String

    /// Creates a fresh, empty directory whose name starts with `prefix`.
    package init(prefix: String = "haul-test") throws {
        path = try Self.makeUnique(prefix: prefix)
    }

    /// Creates a fresh, empty directory (mode 0700) under `$TMPDIR` or the system temporary directory and
    /// returns its path; the caller owns its removal.
    static func makeUnique(prefix: String) throws -> String {
        let base =
            ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? FileManager.default.temporaryDirectory.path
        var template = Array((base + "/" + prefix + "-XXXXXX").utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let start = buffer.baseAddress, let made = mkdtemp(start) else { return nil }
            return String(cString: made)
        }
        guard let created else {
            throw TestSupportError.posix("cannot create a temporary directory under \(base)")
        }
        return created
    }

    /// The path of an entry named `name` inside this directory (the entry is not created).
    package func file(_ name: String) -> String {
        path + "/" + name
    }

    /// Removes the directory and everything in it. Safe to call more than once.
    package func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    deinit {
        remove()
    }
}

// MARK: - Deterministic data

/// Deterministic test data and file checksums.
package enum TestData {
    /// Bytes written to disk per `write(2)` in ``writeFile(at:size:seed:)``; a multiple of 8 so that
    /// the chunked stream is identical to ``bytes(count:seed:)``.
    static let chunkSize = 8 << 20

    /// Deterministic pseudo-random bytes (xorshift64 filling `UInt64` words) of `count` bytes for a given seed.
    ///
    /// The same `(count, seed)` always gives the same bytes, and a longer count extends a shorter one.
    package static func bytes(count: Int, seed: UInt64 = 1) -> [UInt8] {
        var generator = WordGenerator(seed: seed)
        var result = [UInt8](repeating: 0, count: max(0, count))
        result.withUnsafeMutableBytes { generator.fill($0) }
        return result
    }

    /// Writes `size` deterministic bytes to `path` in 8 MiB chunks without holding the whole file in memory
    /// (for files of hundreds of MiB). The content equals `bytes(count: size, seed: seed)`.
    package static func writeFile(at path: String, size: Int, seed: UInt64 = 1) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestSupportError.posix("cannot create \(path)") }
        defer { close(fd) }
        var generator = WordGenerator(seed: seed)
        var chunk = [UInt8](repeating: 0, count: min(chunkSize, max(0, size)))
        var remaining = max(0, size)
        while remaining > 0 {
            let length = min(remaining, chunk.count)
            try chunk.withUnsafeMutableBytes { buffer in
                let part = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length])
                generator.fill(part)
                var offset = 0
                while offset < length {
                    guard let base = part.baseAddress else { return }
                    let written = write(fd, base + offset, length - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw TestSupportError.posix("cannot write \(path)")
                    }
                    offset += written
                }
            }
            remaining -= length
        }
    }

    /// SHA-256 hex of a file, computed by running /usr/bin/sha256sum (coreutils), for comparing big files.
    package static func sha256(ofFile path: String) throws -> String {
        let result = try ProcessRunner.run("/usr/bin/sha256sum", ["--", path], timeout: 300)
        guard result.status == 0,
            let digest = result.stdoutString.split(separator: " ").first.map(String.init),
            digest.count == 64
        else {
            throw TestSupportError(
                "sha256sum \(path) failed with status \(result.status): \(result.stderr)")
        }
        return digest.hasPrefix("\\") ? String(digest.dropFirst()) : digest
    }
}

/// xorshift64 seeded through splitmix64 (so seed 0 is fine), emitting little-endian words: the
/// same sequence for the same seed, on every run (test data, and generated test inputs through
/// `RandomNumberGenerator`).
package struct WordGenerator: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) {
        var z = seed &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        state = z == 0 ? 0x2545_F491_4F6C_DD1D : z
    }

    package mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    /// Fills `buffer` with the next words; a trailing partial word uses the low bytes of one more word.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        let words = buffer.count / 8
        for index in 0..<words {
            buffer.storeBytes(of: next().littleEndian, toByteOffset: index * 8, as: UInt64.self)
        }
        guard buffer.count % 8 != 0 else { return }
        var tail = next()
        for offset in (words * 8)..<buffer.count {
            buffer[offset] = UInt8(truncatingIfNeeded: tail)
            tail >>= 8
        }
    }
}

// MARK: - Running processes

/// The outcome of a process run by ``ProcessRunner``.
package struct ProcessResult: Sendable {
    /// The exit status, or 128 + signal number when the process was killed by a signal.
    package let status: Int32
    /// Everything the process wrote to standard output.
    package let stdout: [UInt8]
    /// Everything the process wrote to standard error, decoded as UTF-8 (invalid bytes replaced).
    package let stderr: String

    /// Standard output decoded as UTF-8 (invalid bytes replaced).
    package var stdoutString: String {
        String(decoding: stdout, as: UTF8.self)
    }
}

/// Files that catch a child process's standard output and error. Files, not pipes, so a child
/// that writes a lot cannot deadlock against a reader. Close the handles once the child started.
package struct CapturedOutput {
    package let stdoutPath: String
    package let stderrPath: String
    package let stdout: FileHandle
    package let stderr: FileHandle

    package init(in scratch: TemporaryDirectory) throws {
        stdoutPath = scratch.file("stdout")
        stderrPath = scratch.file("stderr")
        guard FileManager.default.createFile(atPath: stdoutPath, contents: nil),
            FileManager.default.createFile(atPath: stderrPath, contents: nil),
            let stdout = FileHandle(forWritingAtPath: stdoutPath),
            let stderr = FileHandle(forWritingAtPath: stderrPath)
        else {
            throw TestSupportError("cannot create output files in \(scratch.path)")
        }
        self.stdout = stdout
        self.stderr = stderr
    }

    /// Points the process's standard streams at the files (standard input at /dev/null).
    package func attach(to process: Process) {
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
    }

    package func close() {
        try? stdout.close()
        try? stderr.close()
    }
}

/// Runs a process to completion, capturing its output.
package enum ProcessRunner {
    /// Runs `executable` with `arguments` to completion, capturing stdout and stderr, with a timeout.
    ///
    /// Output goes to temporary files rather than pipes, so a process that writes a lot cannot
    /// deadlock against a reader. Standard input is `/dev/null`. If the process runs longer than
    /// `timeout` seconds it is killed by PID (SIGKILL) and an error is thrown.
    /// - Parameter environment: the complete environment; `nil` inherits this process's environment.
    package static func run(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]? = nil,
        timeout: Double = 60
    ) throws -> ProcessResult {
        let scratch = try TemporaryDirectory(prefix: "haul-process")
        let captured = try CapturedOutput(in: scratch)
        defer { captured.close() }
        let stdoutPath = captured.stdoutPath
        let stderrPath = captured.stderrPath

        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        captured.attach(to: process)
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        do {
            try process.run()
        } catch {
            throw TestSupportError("cannot start \(executable): \(error)")
        }

        if exited.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            exited.wait()
            let partial = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            throw TestSupportError(
                "\(executable) \(arguments.joined(separator: " ")) did not finish within \(timeout) s "
                    + "and was killed; stderr: \(partial)")
        }
        // terminationHandler may fire before Foundation records the status; this returns at once.
        process.waitUntilExit()

        let output = (try? Data(contentsOf: URL(fileURLWithPath: stdoutPath))) ?? Data()
        let errors = (try? Data(contentsOf: URL(fileURLWithPath: stderrPath))) ?? Data()
        let status =
            process.terminationReason == .uncaughtSignal
            ? 128 + process.terminationStatus : process.terminationStatus
        return ProcessResult(
            status: status,
            stdout: [UInt8](output),
            stderr: String(decoding: errors, as: UTF8.self))
    }
}
