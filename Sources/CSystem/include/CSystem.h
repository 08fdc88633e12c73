#ifndef JGMIRROR_CSYSTEM_H
#define JGMIRROR_CSYSTEM_H

/* Linux calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not set. */

/* Flushes the whole file system holding fd: one journal commit for a batch of files. */
int jg_syncfs(int fd);

#endif
