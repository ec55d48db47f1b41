import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a power cut leaves of a process's SQLite write-ahead logs: only what was synced. A crash
/// by `kill -9` loses nothing the process wrote (the page cache outlives it); a power cut loses
/// every write not yet synced. For the queue's database that is the tail of its `-wal` file after
/// the last `fsync`/`fdatasync` of it or `syncfs` of its file system.
///
/// A small library preloaded into the process under test (`LD_PRELOAD`, compiled here with the
/// system's C compiler on first use) notes the length of every `-wal` file at each sync in a
/// ledger; after the process died, `apply` cuts each log back to its last synced length and
/// removes its `-shm` index (SQLite rebuilds it from the log, as after a reboot).
package struct PowerCut {
    /// The ledger this run's syncs are noted in.
    package let ledger: String

    /// A power-cut model noting syncs in `directory`.
    package init(in directory: TemporaryDirectory) {
        ledger = directory.file("sync-ledger")
    }

    /// The environment that makes a process note its syncs: add it to the process's environment.
    package func environment() throws -> [String: String] {
        ["LD_PRELOAD": try Self.library(), "HAUL_SYNC_LEDGER": ledger]
    }

    /// Cuts every write-ahead log under `directory` back to its last synced length (to nothing
    /// when it was never synced) and removes its `-shm` index. Returns what was cut, per log.
    @discardableResult
    package func apply(under directory: String) throws -> [String: Int] {
        let synced = lastSynced()
        var cut: [String: Int] = [:]
        let names = (try? FileManager.default.subpathsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasSuffix("-wal") {
            let path = (directory as NSString).appendingPathComponent(name)
            let real = (path as NSString).resolvingSymlinksInPath
            var status = stat()
            guard stat(path, &status) == 0 else { continue }
            let keep = min(Int(status.st_size), synced[real] ?? synced[path] ?? 0)
            guard truncate(path, off_t(keep)) == 0 else { throw TestSupportError("cannot cut \(path): errno \(errno)") }
            cut[path] = Int(status.st_size) - keep
            unlink(String(path.dropLast(4)) + "-shm")
        }
        return cut
    }

    /// The last length noted for each log (a log restarted from its start is noted anew).
    func lastSynced() -> [String: Int] {
        guard let text = try? String(contentsOfFile: ledger, encoding: .utf8) else { return [:] }
        var lengths: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            guard let space = line.lastIndex(of: " "), let length = Int(line[line.index(after: space)...]) else { continue }
            let path = String(line[..<space])
            lengths[path] = length
        }
        return lengths
    }

    private static let built = LockedBuild()

    /// The preload library, compiled once per test process.
    static func library() throws -> String {
        try built.path {
            let directory = NSTemporaryDirectory() + "haul-power-cut-\(getpid())"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let source = directory + "/sync_ledger.c"
            let library = directory + "/libsyncledger.so"
            try Self.source.write(toFile: source, atomically: true, encoding: .utf8)
            let compiled = try ProcessRunner.run("/usr/bin/env", ["cc", "-shared", "-fPIC", "-O2", "-o", library, source, "-ldl"])
            guard compiled.status == 0 else { throw TestSupportError("cannot compile the sync ledger: \(compiled.stderr)") }
            return library
        }
    }

    /// Notes `path length` in the ledger for every `-wal` file the process has open, at each sync
    /// that covers it: `fsync`/`fdatasync` of it, `syncfs` of any file (one file system is assumed),
    /// `sync`.
    static let source = #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <fcntl.h>
        #include <limits.h>
        #include <pthread.h>
        #include <stdarg.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/stat.h>
        #include <unistd.h>

        #define MAX_FD 4096
        static char *wal_paths[MAX_FD];
        static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

        static void note_open(int fd) {
            if (fd < 0 || fd >= MAX_FD) return;
            char link[64], path[PATH_MAX];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(link, path, sizeof path - 1);
            pthread_mutex_lock(&lock);
            free(wal_paths[fd]);
            wal_paths[fd] = NULL;
            if (n > 4) {
                path[n] = 0;
                if (strcmp(path + n - 4, "-wal") == 0) wal_paths[fd] = strdup(path);
            }
            pthread_mutex_unlock(&lock);
        }

        static void note_length(const char *path) {
            const char *ledger = getenv("HAUL_SYNC_LEDGER");
            struct stat st;
            if (!ledger || stat(path, &st) != 0) return;
            static int (*real_open)(const char *, int, ...);
            if (!real_open) real_open = dlsym(RTLD_NEXT, "open");
            int out = real_open(ledger, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            if (out < 0) return;
            char line[PATH_MAX + 32];
            int len = snprintf(line, sizeof line, "%s %lld\n", path, (long long)st.st_size);
            if (write(out, line, len) < 0) {}
            close(out);
        }

        static void note_fd(int fd) {
            if (fd < 0 || fd >= MAX_FD) return;
            pthread_mutex_lock(&lock);
            char *path = wal_paths[fd] ? strdup(wal_paths[fd]) : NULL;
            pthread_mutex_unlock(&lock);
            if (path) { note_length(path); free(path); }
        }

        static void note_all(void) {
            for (int fd = 0; fd < MAX_FD; fd++) note_fd(fd);
        }

        #define WRAP_OPEN(name, ...) \
            int name(const char *path, int flags, ...) { \
                static int (*real)(const char *, int, ...); \
                if (!real) real = dlsym(RTLD_NEXT, #name); \
                mode_t mode = 0; \
                if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, int); va_end(ap); } \
                int fd = real(path, flags, mode); \
                note_open(fd); \
                return fd; \
            }
        WRAP_OPEN(open)
        WRAP_OPEN(open64)

        #define WRAP_OPENAT(name) \
            int name(int dir, const char *path, int flags, ...) { \
                static int (*real)(int, const char *, int, ...); \
                if (!real) real = dlsym(RTLD_NEXT, #name); \
                mode_t mode = 0; \
                if (flags & (O_CREAT | O_TMPFILE)) { va_list ap; va_start(ap, flags); mode = va_arg(ap, int); va_end(ap); } \
                int fd = real(dir, path, flags, mode); \
                note_open(fd); \
                return fd; \
            }
        WRAP_OPENAT(openat)
        WRAP_OPENAT(openat64)

        int fsync(int fd) {
            static int (*real)(int);
            if (!real) real = dlsym(RTLD_NEXT, "fsync");
            int result = real(fd);
            if (result == 0) note_fd(fd);
            return result;
        }

        int fdatasync(int fd) {
            static int (*real)(int);
            if (!real) real = dlsym(RTLD_NEXT, "fdatasync");
            int result = real(fd);
            if (result == 0) note_fd(fd);
            return result;
        }

        int syncfs(int fd) {
            static int (*real)(int);
            if (!real) real = dlsym(RTLD_NEXT, "syncfs");
            int result = real(fd);
            if (result == 0) note_all();
            return result;
        }

        void sync(void) {
            static void (*real)(void);
            if (!real) real = dlsym(RTLD_NEXT, "sync");
            real();
            note_all();
        }
        """#
}

/// A path made once, under a lock.
final class LockedBuild: @unchecked Sendable {
    // @unchecked: `made` is read and written only under `lock`.
    private let lock = NSLock()
    private var made: String?

    func path(_ make: () throws -> String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        if let made { return made }
        let path = try make()
        made = path
        return path
    }
}
