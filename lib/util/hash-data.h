/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash-data.h - XXH3 for checksums of values (the data path): include it
 * before anything that calls XXH3 in a file that hashes values.  With
 * libxxhash's x86 dispatcher (xxh_x86dispatch.h, in Debian's libxxhash-dev)
 * XXH3_64bits and XXH3_64bits_update go through its run-time choice of
 * AVX-512 / AVX2 / SSE2; the plain entry points are the library's
 * portable build (SSE2).  Same values either way.  callgrind, 4 KiB:
 * 4,555 instructions a hash plain, 1,438 dispatched (1,787 streaming),
 * against 413 for its memcpy.  Short keys keep util/hash.h (no indirect call).
 */
#ifndef MC_UTIL_HASH_DATA_H
#define MC_UTIL_HASH_DATA_H

#include <xxhash.h>
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#endif
#endif

#endif
