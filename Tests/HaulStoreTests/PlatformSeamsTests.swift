// The Linux bodies of the seams; the Apple ones are compiled nowhere here.
#if os(Linux)
    import CHaulSystem
    import Foundation
    import HaulTestSupport
    import Testing

    @testable import HaulStore

    /// The Linux side of every platform seam, on real files: the one that runs here. (The Apple side
    /// is written against Darwin's documentation and compiled nowhere here; see the README.)
    @Suite("Platform seams (Linux)")
    struct PlatformSeamsTests {
        /// A descriptor no file has: every call on it fails with EBADF. (A closed one could be
        /// reused by another thread's open.)
        static let badDescriptor: Int32 = -1

        /// A new file with `bytes` written to it, open for reading and writing.
        static func openFile(in directory: TemporaryDirectory, _ name: String, bytes: [UInt8] = []) throws -> Int32 {
            let fd = open(directory.file(name), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            try #require(fd >= 0)
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            #expect(written == bytes.count)
            return fd
        }

        @Test("GIVEN the running kernel WHEN the boot id is read THEN it is the UUID in /proc, the same at every read")
        func bootIDIsTheKernelsUUID() throws {
            let id = try #require(PlatformSeams.bootID(), "Linux always has /proc/sys/kernel/random/boot_id")
            #expect(UUID(uuidString: id) != nil, "not a UUID: \(id)")
            let file = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            #expect(id == file.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(PlatformSeams.bootID() == id)
            #expect(BootID.current == id)
        }

        @Test("GIVEN bytes written to a file WHEN its data and then the whole file are synced THEN both succeed and the bytes are there")
        func syncsSucceedOnAFile() throws {
            let directory = try TemporaryDirectory()
            let bytes = TestData.bytes(count: 100_000, seed: 7)
            let fd = try Self.openFile(in: directory, "synced", bytes: bytes)
            defer { close(fd) }
            try PlatformSeams.syncData(fd, path: directory.file("synced"))
            try PlatformSeams.syncFile(fd, path: directory.file("synced"))
            #expect(FileManager.default.contents(atPath: directory.file("synced")) == Data(bytes))
        }

        @Test("GIVEN a directory WHEN it is synced after a rename THEN it succeeds")
        func syncFileSucceedsOnADirectory() throws {
            let directory = try TemporaryDirectory()
            let fd = open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            #expect(throws: Never.self) { try PlatformSeams.syncFile(fd, path: directory.path) }
        }

        @Test(
            "GIVEN a descriptor of no file WHEN it is synced THEN each sync throws a StoreError with EBADF that names the file",
            arguments: ["data", "file"])
        func syncOfABadDescriptorIsATypedError(which: String) {
            let error = #expect(throws: StoreError.self) {
                if which == "data" {
                    try PlatformSeams.syncData(Self.badDescriptor, path: "/the/partial")
                } else {
                    try PlatformSeams.syncFile(Self.badDescriptor, path: "/the/partial")
                }
            }
            #expect(error?.kind == .io)
            #expect(error?.code == EBADF)
            #expect(error?.message.hasPrefix("cannot sync /the/partial:") == true, "\(error?.message ?? "")")
        }

        @Test("GIVEN an empty file WHEN 8 MiB are preallocated THEN its blocks are reserved, no byte is written and it reads as zeros")
        func preallocationReservesBlocksWithoutWriting() throws {
            let directory = try TemporaryDirectory()
            let fd = try Self.openFile(in: directory, "reserved")
            defer { close(fd) }
            let length: Int64 = 8 << 20
            do {
                try PlatformSeams.preallocate(fd, length: length, path: directory.file("reserved"))
            } catch {
                // A file system without fallocate says so with a typed error, and nothing else happens.
                #expect(error.code == EOPNOTSUPP, "\(error)")
                return
            }
            var info = stat()
            #expect(fstat(fd, &info) == 0)
            #expect(Int64(info.st_blocks) * 512 >= length, "only \(info.st_blocks) blocks reserved")
            // fallocate (mode 0) also extends the size on Linux; the blocks are unwritten extents.
            #expect(Int64(info.st_size) == length)
            var head = [UInt8](repeating: 0xFF, count: 4096)
            #expect(head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) } == 4096)
            #expect(head.allSatisfy { $0 == 0 })
        }

        @Test("GIVEN a file opened read-only WHEN it is preallocated THEN a StoreError with EBADF names it")
        func preallocationOfAReadOnlyFileIsATypedError() throws {
            let directory = try TemporaryDirectory()
            close(try Self.openFile(in: directory, "read-only"))
            let fd = open(directory.file("read-only"), O_RDONLY | O_CLOEXEC)
            try #require(fd >= 0)
            defer { close(fd) }
            let error = #expect(throws: StoreError.self) {
                try PlatformSeams.preallocate(fd, length: 1 << 20, path: directory.file("read-only"))
            }
            #expect(error?.kind == .io)
            #expect(error?.code == EBADF)
            #expect(error?.message.contains(directory.file("read-only")) == true)
        }

        @Test("GIVEN a written file WHEN writeback is started on a range THEN the kernel accepts it, and refuses a bad descriptor")
        func writebackHintIsAcceptedOnAFile() throws {
            let directory = try TemporaryDirectory()
            let fd = try Self.openFile(in: directory, "written", bytes: TestData.bytes(count: 1 << 20))
            defer { close(fd) }
            #expect(haul_start_writeback(fd, 0, 1 << 20) == 0)
            PlatformSeams.startWriteback(fd, offset: 0, length: 1 << 20)
            #expect(haul_start_writeback(Self.badDescriptor, 0, 4096) == -1)
            #expect(errno == EBADF)
        }

        @Test("GIVEN a free name and a taken one WHEN a file is renamed without replacing THEN it moves to the free one and never over the taken one")
        func renameNeverReplaces() throws {
            let directory = try TemporaryDirectory()
            close(try Self.openFile(in: directory, "from", bytes: [1, 2, 3]))
            close(try Self.openFile(in: directory, "taken", bytes: [9]))

            #expect(haul_rename_noreplace(directory.file("from"), directory.file("taken")) == -1)
            #expect(errno == EEXIST)
            #expect(FileManager.default.contents(atPath: directory.file("taken")) == Data([9]))

            #expect(haul_rename_noreplace(directory.file("from"), directory.file("free")) == 0)
            #expect(FileManager.default.contents(atPath: directory.file("free")) == Data([1, 2, 3]))
            #expect(!FileManager.default.fileExists(atPath: directory.file("from")))
        }

        @Test("GIVEN this process WHEN its umask is read from /proc THEN it is what a file created with 0777 loses (the Apple way to read it)")
        func umaskFromProcMatchesWhatANewFileLoses() throws {
            let directory = try TemporaryDirectory()
            let mask = try #require(PlatformSeams.processUmask(), "/proc/self/status has a Umask line since Linux 4.7")
            let fd = open(directory.file("probe"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o777)
            try #require(fd >= 0)
            defer { close(fd) }
            var info = stat()
            #expect(fstat(fd, &info) == 0)
            #expect(mask == ~info.st_mode & 0o777)
            #expect(PartialFile.defaultFileMode == 0o666 & ~mask)
        }
    }
#endif
