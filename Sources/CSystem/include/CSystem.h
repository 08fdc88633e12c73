#ifndef JGMIRROR_CSYSTEM_H
#define JGMIRROR_CSYSTEM_H

/* Linux calls that glibc declares only under _GNU_SOURCE, which the Swift Glibc
 * module is not built with. */

/* syncfs(2): writes back and flushes everything dirty on the filesystem holding fd. */
int jg_syncfs(int fd);

#endif
