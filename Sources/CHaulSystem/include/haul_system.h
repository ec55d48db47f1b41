#ifndef HAUL_SYSTEM_H
#define HAUL_SYSTEM_H

#include <stdint.h>

/* Asks the kernel to start writing a byte range of a file to disk without waiting for it
   (sync_file_range with SYNC_FILE_RANGE_WRITE on Linux; nothing elsewhere). Returns 0 or -1. */
int haul_start_writeback(int fd, int64_t offset, int64_t length);

/* Reserves a file's blocks with fallocate(2) where the file system supports it. Unlike
   posix_fallocate, never falls back to writing zeros: returns -1 (errno EOPNOTSUPP) instead. */
int haul_preallocate(int fd, int64_t length);

/* Renames `from` to `to` only if nothing exists at `to`: renameat2(RENAME_NOREPLACE) where the
   kernel and file system support it, else link(2) + unlink(2) (which also never replaces).
   Returns 0, or -1 with errno (EEXIST when something is at `to`). */
int haul_rename_noreplace(const char *from, const char *to);

#endif
