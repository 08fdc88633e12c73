#ifndef JGMIRROR_CCRYPTO_SHIM_H
#define JGMIRROR_CCRYPTO_SHIM_H

#include <openssl/evp.h>

/* EVP_MAX_MD_SIZE is a macro; SHA-256 digests are 32 bytes. */
static inline int jg_sha256_length(void) { return 32; }

#endif
