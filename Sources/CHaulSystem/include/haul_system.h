#ifndef HAUL_SYSTEM_H
#define HAUL_SYSTEM_H

#include <stdint.h>

/* Asks the kernel to start writing a byte range of a file to disk without waiting for it
   (sync_file_range with SYNC_FILE_RANGE_WRITE on Linux; nothing elsewhere). Returns 0 or -1. */
int haul_start_writeback(int fd, int64_t offset, int64_t length);

#endif
