/*
 * ty_codec.c - hex digits and percent-decoding (ty_codec.h).
 *
 * Invariants: never writes past out[cap - 1]; the output is NUL-terminated on success.
 */
#include "ty_codec.h"

#include "ty_err.h"

int ty_hex_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void ty_hex_encode(const void *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *p = in;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int ty_pct_escape_ok(const char *s)
{
    return s[0] == '%' && ty_hex_value((unsigned char)s[1]) >= 0 &&
           ty_hex_value((unsigned char)s[2]) >= 0;
}

int ty_pct_decode(const char *s, size_t n, int flags, char *out, size_t cap, size_t *outlen)
{
    size_t j = 0;

    if (cap == 0)
        return -TY_ETOOBIG;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            int h = i + 2 < n ? ty_hex_value((unsigned char)s[i + 1]) : -1;
            int l = i + 2 < n ? ty_hex_value((unsigned char)s[i + 2]) : -1;
            if ((flags & TY_PCT_NO_NUL) && h == 0 && l == 0)
                return -TY_EINVAL;
            if (h >= 0 && l >= 0) {
                c = h * 16 + l;
                i += 2;
            } else if (!(flags & TY_PCT_KEEP_BAD)) {
                return -TY_EINVAL;
            }
        } else if (c == '+' && (flags & TY_PCT_PLUS_SPACE)) {
            c = ' ';
        }
        if (j + 1 >= cap) {
            if (flags & TY_PCT_CUT)
                break;
            return -TY_ETOOBIG;
        }
        out[j++] = (char)c;
    }
    out[j] = '\0';
    if (outlen)
        *outlen = j;
    return 0;
}
