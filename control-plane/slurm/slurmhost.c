/*
 * slurmhost.c - Slurm's host lists ("n[1-3,7],gpu[01-02],login"), expanded into node names in
 * Slurm's order (the order of SLURM_NODEID, so a name's position is its host index). Owns
 * nothing between calls; pure.
 */
#include "slurmrest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends prefix + number (zero-padded to width) + suffix as names[*k]. 0 or -1. */
static int slurmhost_add(const char *prefix, size_t pl, long num, int width, const char *suffix,
                         size_t sl, char (*names)[SLURMREST_NODE_MAX], int max, int *k)
{
    char digits[32];
    int dl = num < 0 ? 0 : snprintf(digits, sizeof(digits), "%0*ld", width, num);

    if (*k >= max || pl + (size_t)dl + sl >= SLURMREST_NODE_MAX)
        return -1;
    memcpy(names[*k], prefix, pl);
    memcpy(names[*k] + pl, digits, (size_t)dl);
    memcpy(names[*k] + pl + dl, suffix, sl);
    names[*k][pl + (size_t)dl + sl] = '\0';
    (*k)++;
    return 0;
}

/* A decimal number of at most 9 digits at *p (advanced past it). OUT: *width, its digits. */
static int slurmhost_num(const char **p, long *out, int *width)
{
    const char *s = *p;
    long v = 0;
    int d = 0;

    while (isdigit((unsigned char)s[d]) && d < 10)
        v = v * 10 + (s[d++] - '0');
    if (d == 0 || d > 9)
        return -1;
    *p = s + d;
    *out = v;
    *width = d;
    return 0;
}

/* Expands the ranges between '[' and ']' (body, len bl) around prefix and suffix. */
static int slurmhost_ranges(const char *prefix, size_t pl, const char *body, size_t bl,
                            const char *suffix, size_t sl, char (*names)[SLURMREST_NODE_MAX],
                            int max, int *k)
{
    const char *p = body, *end = body + bl;

    if (bl == 0)
        return -1;
    while (p < end) {
        long lo, hi;
        int wlo, whi;

        if (slurmhost_num(&p, &lo, &wlo) < 0)
            return -1;
        hi = lo;
        if (p < end && *p == '-') {
            p++;
            if (slurmhost_num(&p, &hi, &whi) < 0 || hi < lo || hi - lo >= max)
                return -1;
        }
        if (p < end && *p != ',')
            return -1;
        if (p < end && ++p == end)
            return -1; /* "n[1,]" */
        for (long v = lo; v <= hi; v++)
            if (slurmhost_add(prefix, pl, v, wlo, suffix, sl, names, max, k) < 0)
                return -1;
    }
    return 0;
}

int slurmrest_hostlist(const char *list, char (*names)[SLURMREST_NODE_MAX], int max)
{
    const char *p = list;
    int k = 0;

    if (!list || !list[0])
        return 0;
    while (*p) {
        const char *item = p, *open = NULL, *close = NULL;

        while (*p && *p != ',') {
            if (*p == '[') {
                if (open)
                    return -1; /* one bracket per name: several-dimension lists are refused */
                open = p;
                close = strchr(p, ']');
                if (!close)
                    return -1;
                p = close;
            }
            if (isspace((unsigned char)*p) || (*p == ']' && p != close))
                return -1;
            p++;
        }
        if (p == item)
            return -1;
        if (!open) {
            if (slurmhost_add(item, (size_t)(p - item), -1, 0, "", 0, names, max, &k) < 0)
                return -1;
        } else if (slurmhost_ranges(item, (size_t)(open - item), open + 1,
                                    (size_t)(close - open - 1), close + 1, (size_t)(p - close - 1),
                                    names, max, &k) < 0) {
            return -1;
        }
        if (*p == ',')
            p++;
        if (!*p && p[-1] == ',')
            return -1;
    }
    return k;
}
