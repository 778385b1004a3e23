/*
 * ty_codec.h - hex digits and percent-decoding, the one copy every protocol parser uses
 * (SigV4 canonical requests, S3 keys, IAM/STS query forms, console query strings).
 *
 * Owns: the decoding rules only; no allocation, no state. Thread-safe.
 */
#ifndef TY_CORE_TY_CODEC_H
#define TY_CORE_TY_CODEC_H

#include <stddef.h>

/* The value of hex digit c (0-9, a-f, A-F), or -1. */
int ty_hex_value(int c);

/* Writes in[0..n) as 2n lower-case hex digits, then a NUL. OUT: out (size 2n + 1). */
void ty_hex_encode(const void *in, size_t n, char *out);

/* Whether s[0..2] is "%XX" with two hex digits (s must have at least 3 readable bytes). */
int ty_pct_escape_ok(const char *s);

#define TY_PCT_PLUS_SPACE 1 /* '+' decodes to ' ' (application/x-www-form-urlencoded) */
#define TY_PCT_NO_NUL     2 /* "%00" is refused */
#define TY_PCT_KEEP_BAD   4 /* a '%' without two hex digits after it stays as it is */
#define TY_PCT_CUT        8 /* a result longer than out is cut (still NUL-terminated) */

/*
 * Percent-decodes s[0..n) into out (size cap, NUL-terminated). flags: TY_PCT_*. OUT: *outlen
 * (may be NULL), the decoded length. Returns 0, -TY_EINVAL for a bad or truncated escape
 * (unless TY_PCT_KEEP_BAD) or %00 with TY_PCT_NO_NUL, -TY_ETOOBIG when out is too small
 * (unless TY_PCT_CUT; cap 0 always). out may alias s (decoding never grows).
 */
int ty_pct_decode(const char *s, size_t n, int flags, char *out, size_t cap, size_t *outlen);

#endif
