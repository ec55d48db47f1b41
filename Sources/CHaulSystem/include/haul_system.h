#ifndef HAUL_SYSTEM_H
#define HAUL_SYSTEM_H

#include <stddef.h>
#include <stdint.h>

/* The platform calls Swift cannot make directly, one Linux body and one Apple body each
   (haul_system.c). Each returns 0, or -1 with errno. */

/* Asks the kernel to start writing a byte range of a file to disk without waiting for it:
   sync_file_range(SYNC_FILE_RANGE_WRITE) on Linux; Apple platforms have no such call (returns 0). */
int haul_start_writeback(int fd, int64_t offset, int64_t length);

/* Reserves a file's blocks up to `length` where the file system supports it: fallocate(2) on Linux
   (which also extends the size), fcntl(F_PREALLOCATE) on Apple platforms (which does not). Unlike
   posix_fallocate, never falls back to writing zeros: returns -1 (errno EOPNOTSUPP, or ENOSPC when
   the space is not there) instead. */
int haul_preallocate(int fd, int64_t length);

/* Makes everything written to the file system that holds `fd` durable, in one call: syncfs(2) on
   Linux (which reports a writeback error of any file there since `fd` was opened, from 5.8 on);
   Apple platforms have none (returns -1, errno ENOTSUP: the caller syncs each file). */
int haul_sync_file_system(int fd);

/* Renames `from` to `to` only if nothing exists at `to`: renameat2(RENAME_NOREPLACE) on Linux,
   renamex_np(RENAME_EXCL) on Apple platforms, where the kernel and file system support it, else
   link(2) + unlink(2) (which also never replaces). errno is EEXIST when something is at `to`. */
int haul_rename_noreplace(const char *from, const char *to);

/* Opens the directory at `path` (symlinks followed) only to look at and remove names in it with
   fstatat(2) and unlinkat(2), which need search permission on it and no more: O_PATH on Linux, so
   a directory its user may write and search but not list (0300) opens; O_SEARCH where Apple
   platforms have it, else O_RDONLY. Close-on-exec. Returns the descriptor, or -1 with errno. */
int haul_open_directory_for_names(const char *path);

/* Accepts a connection on `listener` as a non-blocking, close-on-exec socket: accept4(2) on
   Linux (atomic: a process spawned meanwhile never inherits it), accept(2) + fcntl(2) on Apple
   platforms (which also set SO_NOSIGPIPE). Returns the descriptor, or -1 with errno. */
int haul_accept_nonblocking(int listener);

/* A pipe whose two ends are non-blocking and close-on-exec: pipe2(2) on Linux, pipe(2) +
   fcntl(2) on Apple platforms. */
int haul_pipe_nonblocking(int ends[2]);

/* Sets the extended attribute `name` of the file open as `fd` to `size` bytes of `value`, replacing
   it: fsetxattr(2) on Linux and on Apple platforms (whose form takes a position and options).
   -1 with errno ENOTSUP (or EOPNOTSUPP) where the file system keeps no such attributes. */
int haul_set_file_attribute(int fd, const char *name, const void *value, size_t size);

/* Reads the extended attribute `name` of the file open as `fd` into `value` (at most `size` bytes):
   fgetxattr(2). Returns its length, or -1 with errno (ENODATA on Linux, ENOATTR on Apple platforms,
   when the file has none; ERANGE when it is longer than `size`). */
long haul_get_file_attribute(int fd, const char *name, void *value, size_t size);

/* Removes the extended attribute `name` of the file open as `fd`: 0, or -1 with errno (ENODATA,
   or ENOATTR on Apple platforms, when there was none). */
int haul_remove_file_attribute(int fd, const char *name);

#endif
