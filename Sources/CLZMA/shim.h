#ifndef JGMIRROR_CLZMA_SHIM_H
#define JGMIRROR_CLZMA_SHIM_H

#include <stdint.h>
#include <lzma.h>

/* LZMA_CONCATENATED expands to UINT32_C(0x08), which Swift does not import. A .xz file
 * may hold several streams one after the other, as xz(1) reads them. */
static inline uint32_t jg_lzma_concatenated(void) { return LZMA_CONCATENATED; }

#endif
