#define _GNU_SOURCE
#include "haul_system.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

int haul_rename_noreplace(const char *from, const char *to) {
#if defined(__linux__) && defined(SYS_renameat2)
    /* RENAME_NOREPLACE is 1; called through syscall(2) so older C libraries work too. */
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
#endif
    if (link(from, to) != 0) return -1;
    if (unlink(from) != 0) {
        int saved = errno;
        unlink(to);
        errno = saved;
        return -1;
    }
    return 0;
}

int haul_preallocate(int fd, int64_t length) {
#ifdef __linux__
    return fallocate(fd, 0, 0, (off_t)length);
#else
    (void)fd; (void)length;
    return -1;
#endif
}

int haul_start_writeback(int fd, int64_t offset, int64_t length) {
#ifdef __linux__
    return sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}
