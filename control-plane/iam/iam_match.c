/*
 * iam_match.c - the matchers of IAM policies: small string helpers, the glob matcher ('*',
 * '?', UTF-8 aware, with an escape for resolved text), ARN matching by its six parts, the
 * request context's keys, and policy variable resolution (${aws:username} ...).
 *
 * Does not own the context (borrowed from the caller of iam_evaluate). Pure: no allocation
 * but the caller's ty_buf; iterative, never recursive on input.
 */
#include "iam_int.h"

#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* small string helpers */

int iam__lc(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

int iam__ieq(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

size_t iam__count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += (*s == c);
    return n;
}

/* Parses a non-empty run of decimal digits into *v (saturating); 0 when s is not digits. */
int iam__parse_uint(const char *s, size_t n, long long *v)
{
    long long x = 0;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        if (x < LLONG_MAX / 10 - 10)
            x = x * 10 + (s[i] - '0');
        else
            x = LLONG_MAX;
    }
    *v = x;
    return 1;
}

/* ---------------------------------------------------------------------------------------- */
/* glob matching: '*' any run, '?' one character (UTF-8 code point); with esc, '\' makes the
 * next byte literal (used for text produced by variable resolution). Iterative, O(n*m). */

static size_t utf8_next(const char *s, size_t i, size_t n)
{
    i++;
    while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

int iam__glob_match(const char *p, size_t pn, const char *s, size_t sn, int ci, int esc)
{
    size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < sn) {
        if (pi < pn) {
            char c = p[pi];
            size_t adv = 1;
            int wild = 1;
            if (esc && c == '\\' && pi + 1 < pn) {
                c = p[pi + 1];
                adv = 2;
                wild = 0;
            }
            if (wild && c == '*') {
                star_p = ++pi;
                star_s = si;
                continue;
            }
            if (wild && c == '?') {
                pi++;
                si = utf8_next(s, si, sn);
                continue;
            }
            if (ci ? iam__lc((unsigned char)c) == iam__lc((unsigned char)s[si]) : c == s[si]) {
                pi += adv;
                si++;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return 0;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < pn && p[pi] == '*')
        pi++;
    return pi == pn;
}

/*
 * Splits an ARN into at most 6 colon-separated fields (the last keeps any further colons),
 * honouring '\' escapes when esc. OUT: off/len. Returns the number of fields.
 */
static int arn_split(const char *s, size_t n, int esc, size_t off[6], size_t len[6])
{
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        if (esc && s[i] == '\\') {
            i++;
            continue;
        }
        if (s[i] == ':' && k < 5) {
            off[k] = start;
            len[k] = i - start;
            k++;
            start = i + 1;
        }
    }
    off[k] = start;
    len[k] = n - start;
    return k + 1;
}

/* 1 when the field ends with a '*' that is a wildcard (not escaped). */
static int ends_with_star(const char *s, size_t n, int esc)
{
    int last_star = 0;
    for (size_t i = 0; i < n; i++) {
        if (esc && s[i] == '\\' && i + 1 < n) {
            i++;
            last_star = 0;
            continue;
        }
        last_star = (s[i] == '*');
    }
    return last_star;
}

/*
 * IAM's ARN matching: fields compared one by one, case-sensitively, wildcards within a
 * field; a '*' ending the last field of a shorter pattern runs on across colons.
 */
int iam__arn_match(const char *p, size_t pn, const char *s, size_t sn, int esc)
{
    size_t po[6], pl[6], so[6], sl[6];
    int pk, sk;
    if (pn == 1 && p[0] == '*')
        return 1;
    pk = arn_split(p, pn, esc, po, pl);
    sk = arn_split(s, sn, 0, so, sl);
    for (int i = 0; i < pk; i++) {
        if (i == pk - 1 && pk < 6 && ends_with_star(p + po[i], pl[i], esc)) {
            if (i >= sk)
                return 0;
            return iam__glob_match(p + po[i], pl[i], s + so[i], sn - so[i], 0, esc);
        }
        if (i >= sk)
            return 0;
        if (!iam__glob_match(p + po[i], pl[i], s + so[i], sl[i], 0, esc))
            return 0;
    }
    return pk == sk;
}

/* ---------------------------------------------------------------------------------------- */
/* request context and policy variables */

/* The values of a context key. OUT: *vals / *nvals (0 when absent). */
const char *iam__ctx_value(const struct iam_ctx_entry *e, size_t i)
{
    return e->values ? e->values[i] : e->value;
}

const struct iam_ctx_entry *iam__ctx_find(const struct iam_request *req, const char *key,
                                          size_t keylen)
{
    for (size_t i = 0; i < req->ncontext; i++) {
        const struct iam_ctx_entry *e = &req->context[i];
        if (e->key && strlen(e->key) == keylen && strncasecmp(e->key, key, keylen) == 0)
            return e;
    }
    return NULL;
}

size_t iam__ctx_count(const struct iam_ctx_entry *e)
{
    size_t n = 0;
    if (!e)
        return 0;
    if (!e->values)
        return e->value ? 1 : 0;
    for (size_t i = 0; i < e->nvalues; i++)
        n += (e->values[i] != NULL);
    return n;
}

/* Appends text, escaping wildcards and backslashes when esc. */
static int put_lit(struct ty_buf *b, const char *s, size_t n, int esc)
{
    for (size_t i = 0; i < n; i++) {
        if (esc && (s[i] == '*' || s[i] == '?' || s[i] == '\\')) {
            if (ty_buf_append(b, "\\", 1) < 0)
                return -1;
        }
        if (ty_buf_append(b, s + i, 1) < 0)
            return -1;
    }
    return 0;
}

static void trim(const char **s, size_t *n)
{
    while (*n && isspace((unsigned char)**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && isspace((unsigned char)(*s)[*n - 1]))
        (*n)--;
}

/*
 * Resolves ${key}, ${key, 'default'}, ${*}, ${?} and ${$} in raw into b. Resolved values are
 * literal text (escaped when esc); the rest of raw keeps its wildcards (and its backslashes
 * are escaped when esc). Returns 0, 1 when a variable cannot be resolved, -1 out of memory.
 */
int iam__resolve(const char *raw, int esc, const struct iam_request *req, struct ty_buf *b)
{
    size_t n = strlen(raw);
    ty_buf_reset(b);
    for (size_t i = 0; i < n;) {
        if (raw[i] == '$' && i + 1 < n && raw[i + 1] == '{') {
            const char *close = memchr(raw + i + 2, '}', n - i - 2);
            if (close) {
                const char *in = raw + i + 2, *def = NULL, *comma;
                size_t inn = (size_t)(close - in), defn = 0;
                if (inn == 1 && (in[0] == '*' || in[0] == '?' || in[0] == '$')) {
                    if (put_lit(b, in, 1, esc) < 0)
                        return -1;
                    i = (size_t)(close - raw) + 1;
                    continue;
                }
                comma = memchr(in, ',', inn);
                if (comma) {
                    def = comma + 1;
                    defn = inn - (size_t)(def - in);
                    inn = (size_t)(comma - in);
                    trim(&def, &defn);
                    if (defn < 2 || def[0] != '\'' || def[defn - 1] != '\'')
                        return 1;
                    def++;
                    defn -= 2;
                }
                trim(&in, &inn);
                const struct iam_ctx_entry *e = iam__ctx_find(req, in, inn);
                if (iam__ctx_count(e) == 1) {
                    const char *v = NULL;
                    for (size_t k = 0; !v; k++)
                        v = iam__ctx_value(e, k);
                    if (put_lit(b, v, strlen(v), esc) < 0)
                        return -1;
                } else if (def) {
                    if (put_lit(b, def, defn, esc) < 0)
                        return -1;
                } else {
                    return 1;
                }
                i = (size_t)(close - raw) + 1;
                continue;
            }
        }
        if (esc && raw[i] == '\\') {
            if (ty_buf_append(b, "\\\\", 2) < 0)
                return -1;
        } else if (ty_buf_append(b, raw + i, 1) < 0) {
            return -1;
        }
        i++;
    }
    if (!b->data && ty_buf_append(b, "", 0) < 0)
        return -1;
    if (!b->data)
        return -1;
    return 0;
}
