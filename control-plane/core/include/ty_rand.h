/*
 * ty_rand.h - random bytes and random strings from the kernel's CSPRNG (getrandom(2)): access
 * keys, secrets, session tokens, resource ids, request ids.
 *
 * Owns: the draw and the alphabet mapping (rejection sampling: no modulo bias). Thread-safe.
 */
#ifndef TY_CORE_TY_RAND_H
#define TY_CORE_TY_RAND_H

#include <stddef.h>

/* Fills buf[0..n) with random bytes. 0, or -TY_EINTERNAL when the kernel gives none. */
int ty_rand_bytes(void *buf, size_t n);

/*
 * n characters drawn uniformly from alphabet (1 to 256 distinct characters), then a NUL.
 * OUT: out (size n + 1). 0 or -TY_EINTERNAL.
 */
int ty_rand_string(char *out, size_t n, const char *alphabet);

/* n lower-case hex digits, then a NUL. OUT: out (size n + 1). 0 or -TY_EINTERNAL. */
int ty_rand_hex(char *out, size_t n);

#endif
