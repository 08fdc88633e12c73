#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#endif

#include "CSystem.h"

int jg_syncfs(int fd) { return syncfs(fd); }

long jg_filesystem_type(int fd) {
    struct statfs info;
    return fstatfs(fd, &info) == 0 ? (long)info.f_type : -1;
}

int jg_start_writeback(int fd) { return sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE); }

const int jg_o_path = O_PATH;

const int jg_o_tmpfile = O_TMPFILE;

int jg_link_open_file(int fd, int dirfd, const char *name) {
    if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0) return 0;
    if (errno != ENOENT && errno != EPERM) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, path, dirfd, name, AT_SYMLINK_FOLLOW);
}

int jg_openat2_beneath(int dirfd, const char *path, int flags, unsigned int mode) {
#if defined(SYS_openat2) && defined(RESOLVE_BENEATH)
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)(unsigned int)flags;
    /* openat2 refuses a mode without O_CREAT or O_TMPFILE. */
    how.mode = ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
#else
    (void)dirfd; (void)path; (void)flags; (void)mode;
    errno = ENOSYS;
    return -1;
#endif
}

int jg_release_free_memory(void) { return malloc_trim(0); }

int jg_use_one_malloc_arena(void) {
    const char *tunables = getenv("GLIBC_TUNABLES");
    if (getenv("MALLOC_ARENA_MAX") || (tunables && strstr(tunables, "arena_max"))) return 0;
    return mallopt(M_ARENA_MAX, 1);
}

int jg_exchange(const char *a, const char *b) {
#if defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 1u << 1 /* RENAME_EXCHANGE */);
#else
    (void)a; (void)b;
    errno = ENOSYS;
    return -1;
#endif
}
