/*
 * ty_net.h - IP addresses and CIDR blocks as text: "10.0.0.0/8", "::1", "2001:db8::/32".
 *
 * Owns: parsing an address or block (inet_pton's forms, an optional "/bits") and testing
 * whether an address falls in a block, and lists of blocks ("10.0.0.0/8,192.168.1.7"). An
 * IPv4 address never matches an IPv6 block nor the reverse (an IPv4-mapped address is IPv6
 * here), as AWS's IpAddress condition operator has it. Pure functions; thread-safe.
 */
#ifndef TY_CORE_TY_NET_H
#define TY_CORE_TY_NET_H

#include <stddef.h>

struct ty_cidr {
    int v6;              /* 0 IPv4 (a[0..4)), 1 IPv6 (a[0..16)) */
    unsigned char a[16]; /* network byte order */
    int bits;            /* prefix length: 32 or 128 for a single address */
};

/* s as an address, or with allow_prefix as a block "addr/bits" too. 1 parsed, 0 not. */
int ty_cidr_parse(const char *s, int allow_prefix, struct ty_cidr *out);

/* 1 when ip's address lies in net's block (same family, first net->bits bits equal). */
int ty_cidr_has(const struct ty_cidr *net, const struct ty_cidr *ip);

/*
 * A comma-separated list of blocks (spaces around entries allowed). OUT: out[0..*n), at most
 * max. 0, or -TY_EINVAL (a bad entry, an empty list or more than max) with err naming the
 * entry.
 */
struct ty_err;
int ty_cidr_list(const char *s, struct ty_cidr *out, size_t max, size_t *n, struct ty_err *err);

#endif
