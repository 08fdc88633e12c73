#ifndef JGMIRROR_CSYSTEM_H
#define JGMIRROR_CSYSTEM_H

/* Linux calls that glibc declares only under _GNU_SOURCE, which the Swift Glibc
 * module is not built with, or does not wrap at all. */

/* syncfs(2): writes back and flushes everything dirty on the filesystem holding fd. */
int jg_syncfs(int fd);

/* fstatfs(2)'s f_type: the magic number of the file system holding fd, or -1. */
long jg_filesystem_type(int fd);

/* sync_file_range(2) with SYNC_FILE_RANGE_WRITE over the whole file: starts writeback
 * of its dirty pages without waiting for it, so a later fdatasync has little left. */
int jg_start_writeback(int fd);

/* O_PATH: a descriptor that names a file or folder without opening it for I/O. */
extern const int jg_o_path;

/* O_TMPFILE: an unnamed file in a folder, which only linkat(2) gives a name. */
extern const int jg_o_tmpfile;

/* linkat(2) of the open file fd as name in dirfd, failing if name exists: with
 * AT_EMPTY_PATH where allowed (it needs CAP_DAC_READ_SEARCH), else through
 * /proc/self/fd. */
int jg_link_open_file(int fd, int dirfd, const char *name);

/* openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: opens
 * path below dirfd, failing (ELOOP, EXDEV) instead of following any symlink or leaving
 * dirfd. -1 with errno ENOSYS where the headers or the kernel lack openat2. */
int jg_openat2_beneath(int dirfd, const char *path, int flags, unsigned int mode);

/* renameat2(2) with RENAME_EXCHANGE: swaps the two names atomically (a folder and a
 * symlink, say). Fails with EINVAL where the file system cannot, ENOSYS on an old kernel. */
int jg_exchange(const char *a, const char *b);

/* malloc_trim(3) with no padding: gives the pages of freed memory back to the
 * system, wherever they are in the heap. Returns 1 when some were. */
int jg_release_free_memory(void);

/* mallopt(M_ARENA_MAX, 1): every thread allocates from one arena, so memory one
 * thread frees can serve another. Call before threads start. Leaves a limit the
 * environment sets (MALLOC_ARENA_MAX, or arena_max in GLIBC_TUNABLES) alone and
 * returns 0 then; 1 when set. */
int jg_use_one_malloc_arena(void);

#endif
