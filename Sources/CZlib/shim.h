#ifndef JGMIRROR_CZLIB_SHIM_H
#define JGMIRROR_CZLIB_SHIM_H

#include <zlib.h>

/* inflateInit2 is a macro (it passes ZLIB_VERSION and sizeof(z_stream)), which Swift
 * cannot call. 16 + MAX_WBITS: a gzip stream only, with its header and CRC-32 checked. */
static inline int jg_inflate_init_gzip(z_stream *stream) { return inflateInit2(stream, 16 + MAX_WBITS); }

#endif
