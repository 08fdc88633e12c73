#define _GNU_SOURCE
#include <unistd.h>

#include "CSystem.h"

int jg_syncfs(int fd) { return syncfs(fd); }
