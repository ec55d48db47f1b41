#define _GNU_SOURCE
#include "haul_system.h"

#include <fcntl.h>

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
