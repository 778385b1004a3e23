/*
 * ty_net.c - IP addresses and CIDR blocks as text (ty_net.h).
 */
#include "ty_net.h"

#include "ty_err.h"

#include <arpa/inet.h>
#include <string.h>

int ty_cidr_parse(const char *s, int allow_prefix, struct ty_cidr *out)
{
    char tmp[64];
    const char *slash = s && allow_prefix ? strchr(s, '/') : NULL;
    size_t n = s ? (slash ? (size_t)(slash - s) : strlen(s)) : 0;

    if (n == 0 || n >= sizeof(tmp))
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, tmp, out->a) == 1) {
        out->bits = 32;
    } else if (inet_pton(AF_INET6, tmp, out->a) == 1) {
        out->v6 = 1;
        out->bits = 128;
    } else {
        return 0;
    }
    if (slash) {
        const char *d = slash + 1;
        int b = 0;
        size_t k = strlen(d);
        if (k == 0 || k > 3)
            return 0;
        for (size_t i = 0; i < k; i++) {
            if (d[i] < '0' || d[i] > '9')
                return 0;
            b = b * 10 + (d[i] - '0');
        }
        if (b > out->bits)
            return 0;
        out->bits = b;
    }
    return 1;
}

int ty_cidr_has(const struct ty_cidr *net, const struct ty_cidr *ip)
{
    int bits = net->bits;
    if (net->v6 != ip->v6)
        return 0;
    for (int i = 0; bits > 0; i++, bits -= 8) {
        unsigned mask = bits >= 8 ? 0xFFu : (0xFFu << (8 - bits)) & 0xFFu;
        if ((net->a[i] & mask) != (ip->a[i] & mask))
            return 0;
    }
    return 1;
}

int ty_cidr_list(const char *s, struct ty_cidr *out, size_t max, size_t *n, struct ty_err *err)
{
    const char *p = s ? s : "";
    *n = 0;
    for (;;) {
        char one[64];
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && (*p == ' ' || *p == '\t'))
            p++, len--;
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0 || len >= sizeof(one) || *n >= max)
            return ty_err_set(err, TY_EINVAL, NULL, "'%.200s' is not an address list: %s",
                              s ? s : "",
                              *n >= max ? "too many entries" : "an entry is empty or too long");
        memcpy(one, p, len);
        one[len] = '\0';
        if (!ty_cidr_parse(one, 1, &out[*n]))
            return ty_err_set(err, TY_EINVAL, NULL,
                              "'%s' is not an IP address or CIDR block (10.0.0.0/8, fd00::/8)",
                              one);
        (*n)++;
        if (!end)
            return 0;
        p = end + 1;
    }
}
