/*
 * ty_rand.c - random bytes and strings (ty_rand.h).
 *
 * Invariants: every byte comes from getrandom(2) without GRND_NONBLOCK (it blocks only before
 * the kernel's pool is first initialised); a draw that cannot be completed fails, never falls
 * back to a weaker source.
 */
#include "ty_rand.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "ty_err.h"

int ty_rand_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -TY_EINTERNAL;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

int ty_rand_string(char *out, size_t n, const char *alphabet)
{
    size_t alen = alphabet ? strlen(alphabet) : 0;
    unsigned char b[64];
    size_t i = 0, limit;

    if (alen == 0 || alen > 256)
        return -TY_EINTERNAL;
    limit = 256 - 256 % alen; /* bytes at or above it would bias the first characters */
    while (i < n) {
        if (ty_rand_bytes(b, sizeof(b)) < 0)
            return -TY_EINTERNAL;
        for (size_t j = 0; j < sizeof(b) && i < n; j++) {
            if (b[j] < limit)
                out[i++] = alphabet[b[j] % alen];
        }
    }
    out[n] = '\0';
    memset(b, 0, sizeof(b));
    return 0;
}

int ty_rand_hex(char *out, size_t n)
{
    return ty_rand_string(out, n, "0123456789abcdef");
}
