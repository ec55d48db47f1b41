/* The C half of Haul's platform seams: each function has a Linux body and an Apple body, and
   nothing else here differs between them. The Swift half is Sources/HaulStore/PlatformSeams.swift;
   the digests' Apple body is include/haul_digest.h. The Apple bodies are written against Darwin's
   manual pages (fcntl(2), rename(2)) but no machine that tests Haul compiles them. */
#define _GNU_SOURCE
#include "haul_system.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

/* Never replaces: link(2) fails with EEXIST when `to` exists. Used where the platform's own
   no-replace rename is missing or the file system refuses it. */
static int haul_rename_by_link(const char *from, const char *to) {
    if (link(from, to) != 0) return -1;
    if (unlink(from) != 0) {
        int saved = errno;
        unlink(to);
        errno = saved;
        return -1;
    }
    return 0;
}

int haul_rename_noreplace(const char *from, const char *to) {
#if defined(__linux__)
#if defined(SYS_renameat2)
    /* RENAME_NOREPLACE is 1; called through syscall(2) so older C libraries work too. */
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
#endif
    return haul_rename_by_link(from, to);
#elif defined(__APPLE__)
    /* RENAME_EXCL: EEXIST if `to` exists; ENOTSUP where the file system cannot (rename(2)). */
    if (renamex_np(from, to, RENAME_EXCL) == 0) return 0;
    if (errno != ENOTSUP && errno != EINVAL) return -1;
    return haul_rename_by_link(from, to);
#else
    return haul_rename_by_link(from, to);
#endif
}

int haul_preallocate(int fd, int64_t length) {
#if defined(__linux__)
    return fallocate(fd, 0, 0, (off_t)length);
#elif defined(__APPLE__)
    /* F_PREALLOCATE reserves blocks past the physical end of file (F_PEOFPOSMODE, offset 0) without
       writing them or changing the size: contiguous if the volume can, else anywhere; both
       all-or-nothing (F_ALLOCATEALL). Callers write segments with pwrite at their offsets and do
       not rely on the size, which fallocate on Linux does change. */
    struct stat info;
    if (fstat(fd, &info) != 0) return -1;
    if (info.st_size >= length) return 0;
    fstore_t store = {
        .fst_flags = F_ALLOCATECONTIG | F_ALLOCATEALL,
        .fst_posmode = F_PEOFPOSMODE,
        .fst_offset = 0,
        .fst_length = (off_t)(length - info.st_size),
    };
    if (fcntl(fd, F_PREALLOCATE, &store) != -1) return 0;
    store.fst_flags = F_ALLOCATEALL;
    return fcntl(fd, F_PREALLOCATE, &store) != -1 ? 0 : -1;
#else
    (void)fd;
    (void)length;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int haul_sync_file_system(int fd) {
#if defined(__linux__)
    return syncfs(fd);
#else
    (void)fd;
    errno = ENOTSUP;
    return -1;
#endif
}

int haul_start_writeback(int fd, int64_t offset, int64_t length) {
#if defined(__linux__)
    return sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
#else
    /* Apple platforms have no call that starts writeback without waiting: nothing to do. */
    (void)fd;
    (void)offset;
    (void)length;
    return 0;
#endif
}

#if defined(__linux__)
#include <sys/socket.h>

int haul_accept_nonblocking(int listener) { return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

int haul_pipe_nonblocking(int ends[2]) { return pipe2(ends, O_NONBLOCK | O_CLOEXEC); }
#else
#include <sys/socket.h>

static int haul_make_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return -1;
    return 0;
}

int haul_accept_nonblocking(int listener) {
    int fd = accept(listener, NULL, NULL);
    if (fd < 0) return -1;
    int one = 1;
    if (haul_make_nonblocking(fd) != 0 || setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

int haul_pipe_nonblocking(int ends[2]) {
    if (pipe(ends) != 0) return -1;
    if (haul_make_nonblocking(ends[0]) != 0 || haul_make_nonblocking(ends[1]) != 0) {
        int saved = errno;
        close(ends[0]);
        close(ends[1]);
        errno = saved;
        return -1;
    }
    return 0;
}
#endif

int haul_set_file_attribute(int fd, const char *name, const void *value, size_t size) {
#if defined(__APPLE__)
    return fsetxattr(fd, name, value, size, 0, 0);
#else
    return fsetxattr(fd, name, value, size, 0);
#endif
}

long haul_get_file_attribute(int fd, const char *name, void *value, size_t size) {
#if defined(__APPLE__)
    return (long)fgetxattr(fd, name, value, size, 0, 0);
#else
    return (long)fgetxattr(fd, name, value, size);
#endif
}

int haul_remove_file_attribute(int fd, const char *name) {
#if defined(__APPLE__)
    return fremovexattr(fd, name, 0);
#else
    return fremovexattr(fd, name);
#endif
}

int haul_open_directory_for_names(const char *path) {
#if defined(__linux__)
    return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
#elif defined(O_SEARCH)
    return open(path, O_SEARCH | O_DIRECTORY | O_CLOEXEC);
#else
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
#endif
}
