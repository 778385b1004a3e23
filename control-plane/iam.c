/*
 * iam.c - IAM identity-policy parsing, validation and evaluation (see iam.h).
 *
 * Owns: the compiled form of a policy (one arena per policy: statements, patterns, condition
 * blocks), IAM's validation stages and their messages, the glob and ARN matchers, policy
 * variable resolution, the condition operators, the AccessDenied wording.
 * Does not own: the policies' storage or the request context (both borrowed).
 *
 * Invariants: a struct iam_policy never changes after iam_policy_parse returns, and
 * evaluation writes only to its own stack and to buffers it allocates, so shared policies
 * are safe to evaluate from any number of threads. Nothing here recurses on input: JSON depth
 * is checked by a flat pre-scan before jansson sees the text, and the matchers are loops.
 * Validation follows IAM's order of checks and wording as recorded against CreatePolicy (moto's
 * test_iam_policies.py): grammar, version, legacy parsing, Sid uniqueness, actions present,
 * resources present, resource formats, action vendors; the first failing stage gives the
 * message. The principal check (identity policies only) is placed right after the grammar.
 */
#include "iam.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ty_buf.h"

#define IAM__FIELD       "PolicyDocument"
#define IAM__SYNTAX      "Syntax errors in policy."
#define IAM__LEGACY      "The policy failed legacy parsing"
#define IAM__RESOLVE_MAX (1024u * 1024u) /* ceiling on a pattern after variable resolution */

/* ---------------------------------------------------------------------------------------- */
/* arena: every allocation of a policy lives in its blocks and is freed at once */

struct iam__blk {
    struct iam__blk *next;
    size_t used, cap;
    max_align_t data[];
};

struct iam__arena {
    struct iam__blk *head;
};

static void *arena_alloc(struct iam__arena *a, size_t n)
{
    size_t al = sizeof(max_align_t);
    n = (n + al - 1) / al * al;
    if (n == 0)
        n = al;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 8192 ? n : 8192;
        struct iam__blk *b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (char *)a->head->data + a->head->used;
    a->head->used += n;
    return p;
}

static char *arena_strdup(struct iam__arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(a, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void arena_free(struct iam__arena *a)
{
    struct iam__blk *b = a->head;
    while (b) {
        struct iam__blk *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* compiled policy */

enum iam__kind {
    K_STR_EQ,
    K_STR_EQ_CI,
    K_STR_LIKE,
    K_NUM_EQ,
    K_NUM_LT,
    K_NUM_LE,
    K_NUM_GT,
    K_NUM_GE,
    K_DATE_EQ,
    K_DATE_LT,
    K_DATE_LE,
    K_DATE_GT,
    K_DATE_GE,
    K_BOOL,
    K_BIN_EQ,
    K_IP,
    K_ARN,
    K_NULL,
};

enum iam__set { SET_NONE, SET_ANY, SET_ALL };

struct iam__opdef {
    const char *name;
    enum iam__kind kind;
    int negated;
};

static const struct iam__opdef iam_op_table[] = {
    {"StringEquals", K_STR_EQ, 0},
    {"StringNotEquals", K_STR_EQ, 1},
    {"StringEqualsIgnoreCase", K_STR_EQ_CI, 0},
    {"StringNotEqualsIgnoreCase", K_STR_EQ_CI, 1},
    {"StringLike", K_STR_LIKE, 0},
    {"StringNotLike", K_STR_LIKE, 1},
    {"NumericEquals", K_NUM_EQ, 0},
    {"NumericNotEquals", K_NUM_EQ, 1},
    {"NumericLessThan", K_NUM_LT, 0},
    {"NumericLessThanEquals", K_NUM_LE, 0},
    {"NumericGreaterThan", K_NUM_GT, 0},
    {"NumericGreaterThanEquals", K_NUM_GE, 0},
    {"DateEquals", K_DATE_EQ, 0},
    {"DateNotEquals", K_DATE_EQ, 1},
    {"DateLessThan", K_DATE_LT, 0},
    {"DateLessThanEquals", K_DATE_LE, 0},
    {"DateGreaterThan", K_DATE_GT, 0},
    {"DateGreaterThanEquals", K_DATE_GE, 0},
    {"Bool", K_BOOL, 0},
    {"BinaryEquals", K_BIN_EQ, 0},
    {"IpAddress", K_IP, 0},
    {"NotIpAddress", K_IP, 1},
    {"ArnEquals", K_ARN, 0},
    {"ArnLike", K_ARN, 0},
    {"ArnNotEquals", K_ARN, 1},
    {"ArnNotLike", K_ARN, 1},
    {"Null", K_NULL, 0},
};

struct iam__str {
    const char *s;
    int vars; /* 1 when the text holds ${...} and the policy is 2012-10-17 */
};

struct iam__ckey {
    const char *key;
    struct iam__str *values;
    size_t nvalues;
};

struct iam__cond {
    const struct iam__opdef *op;
    enum iam__set set;
    int if_exists;
    struct iam__ckey *keys;
    size_t nkeys;
};

struct iam__stmt {
    const char *sid; /* "" when none */
    int deny;
    int not_action;
    int not_resource;
    struct iam__str *actions;
    size_t nactions;
    struct iam__str *resources;
    size_t nresources;
    struct iam__cond *conds;
    size_t nconds;
};

struct iam_policy {
    struct iam__arena arena;
    int v2012;
    struct iam__stmt *stmts;
    size_t nstmts;
};

/* ---------------------------------------------------------------------------------------- */
/* small string helpers */

static int lc(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

static int ieq(const char *a, const char *b)
{
    return strcasecmp(a, b) == 0;
}

static size_t count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += (*s == c);
    return n;
}

/* Parses a non-empty run of decimal digits into *v (saturating); 0 when s is not digits. */
static int parse_uint(const char *s, size_t n, long long *v)
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

static int glob_match(const char *p, size_t pn, const char *s, size_t sn, int ci, int esc)
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
            if (ci ? lc((unsigned char)c) == lc((unsigned char)s[si]) : c == s[si]) {
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
static int arn_match(const char *p, size_t pn, const char *s, size_t sn, int esc)
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
            return glob_match(p + po[i], pl[i], s + so[i], sn - so[i], 0, esc);
        }
        if (i >= sk)
            return 0;
        if (!glob_match(p + po[i], pl[i], s + so[i], sl[i], 0, esc))
            return 0;
    }
    return pk == sk;
}

/* ---------------------------------------------------------------------------------------- */
/* request context and policy variables */

/* The values of a context key. OUT: *vals / *nvals (0 when absent). */
static const char *ctx_value(const struct iam_ctx_entry *e, size_t i)
{
    return e->values ? e->values[i] : e->value;
}

static const struct iam_ctx_entry *ctx_find(const struct iam_request *req, const char *key,
                                            size_t keylen)
{
    for (size_t i = 0; i < req->ncontext; i++) {
        const struct iam_ctx_entry *e = &req->context[i];
        if (e->key && strlen(e->key) == keylen && strncasecmp(e->key, key, keylen) == 0)
            return e;
    }
    return NULL;
}

static size_t ctx_count(const struct iam_ctx_entry *e)
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
static int resolve(const char *raw, int esc, const struct iam_request *req, struct ty_buf *b)
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
                const struct iam_ctx_entry *e = ctx_find(req, in, inn);
                if (ctx_count(e) == 1) {
                    const char *v = NULL;
                    for (size_t k = 0; !v; k++)
                        v = ctx_value(e, k);
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

/* ---------------------------------------------------------------------------------------- */
/* typed values: numbers, dates, IP addresses */

static int parse_number(const char *s, double *out)
{
    const char *p = s;
    int digits = 0;
    char *end;
    if (*p == '-' || *p == '+')
        p++;
    while (*p >= '0' && *p <= '9') {
        p++;
        digits++;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            p++;
            digits++;
        }
    }
    if (!digits || *p || p - s > 64)
        return 0;
    errno = 0;
    *out = strtod(s, &end);
    return *end == '\0' && errno == 0;
}

struct iam__time {
    long long s;
    long ns;
};

static long long days_from_civil(long long y, unsigned m, unsigned d)
{
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (long long)doe - 719468;
}

/* Reads exactly n digits at *p. */
static int digits_n(const char **p, int n, long long *v)
{
    for (int i = 0; i < n; i++) {
        if ((*p)[i] == '\0')
            return 0;
    }
    if (!parse_uint(*p, (size_t)n, v))
        return 0;
    *p += n;
    return 1;
}

/*
 * Dates as IAM takes them: epoch seconds (digits), or ISO 8601
 * YYYY[-MM[-DD]][Thh[:mm[:ss[.fraction]]]][Z|(+|-)hh[[:]mm]], 'T'/'Z' in either case.
 */
static int parse_date(const char *s, struct iam__time *t)
{
    const char *p = s;
    long long y, mo = 1, d = 1, h = 0, mi = 0, se = 0, off = 0, v;
    long ns = 0;
    size_t n = strlen(s);
    if (n > 64 || n == 0)
        return 0;
    if (parse_uint(s, n, &v)) {
        t->s = v;
        t->ns = 0;
        return 1;
    }
    if (!digits_n(&p, 4, &y))
        return 0;
    if (*p == '-') {
        p++;
        if (!digits_n(&p, 2, &mo) || mo < 1 || mo > 12)
            return 0;
        if (*p == '-') {
            p++;
            if (!digits_n(&p, 2, &d) || d < 1 || d > 31)
                return 0;
        }
    }
    if (*p == 'T' || *p == 't') {
        p++;
        if (!digits_n(&p, 2, &h) || h > 23)
            return 0;
        if (*p == ':') {
            p++;
            if (!digits_n(&p, 2, &mi) || mi > 59)
                return 0;
            if (*p == ':') {
                p++;
                if (!digits_n(&p, 2, &se) || se > 60)
                    return 0;
                if (*p == '.') {
                    long scale = 100000000;
                    int nd = 0;
                    p++;
                    while (*p >= '0' && *p <= '9') {
                        if (nd++ < 9) {
                            ns += (*p - '0') * scale;
                            scale /= 10;
                        }
                        p++;
                    }
                    if (!nd)
                        return 0;
                }
            }
        }
        if (*p == 'Z' || *p == 'z') {
            p++;
        } else if (*p == '+' || *p == '-') {
            int sign = *p == '-' ? -1 : 1;
            long long oh, om = 0;
            p++;
            if (!digits_n(&p, 2, &oh) || oh > 23)
                return 0;
            if (*p == ':')
                p++;
            if (*p && (!digits_n(&p, 2, &om) || om > 59))
                return 0;
            off = sign * (oh * 3600 + om * 60);
        }
    }
    if (*p)
        return 0;
    t->s = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + se - off;
    t->ns = ns;
    return 1;
}

static int time_cmp(const struct iam__time *a, const struct iam__time *b)
{
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    if (a->ns != b->ns)
        return a->ns < b->ns ? -1 : 1;
    return 0;
}

struct iam__ip {
    int v6;
    unsigned char a[16];
    int bits;
};

static int parse_ip(const char *s, int cidr, struct iam__ip *ip)
{
    char tmp[64];
    const char *slash = cidr ? strchr(s, '/') : NULL;
    size_t n = slash ? (size_t)(slash - s) : strlen(s);
    if (n == 0 || n >= sizeof(tmp))
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    if (inet_pton(AF_INET, tmp, ip->a) == 1) {
        ip->v6 = 0;
        ip->bits = 32;
    } else if (inet_pton(AF_INET6, tmp, ip->a) == 1) {
        ip->v6 = 1;
        ip->bits = 128;
    } else {
        return 0;
    }
    if (slash) {
        long long b;
        if (!parse_uint(slash + 1, strlen(slash + 1), &b) || b > ip->bits)
            return 0;
        ip->bits = (int)b;
    }
    return 1;
}

static int ip_in(const struct iam__ip *net, const struct iam__ip *ip)
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

/* ---------------------------------------------------------------------------------------- */
/* condition evaluation */

/* Typed form of a context value; 0 when it does not parse for the operator's type. */
struct iam__typed {
    double num;
    struct iam__time t;
    struct iam__ip ip;
};

static int typed_parse(enum iam__kind k, const char *v, struct iam__typed *out, int policy_side)
{
    switch (k) {
    case K_NUM_EQ:
    case K_NUM_LT:
    case K_NUM_LE:
    case K_NUM_GT:
    case K_NUM_GE:
        return parse_number(v, &out->num);
    case K_DATE_EQ:
    case K_DATE_LT:
    case K_DATE_LE:
    case K_DATE_GT:
    case K_DATE_GE:
        return parse_date(v, &out->t);
    case K_IP:
        return parse_ip(v, policy_side, &out->ip);
    default:
        return 1;
    }
}

/* The positive comparison of one context value against one (resolved) policy value. */
static int value_match(enum iam__kind k, const char *cv, const struct iam__typed *ct,
                       const char *pv, int esc)
{
    struct iam__typed pt;
    int c;
    switch (k) {
    case K_STR_EQ:
    case K_BIN_EQ:
        return strcmp(cv, pv) == 0;
    case K_STR_EQ_CI:
    case K_BOOL:
        return ieq(cv, pv);
    case K_STR_LIKE:
        return glob_match(pv, strlen(pv), cv, strlen(cv), 0, esc);
    case K_ARN:
        return arn_match(pv, strlen(pv), cv, strlen(cv), esc);
    case K_IP:
        return typed_parse(k, pv, &pt, 1) && ip_in(&pt.ip, &ct->ip);
    case K_NULL:
        return 0;
    default:
        break;
    }
    if (!typed_parse(k, pv, &pt, 1))
        return 0;
    if (k >= K_NUM_EQ && k <= K_NUM_GE)
        c = ct->num < pt.num ? -1 : (ct->num > pt.num ? 1 : 0);
    else
        c = time_cmp(&ct->t, &pt.t);
    switch (k) {
    case K_NUM_EQ:
    case K_DATE_EQ:
        return c == 0;
    case K_NUM_LT:
    case K_DATE_LT:
        return c < 0;
    case K_NUM_LE:
    case K_DATE_LE:
        return c <= 0;
    case K_NUM_GT:
    case K_DATE_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

/* Evaluation state shared by one iam_evaluate call. */
struct iam__eval {
    const struct iam_request *req;
    struct ty_buf buf;
};

/*
 * 1 when the positive operator holds between cv and any of the key's policy values.
 * Returns -1 out of memory, -2 for an unresolvable variable.
 */
static int any_value_matches(struct iam__eval *ev, const struct iam__cond *c,
                             const struct iam__ckey *ck, const char *cv,
                             const struct iam__typed *ct)
{
    int wild = c->op->kind == K_STR_LIKE || c->op->kind == K_ARN;
    for (size_t i = 0; i < ck->nvalues; i++) {
        const char *pv = ck->values[i].s;
        int esc = 0;
        if (ck->values[i].vars) {
            int r = resolve(pv, wild, ev->req, &ev->buf);
            if (r < 0)
                return -1;
            if (r > 0)
                return -2;
            pv = ev->buf.data;
            esc = wild;
        }
        if (value_match(c->op->kind, cv, ct, pv, esc))
            return 1;
    }
    return 0;
}

/* One key of one operator: 1 holds, 0 not, -1 out of memory, -2 unresolvable. */
static int eval_key(struct iam__eval *ev, const struct iam__cond *c, const struct iam__ckey *ck)
{
    const struct iam_ctx_entry *e = ctx_find(ev->req, ck->key, strlen(ck->key));
    size_t present = ctx_count(e);
    int neg = c->op->negated;

    if (c->op->kind == K_NULL) {
        for (size_t i = 0; i < ck->nvalues; i++) {
            const char *pv = ck->values[i].s;
            if ((ieq(pv, "true") && !present) || (ieq(pv, "false") && present))
                return 1;
        }
        return 0;
    }
    if (!present) {
        if (c->if_exists || c->set == SET_ALL)
            return 1;
        if (c->set == SET_ANY)
            return 0;
        return neg;
    }
    /* For ForAllValues, and for a negated operator without a qualifier, every context
     * value must satisfy the operator; otherwise at least one must. */
    int need_all = c->set == SET_ALL || (c->set == SET_NONE && neg);
    size_t nv = e->values ? e->nvalues : 1;
    for (size_t i = 0; i < nv; i++) {
        const char *cv = ctx_value(e, i);
        struct iam__typed ct;
        int ok;
        if (!cv)
            continue;
        if (!typed_parse(c->op->kind, cv, &ct, 0)) {
            ok = 0;
        } else {
            int m = any_value_matches(ev, c, ck, cv, &ct);
            if (m < 0)
                return m;
            ok = neg ? !m : m;
        }
        if (need_all && !ok)
            return 0;
        if (!need_all && ok)
            return 1;
    }
    return need_all;
}

/* ---------------------------------------------------------------------------------------- */
/* statement evaluation */

/* 1 applies, 0 not, -1 out of memory, -2 unresolvable variable (the statement does not apply) */
static int eval_stmt(struct iam__eval *ev, const struct iam__stmt *st)
{
    const struct iam_request *req = ev->req;
    const char *act = req->action ? req->action : "";
    const char *res = req->resource ? req->resource : "";
    int m = 0;

    for (size_t i = 0; i < st->nactions && !m; i++) {
        const char *p = st->actions[i].s;
        m = glob_match(p, strlen(p), act, strlen(act), 1, 0);
    }
    if (m == st->not_action)
        return 0;

    m = 0;
    for (size_t i = 0; i < st->nresources; i++) {
        const char *p = st->resources[i].s;
        int esc = 0;
        if (st->resources[i].vars) {
            int r = resolve(p, 1, req, &ev->buf);
            if (r < 0)
                return -1;
            if (r > 0)
                return -2;
            p = ev->buf.data;
            esc = 1;
        }
        if (!m && arn_match(p, strlen(p), res, strlen(res), esc))
            m = 1;
    }
    if (m == st->not_resource)
        return 0;

    for (size_t i = 0; i < st->nconds; i++) {
        const struct iam__cond *c = &st->conds[i];
        for (size_t k = 0; k < c->nkeys; k++) {
            int r = eval_key(ev, c, &c->keys[k]);
            if (r != 1)
                return r;
        }
    }
    return 1;
}

enum iam_decision iam_evaluate_ex(const struct iam_policy *const *policies, size_t n,
                                  const struct iam_request *req, struct iam_explain *why)
{
    struct iam__eval ev;
    enum iam_decision d = IAM_DENY_IMPLICIT;
    struct iam_explain allow = {0, 0, "", 0};

    if (why) {
        why->policy = 0;
        why->statement = 0;
        why->sid = "";
        why->error = 0;
    }
    if (!req || (!policies && n))
        return IAM_DENY_IMPLICIT;
    ev.req = req;
    ty_buf_init(&ev.buf, IAM__RESOLVE_MAX);
    for (size_t p = 0; p < n; p++) {
        const struct iam_policy *pol = policies[p];
        if (!pol)
            continue;
        for (size_t s = 0; s < pol->nstmts; s++) {
            const struct iam__stmt *st = &pol->stmts[s];
            int r = eval_stmt(&ev, st);
            if (r == -1) {
                ty_buf_cleanup(&ev.buf);
                if (why)
                    why->error = 1;
                return IAM_DENY_IMPLICIT;
            }
            if (r != 1)
                continue;
            if (st->deny) {
                ty_buf_cleanup(&ev.buf);
                if (why) {
                    why->policy = p;
                    why->statement = s;
                    why->sid = st->sid;
                }
                return IAM_DENY_EXPLICIT;
            }
            if (d != IAM_ALLOW) {
                d = IAM_ALLOW;
                allow.policy = p;
                allow.statement = s;
                allow.sid = st->sid;
            }
        }
    }
    ty_buf_cleanup(&ev.buf);
    if (why && d == IAM_ALLOW)
        *why = allow;
    return d;
}

enum iam_decision iam_evaluate(const struct iam_policy *const *policies, size_t n,
                               const struct iam_request *req)
{
    return iam_evaluate_ex(policies, n, req, NULL);
}

/* ---------------------------------------------------------------------------------------- */
/* validation */

size_t iam_policy_chars(const char *json, size_t len)
{
    size_t n = 0;
    if (!json)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)json[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || (c & 0xC0) == 0x80)
            continue;
        n++;
    }
    return n;
}

/* Maximum nesting of [ and { outside strings; stops counting past limit. */
static int json_depth_ok(const char *s, size_t n, int limit)
{
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > limit)
                return 0;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 1;
}

/*
 * Decodes one well-formed UTF-8 sequence at s[i]. Returns its length and writes OUT: *cp, or
 * 0 when the bytes there are ill-formed.
 */
static size_t utf8_decode(const unsigned char *s, size_t i, size_t n, unsigned long *cp)
{
    unsigned char c = s[i];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4;
    else
        return 0;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (i + len > n || s[i + 1] < lo || s[i + 1] > hi)
        return 0;
    *cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
    for (size_t k = 1; k < len; k++) {
        if ((s[i + k] & 0xC0) != 0x80)
            return 0;
        *cp = (*cp << 6) | (s[i + k] & 0x3F);
    }
    return len;
}

/*
 * IAM's API constraint on PolicyDocument: [\u0009\u000A\u000D\u0020-\u00FF]+. Control
 * characters and well-formed UTF-8 above U+00FF fail it; ill-formed UTF-8 is left to the JSON
 * parser (a syntax error).
 */
static int doc_charset_ok(const char *doc, size_t n)
{
    const unsigned char *s = (const unsigned char *)doc;
    for (size_t i = 0; i < n; i++) {
        unsigned long cp;
        size_t len;
        if (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return 0;
        if (s[i] < 0x80)
            continue;
        len = utf8_decode(s, i, n, &cp);
        if (len && cp > 0xFF)
            return 0;
        if (len)
            i += len - 1;
    }
    return 1;
}

static int is_str_or_str_array(json_t *v, int allow_empty)
{
    size_t i;
    json_t *e;
    if (json_is_string(v))
        return 1;
    if (!json_is_array(v))
        return 0;
    if (!allow_empty && json_array_size(v) == 0)
        return 0;
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(e))
            return 0;
    }
    return 1;
}

/* A condition value: string, number or boolean, or an array of them. */
static int is_cond_scalar(json_t *v)
{
    return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

static int is_cond_value(json_t *v)
{
    size_t i;
    json_t *e;
    if (is_cond_scalar(v))
        return 1;
    if (!json_is_array(v))
        return 0;
    json_array_foreach(v, i, e)
    {
        if (!is_cond_scalar(e))
            return 0;
    }
    return 1;
}

/* Splits ForAnyValue:/ForAllValues: and IfExists off an operator name. NULL when unknown. */
static const struct iam__opdef *op_lookup(const char *name, enum iam__set *set, int *if_exists)
{
    size_t n;
    *set = SET_NONE;
    *if_exists = 0;
    if (strncmp(name, "ForAnyValue:", 12) == 0) {
        *set = SET_ANY;
        name += 12;
    } else if (strncmp(name, "ForAllValues:", 13) == 0) {
        *set = SET_ALL;
        name += 13;
    }
    n = strlen(name);
    if (n > 8 && strcmp(name + n - 8, "IfExists") == 0) {
        *if_exists = 1;
        n -= 8;
    }
    for (size_t i = 0; i < sizeof(iam_op_table) / sizeof(iam_op_table[0]); i++) {
        if (strlen(iam_op_table[i].name) == n && strncmp(iam_op_table[i].name, name, n) == 0)
            return &iam_op_table[i];
    }
    return NULL;
}

static json_t *stmt_at(json_t *stmts, size_t i)
{
    return json_is_array(stmts) ? json_array_get(stmts, i) : stmts;
}

static size_t stmt_count(json_t *stmts)
{
    return json_is_array(stmts) ? json_array_size(stmts) : 1;
}

/* Stage 1: the grammar. 0 ok, else -1. */
static int check_grammar(json_t *root, int *has_principal)
{
    static const char *const top[] = {"Version", "Id", "Statement"};
    static const char *const elems[] = {"Sid",          "Effect",      "Principal",
                                        "NotPrincipal", "Action",      "NotAction",
                                        "Resource",     "NotResource", "Condition"};
    const char *key;
    json_t *v, *stmts;

    if (!json_is_object(root))
        return -1;
    json_object_foreach(root, key, v)
    {
        size_t i;
        for (i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
            if (strcmp(key, top[i]) == 0)
                break;
        }
        if (i == sizeof(top) / sizeof(top[0]))
            return -1;
    }
    v = json_object_get(root, "Version");
    if (v && (!json_is_string(v) || (strcmp(json_string_value(v), "2012-10-17") != 0 &&
                                     strcmp(json_string_value(v), "2008-10-17") != 0)))
        return -1;
    v = json_object_get(root, "Id");
    if (v && !json_is_string(v))
        return -1;
    stmts = json_object_get(root, "Statement");
    if (!stmts || !(json_is_object(stmts) || json_is_array(stmts)))
        return -1;
    if (json_is_array(stmts) && json_array_size(stmts) == 0)
        return -1;
    for (size_t s = 0; s < stmt_count(stmts); s++) {
        json_t *st = stmt_at(stmts, s), *eff, *cond;
        if (!json_is_object(st))
            return -1;
        json_object_foreach(st, key, v)
        {
            size_t i;
            for (i = 0; i < sizeof(elems) / sizeof(elems[0]); i++) {
                if (strcmp(key, elems[i]) == 0)
                    break;
            }
            if (i == sizeof(elems) / sizeof(elems[0]))
                return -1;
        }
        if (json_object_get(st, "Action") && json_object_get(st, "NotAction"))
            return -1;
        if (json_object_get(st, "Resource") && json_object_get(st, "NotResource"))
            return -1;
        eff = json_object_get(st, "Effect");
        if (!json_is_string(eff) ||
            !(ieq(json_string_value(eff), "Allow") || ieq(json_string_value(eff), "Deny")))
            return -1;
        static const char *const lists[] = {"Action", "NotAction", "Resource", "NotResource"};
        for (size_t i = 0; i < 4; i++) {
            v = json_object_get(st, lists[i]);
            if (v && !is_str_or_str_array(v, 1))
                return -1;
        }
        v = json_object_get(st, "Sid");
        if (v && !json_is_string(v))
            return -1;
        if (json_object_get(st, "Principal") || json_object_get(st, "NotPrincipal"))
            *has_principal = 1;
        cond = json_object_get(st, "Condition");
        if (cond) {
            const char *opname;
            json_t *body;
            if (!json_is_object(cond))
                return -1;
            json_object_foreach(cond, opname, body)
            {
                const char *ck;
                json_t *cv;
                enum iam__set set;
                int ife;
                if (!json_is_object(body))
                    return -1;
                json_object_foreach(body, ck, cv)
                {
                    if (!is_cond_value(cv))
                        return -1;
                }
                if (!op_lookup(opname, &set, &ife) && json_object_size(body) > 0)
                    return -1;
            }
        }
    }
    return 0;
}

/* moto-compatible check of an ISO 8601 date as IAM's legacy parser accepts it. */
static int legacy_iso_ok(const char *s)
{
    char buf[128];
    char *t, *date, *time, *p;
    long long v;
    size_t n = strlen(s);
    if (n >= sizeof(buf))
        return 0;
    for (size_t i = 0; i <= n; i++)
        buf[i] = (char)lc((unsigned char)s[i]);
    t = strchr(buf, 't');
    date = buf;
    time = "";
    if (t) {
        *t = '\0';
        time = t + 1;
    }
    if (*date == '-')
        date++;
    /* date: year[-month[-day]] */
    int part = 0;
    for (p = date;; part++) {
        char *dash = strchr(p, '-');
        size_t len = dash ? (size_t)(dash - p) : strlen(p);
        if (part >= 3 || !parse_uint(p, len, &v))
            return 0;
        if (part == 0 && v > 292278993)
            return 0;
        if (part == 1 && (v < 1 || v > 12))
            return 0;
        if (part == 2 && (v < 1 || v > 31))
            return 0;
        if (!dash)
            break;
        p = dash + 1;
    }
    if (!*time)
        return 1;
    /* time: hh[:mm[:ss[.frac]][z|(+|-)hh[:mm]]] */
    char *c1 = strchr(time, ':');
    if (!parse_uint(time, c1 ? (size_t)(c1 - time) : strlen(time), &v) || v > 23)
        return 0;
    if (!c1)
        return 1;
    char *mm = c1 + 1, *c2 = strchr(mm, ':');
    if (!parse_uint(mm, c2 ? (size_t)(c2 - mm) : strlen(mm), &v) || v > 59)
        return 0;
    if (!c2)
        return 1;
    char *ss = c2 + 1, *tz = strpbrk(ss, "z+-");
    size_t sl = tz ? (size_t)(tz - ss) : strlen(ss);
    char *dot = memchr(ss, '.', sl);
    if (!parse_uint(ss, dot ? (size_t)(dot - ss) : sl, &v) || v > 59)
        return 0;
    if (dot) {
        size_t fl = sl - (size_t)(dot + 1 - ss);
        if (fl > 9 || !parse_uint(dot + 1, fl, &v))
            return 0;
    }
    if (!tz)
        return 1;
    if (*tz == 'z')
        return tz[1] == '\0';
    tz++;
    char *colon = strchr(tz, ':');
    size_t hl = colon ? (size_t)(colon - tz) : strlen(tz);
    if (hl != 2 || !parse_uint(tz, 2, &v) || v > 23)
        return 0;
    if (colon && (strlen(colon + 1) != 2 || !parse_uint(colon + 1, 2, &v) || v > 59))
        return 0;
    return 1;
}

static int legacy_date_ok(json_t *v)
{
    char num[64];
    const char *s;
    long long x;
    if (json_is_integer(v)) {
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        s = num;
    } else if (json_is_string(v)) {
        s = json_string_value(v);
    } else {
        return 0;
    }
    if (strchr(s, 't') || strchr(s, 'T') || strchr(s, '-'))
        return legacy_iso_ok(s);
    return parse_uint(s, strlen(s), &x) && x != LLONG_MAX;
}

/* The resource checks of the legacy parser: enough colons and a service. */
static int legacy_resource_ok(const char *r)
{
    const char *c1, *c2, *c3;
    if (strcmp(r, "*") == 0)
        return 1;
    if (!(count_char(r, ':') >= 5 || !strstr(r, "::")))
        return 0;
    c1 = strchr(r, ':');
    c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
        return 0;
    c3 = strchr(c2 + 1, ':');
    return (c3 ? (size_t)(c3 - c2 - 1) : strlen(c2 + 1)) > 0;
}

/* The format of one Resource; 0 ok, else writes IAM's message into msg. */
static int resource_format(const char *r, char *msg, size_t n)
{
    static const char *const iam_paths[] = {"user/",
                                            "federated-user/",
                                            "role/",
                                            "group/",
                                            "instance-profile/",
                                            "mfa/",
                                            "server-certificate/",
                                            "policy/",
                                            "sms-mfa/",
                                            "saml-provider/",
                                            "oidc-provider/",
                                            "report/",
                                            "access-report/"};
    const char *c1, *part, *c2, *svc, *c3, *after;
    if (strcmp(r, "*") == 0)
        return 0;
    c1 = strchr(r, ':');
    if (!c1) {
        snprintf(msg, n, "Resource %s must be in ARN format or \"*\".", r);
        return -1;
    }
    part = c1 + 1;
    c2 = strchr(part, ':');
    if ((c2 ? (size_t)(c2 - part) : strlen(part)) != 3 || strncmp(part, "aws", 3) != 0) {
        /* Partition "p" is not valid for resource "arn:p:a1:a2:a3:a4" */
        const char *f[4] = {"*", "*", "*", "*"};
        size_t fl[4] = {1, 1, 1, 1};
        size_t plen = c2 ? (size_t)(c2 - part) : strlen(part);
        if (c2) {
            const char *q = c2 + 1;
            for (int i = 0; i < 4; i++) {
                const char *c = strchr(q, ':');
                f[i] = q;
                fl[i] = (i < 3 && c) ? (size_t)(c - q) : strlen(q);
                if (i == 0 && fl[i] == 0 && !c) {
                    f[i] = "*";
                    fl[i] = 1;
                }
                if (i == 3 || !c) {
                    break;
                }
                q = c + 1;
            }
        }
        snprintf(msg, n,
                 "Partition \"%.*s\" is not valid for resource \"arn:%.*s:%.*s:%.*s:%.*s:%.*s\".",
                 (int)plen, part, (int)plen, part, (int)fl[0], f[0], (int)fl[1], f[1], (int)fl[2],
                 f[2], (int)fl[3], f[3]);
        return -1;
    }
    if (!c2) {
        snprintf(msg, n, "Resource vendor must be fully qualified and cannot contain regexes.");
        return -1;
    }
    svc = c2 + 1;
    c3 = strchr(svc, ':');
    after = c3 ? c3 + 1 : "";
    size_t svl = c3 ? (size_t)(c3 - svc) : strlen(svc);
    if (svl == 3 && strncmp(svc, "iam", 3) == 0 && *after != ':') {
        snprintf(msg, n, "IAM resource %s cannot contain region information.", r);
        return -1;
    }
    if (svl == 2 && strncmp(svc, "s3", 2) == 0 && *after != ':') {
        snprintf(msg, n, "Resource %s can not contain region information.", r);
        return -1;
    }
    if (svl == 3 && strncmp(svc, "iam", 3) == 0) {
        const char *acct = strchr(after, ':');
        const char *path = acct ? strchr(acct + 1, ':') : NULL;
        path = path ? path + 1 : "";
        if (strcmp(path, "*") == 0)
            return 0;
        for (size_t i = 0; i < sizeof(iam_paths) / sizeof(iam_paths[0]); i++) {
            if (strncmp(path, iam_paths[i], strlen(iam_paths[i])) == 0)
                return 0;
        }
        snprintf(msg, n,
                 "IAM resource path must either be \"*\" or start with user/, federated-user/, "
                 "role/, group/, instance-profile/, mfa/, server-certificate/, policy/, "
                 "sms-mfa/, saml-provider/, oidc-provider/, report/, access-report/.");
        return -1;
    }
    return 0;
}

/* The vendor prefix of one Action/NotAction; 0 ok, else writes IAM's message. */
static int action_format(const char *a, char *msg, size_t n)
{
    const char *colon = strchr(a, ':');
    if (!colon) {
        if (strcmp(a, "*") == 0)
            return 0;
        snprintf(msg, n,
                 "Actions/Conditions must be prefaced by a vendor, e.g., iam, sdb, ec2, etc.");
        return -1;
    }
    if (strchr(colon + 1, ':')) {
        snprintf(msg, n, "Actions/Condition can contain only one colon.");
        return -1;
    }
    size_t vl = (size_t)(colon - a);
    if (vl == 1 && a[0] == '*')
        return 0;
    for (size_t i = 0; i < vl; i++) {
        if (!isalnum((unsigned char)a[i]) && a[i] != '-' && a[i] != '.') {
            snprintf(msg, n, "Vendor %.*s is not valid", (int)vl, a);
            return -1;
        }
    }
    return 0;
}

/* Calls fn on each string of a string-or-array element; stops at the first failure. */
static int each_string(json_t *v, int (*fn)(const char *, char *, size_t), char *msg, size_t n)
{
    size_t i;
    json_t *e;
    if (!v)
        return 0;
    if (json_is_string(v))
        return fn(json_string_value(v), msg, n);
    json_array_foreach(v, i, e)
    {
        if (fn(json_string_value(e), msg, n) < 0)
            return -1;
    }
    return 0;
}

static int legacy_resource_fn(const char *r, char *msg, size_t n)
{
    (void)msg;
    (void)n;
    return legacy_resource_ok(r) ? 0 : -1;
}

static int nonempty(json_t *v)
{
    return v && (!json_is_array(v) || json_array_size(v) > 0);
}

/* Stages 2..8. Returns 0, or -1 with the message in msg. */
static int check_semantics(json_t *root, unsigned flags, char *msg, size_t n)
{
    json_t *stmts = json_object_get(root, "Statement");
    json_t *ver = json_object_get(root, "Version");
    size_t ns = stmt_count(stmts);
    char rmsg[1024] = "";
    int rerr = 0;

    if ((flags & IAM_PARSE_MANAGED) &&
        !(ver && strcmp(json_string_value(ver), "2012-10-17") == 0)) {
        snprintf(msg, n, "Policy document must be version 2012-10-17 or greater.");
        return -1;
    }
    /* legacy parsing: exact Effect, date values; then resources unless a format error */
    for (size_t s = 0; s < ns; s++) {
        json_t *st = stmt_at(stmts, s), *cond = json_object_get(st, "Condition"), *body;
        const char *eff = json_string_value(json_object_get(st, "Effect"));
        const char *opname;
        if (strcmp(eff, "Allow") != 0 && strcmp(eff, "Deny") != 0)
            goto legacy;
        json_object_foreach(cond, opname, body)
        {
            enum iam__set set;
            int ife;
            const struct iam__opdef *op = op_lookup(opname, &set, &ife);
            const char *ck;
            json_t *cv;
            if (!op || op->kind < K_DATE_EQ || op->kind > K_DATE_GE)
                continue;
            json_object_foreach(body, ck, cv)
            {
                size_t i;
                json_t *e;
                if (!json_is_array(cv)) {
                    if (!legacy_date_ok(cv))
                        goto legacy;
                    continue;
                }
                json_array_foreach(cv, i, e)
                {
                    if (!legacy_date_ok(e))
                        goto legacy;
                }
            }
        }
    }
    for (size_t s = 0; s < ns; s++) {
        json_t *st = stmt_at(stmts, s);
        static const char *const rk[] = {"Resource", "NotResource"};
        for (int k = 0; k < 2; k++) {
            json_t *v = json_object_get(st, rk[k]);
            if (!rerr && each_string(v, resource_format, rmsg, sizeof(rmsg)) < 0)
                rerr = 1;
            if (!rerr && each_string(v, legacy_resource_fn, NULL, 0) < 0)
                goto legacy;
        }
    }
    /* Sid uniqueness */
    for (size_t s = 0; s < ns; s++) {
        const char *a = json_string_value(json_object_get(stmt_at(stmts, s), "Sid"));
        if (!a || !*a)
            continue;
        for (size_t t = s + 1; t < ns; t++) {
            const char *b = json_string_value(json_object_get(stmt_at(stmts, t), "Sid"));
            if (b && strcmp(a, b) == 0) {
                snprintf(msg, n, "Statement IDs (SID) in a single policy must be unique.");
                return -1;
            }
        }
    }
    for (size_t s = 0; s < ns; s++) {
        json_t *st = stmt_at(stmts, s);
        if (!nonempty(json_object_get(st, "Action")) &&
            !nonempty(json_object_get(st, "NotAction"))) {
            snprintf(msg, n, "Policy statement must contain actions.");
            return -1;
        }
    }
    for (size_t s = 0; s < ns; s++) {
        json_t *st = stmt_at(stmts, s);
        if (!nonempty(json_object_get(st, "Resource")) &&
            !nonempty(json_object_get(st, "NotResource"))) {
            snprintf(msg, n, "Policy statement must contain resources.");
            return -1;
        }
    }
    if (rerr) {
        snprintf(msg, n, "%s", rmsg);
        return -1;
    }
    static const char *const ak[] = {"Action", "NotAction"};
    for (int k = 0; k < 2; k++) {
        for (size_t s = 0; s < ns; s++) {
            if (each_string(json_object_get(stmt_at(stmts, s), ak[k]), action_format, msg, n) < 0)
                return -1;
        }
    }
    return 0;
legacy:
    snprintf(msg, n, IAM__LEGACY);
    return -1;
}

/* ---------------------------------------------------------------------------------------- */
/* compilation into the arena */

static int compile_str(struct iam_policy *p, const char *s, struct iam__str *out)
{
    out->s = arena_strdup(&p->arena, s);
    out->vars = p->v2012 && strstr(s, "${") != NULL;
    return out->s ? 0 : -1;
}

static int compile_list(struct iam_policy *p, json_t *v, struct iam__str **out, size_t *nout)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    *out = arena_alloc(&p->arena, n * sizeof(**out));
    *nout = n;
    if (!*out)
        return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (compile_str(p, json_string_value(e), &(*out)[i]) < 0)
            return -1;
    }
    return 0;
}

static int scalar_text(json_t *v, char *buf, size_t n, const char **out)
{
    if (json_is_string(v)) {
        *out = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *out = buf;
    } else if (json_is_real(v)) {
        snprintf(buf, n, "%.17g", json_real_value(v));
        *out = buf;
    } else {
        *out = json_is_true(v) ? "true" : "false";
    }
    return 0;
}

static int compile_cond(struct iam_policy *p, json_t *cond, struct iam__stmt *st)
{
    const char *opname;
    json_t *body;
    size_t n = 0;
    st->nconds = 0;
    st->conds = NULL;
    if (!cond)
        return 0;
    st->conds = arena_alloc(&p->arena, (json_object_size(cond) + 1) * sizeof(*st->conds));
    if (!st->conds)
        return -1;
    json_object_foreach(cond, opname, body)
    {
        struct iam__cond *c = &st->conds[n];
        const char *ck;
        json_t *cv;
        size_t k = 0;
        c->op = op_lookup(opname, &c->set, &c->if_exists);
        if (!c->op || json_object_size(body) == 0)
            continue; /* an unknown operator with an empty body is accepted and ignored */
        c->keys = arena_alloc(&p->arena, json_object_size(body) * sizeof(*c->keys));
        if (!c->keys)
            return -1;
        json_object_foreach(body, ck, cv)
        {
            struct iam__ckey *key = &c->keys[k++];
            size_t nv = json_is_array(cv) ? json_array_size(cv) : 1;
            key->key = arena_strdup(&p->arena, ck);
            key->values = arena_alloc(&p->arena, (nv ? nv : 1) * sizeof(*key->values));
            key->nvalues = nv;
            if (!key->key || !key->values)
                return -1;
            for (size_t i = 0; i < nv; i++) {
                char num[64];
                const char *text;
                scalar_text(json_is_array(cv) ? json_array_get(cv, i) : cv, num, sizeof(num),
                            &text);
                if (compile_str(p, text, &key->values[i]) < 0)
                    return -1;
                if (c->op->kind == K_NULL)
                    key->values[i].vars = 0;
            }
        }
        c->nkeys = k;
        n++;
    }
    st->nconds = n;
    return 0;
}

static int compile(struct iam_policy *p, json_t *root)
{
    json_t *stmts = json_object_get(root, "Statement");
    json_t *ver = json_object_get(root, "Version");
    p->v2012 = ver && strcmp(json_string_value(ver), "2012-10-17") == 0;
    p->nstmts = stmt_count(stmts);
    p->stmts = arena_alloc(&p->arena, p->nstmts * sizeof(*p->stmts));
    if (!p->stmts)
        return -1;
    for (size_t s = 0; s < p->nstmts; s++) {
        json_t *js = stmt_at(stmts, s), *v;
        struct iam__stmt *st = &p->stmts[s];
        const char *sid = json_string_value(json_object_get(js, "Sid"));
        st->sid = arena_strdup(&p->arena, sid ? sid : "");
        if (!st->sid)
            return -1;
        st->deny = strcmp(json_string_value(json_object_get(js, "Effect")), "Deny") == 0;
        v = json_object_get(js, "Action");
        st->not_action = v == NULL;
        if (!v)
            v = json_object_get(js, "NotAction");
        if (compile_list(p, v, &st->actions, &st->nactions) < 0)
            return -1;
        v = json_object_get(js, "Resource");
        st->not_resource = v == NULL;
        if (!v)
            v = json_object_get(js, "NotResource");
        if (compile_list(p, v, &st->resources, &st->nresources) < 0)
            return -1;
        if (compile_cond(p, json_object_get(js, "Condition"), st) < 0)
            return -1;
    }
    return 0;
}

int iam_policy_parse_ex(const char *json, size_t len, unsigned flags, struct iam_policy **out,
                        struct ty_err *err)
{
    struct iam_policy *p = NULL;
    json_t *root = NULL;
    json_error_t jerr;
    char msg[1024];
    int has_principal = 0, rc;

    if (!json || !out)
        return ty_err_set(err, TY_EINVAL, IAM__FIELD, "policy document is required");
    if (len == 0 || len > IAM_MAX_DOC_BYTES)
        return ty_err_set(err, TY_EINVAL, IAM__FIELD,
                          "1 validation error detected: Value at 'policyDocument' failed to "
                          "satisfy constraint: Member must have length %s",
                          len == 0 ? "greater than or equal to 1" : "less than or equal to 131072");
    if (!doc_charset_ok(json, len))
        return ty_err_set(err, TY_EINVAL, IAM__FIELD,
                          "1 validation error detected: Value at 'policyDocument' failed to "
                          "satisfy constraint: Member must satisfy regular expression pattern: "
                          "[\\u0009\\u000A\\u000D\\u0020-\\u00FF]+");
    if (iam_policy_chars(json, len) > IAM_MAX_CHARS)
        return ty_err_set(err, TY_ELIMIT, IAM__FIELD, "Cannot exceed quota for PolicySize: %d",
                          IAM_MAX_CHARS);
    if (!json_depth_ok(json, len, IAM_MAX_DEPTH))
        return ty_err_set(err, TY_EMALFORMED, IAM__FIELD, IAM__SYNTAX);
    root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ty_err_set(err, TY_EMALFORMED, IAM__FIELD, IAM__SYNTAX);
    if (check_grammar(root, &has_principal) < 0) {
        rc = ty_err_set(err, TY_EMALFORMED, IAM__FIELD, IAM__SYNTAX);
        goto fail;
    }
    if (has_principal) {
        rc = ty_err_set(err, TY_EMALFORMED, IAM__FIELD,
                        "Policy document should not specify a principal.");
        goto fail;
    }
    if (check_semantics(root, flags, msg, sizeof(msg)) < 0) {
        rc = ty_err_set(err, TY_EMALFORMED, IAM__FIELD, "%s", msg);
        goto fail;
    }
    p = calloc(1, sizeof(*p));
    if (!p || compile(p, root) < 0) {
        rc = ty_err_set(err, TY_ENOMEM, IAM__FIELD, "out of memory");
        goto fail;
    }
    json_decref(root);
    *out = p;
    return 0;
fail:
    iam_policy_free(p);
    json_decref(root);
    return rc;
}

int iam_policy_parse(const char *json, size_t len, struct iam_policy **out, struct ty_err *err)
{
    return iam_policy_parse_ex(json, len, 0, out, err);
}

void iam_policy_free(struct iam_policy *p)
{
    if (!p)
        return;
    arena_free(&p->arena);
    free(p);
}

size_t iam_policy_nstatements(const struct iam_policy *p)
{
    return p ? p->nstmts : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* AccessDenied */

int iam_denial_message(char *buf, size_t n, const char *principal_arn, const char *action,
                       const char *resource, enum iam_decision d, const char *policy_arn)
{
    char on[1200] = "";
    action = action ? action : "";
    if (resource && *resource && strcmp(resource, "*") != 0)
        snprintf(on, sizeof(on), " on resource: %s", resource);
    if (d == IAM_DENY_EXPLICIT)
        return snprintf(buf, n,
                        "User: %s is not authorized to perform: %s%s with an explicit deny in "
                        "an identity-based policy%s%s",
                        principal_arn ? principal_arn : "", action, on,
                        policy_arn && *policy_arn ? ": " : "", policy_arn ? policy_arn : "");
    return snprintf(buf, n,
                    "User: %s is not authorized to perform: %s%s because no identity-based "
                    "policy allows the %s action",
                    principal_arn ? principal_arn : "", action, on, action);
}

int iam_deny_error(struct ty_err *err, const char *principal_arn, const struct iam_request *req,
                   enum iam_decision d, const char *policy_arn)
{
    char msg[sizeof(err->msg)];
    iam_denial_message(msg, sizeof(msg), principal_arn, req ? req->action : NULL,
                       req ? req->resource : NULL, d, policy_arn);
    return ty_err_set(err, TY_EDENIED, "", "%s", msg);
}

/* ---- trust policies ---- */

/* Whether the Principal (or NotPrincipal) value p names service: "*", {"AWS": "*"} or
   {"Service": service}. -1 when p is not a valid principal element. */
static int trust_principal_names(json_t *p, const char *service)
{
    const char *k;
    json_t *v;
    int found = 0;

    if (json_is_string(p))
        return strcmp(json_string_value(p), "*") == 0 ? 1 : -1;
    if (!json_is_object(p) || json_object_size(p) == 0)
        return -1;
    json_object_foreach(p, k, v)
    {
        size_t i, n = json_is_array(v) ? json_array_size(v) : 1;
        if (strcmp(k, "AWS") != 0 && strcmp(k, "Service") != 0 && strcmp(k, "Federated") != 0 &&
            strcmp(k, "CanonicalUser") != 0)
            return -1;
        if (!is_str_or_str_array(v, 1))
            return -1;
        for (i = 0; i < n; i++) {
            const char *s = json_string_value(json_is_array(v) ? json_array_get(v, i) : v);
            if (!s || !*s)
                return -1;
            if (strcmp(k, "AWS") == 0 && strcmp(s, "*") == 0)
                found = 1;
            if (service && strcmp(k, "Service") == 0 && strcmp(s, service) == 0)
                found = 1;
        }
    }
    return found;
}

int iam_trust_check(const char *json, size_t len, const char *service, const char *action,
                    const struct iam_ctx_entry *ctx, size_t nctx, int *allowed, struct ty_err *err)
{
    json_t *root = NULL, *stmts, *all = NULL, *mine = NULL, *doc = NULL;
    struct iam_policy *p = NULL;
    json_error_t jerr;
    char *text = NULL;
    int rc = 0;

    if (allowed)
        *allowed = 0;
    if (!json || len == 0 || len > IAM_MAX_DOC_BYTES)
        return ty_err_set(err, TY_EINVAL, "AssumeRolePolicyDocument",
                          "1 validation error detected: Value at 'assumeRolePolicyDocument' "
                          "failed to satisfy constraint: Member must have length %s",
                          len == 0 ? "greater than or equal to 1" : "less than or equal to 131072");
    if (iam_policy_chars(json, len) > IAM_MAX_CHARS_TRUST)
        return ty_err_set(err, TY_ELIMIT, "AssumeRolePolicyDocument",
                          "Cannot exceed quota for ACLSizePerRole: %d", IAM_MAX_CHARS_TRUST);
    if (!json_depth_ok(json, len, IAM_MAX_DEPTH) ||
        !(root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr)) || !json_is_object(root))
        goto syntax;
    stmts = json_object_get(root, "Statement");
    if (!stmts || !(json_is_object(stmts) || json_is_array(stmts)) ||
        (json_is_array(stmts) && json_array_size(stmts) == 0))
        goto syntax;
    all = json_array();
    mine = json_array();
    if (!all || !mine) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < stmt_count(stmts); i++) {
        json_t *st = stmt_at(stmts, i), *pr, *np, *copy;
        int names;
        if (!json_is_object(st))
            goto syntax;
        pr = json_object_get(st, "Principal");
        np = json_object_get(st, "NotPrincipal");
        if (!pr && !np) {
            rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument",
                            "Missing required field Principal");
            goto done;
        }
        if (json_object_get(st, "Resource") || json_object_get(st, "NotResource")) {
            rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument",
                            "Has prohibited field Resource");
            goto done;
        }
        if (pr && np)
            goto syntax;
        names = trust_principal_names(pr ? pr : np, service);
        if (names < 0) {
            rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument",
                            "Invalid principal in policy");
            goto done;
        }
        copy = json_deep_copy(st);
        if (!copy) {
            rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            goto done;
        }
        json_object_del(copy, "Principal");
        json_object_del(copy, "NotPrincipal");
        json_object_set_new(copy, "Resource", json_string("*"));
        if (pr ? names : !names)
            json_array_append(mine, copy);
        json_array_append_new(all, copy);
    }
    /* the statements without their principals are identity statements: IAM's checks */
    doc = json_object();
    if (json_object_get(root, "Version"))
        json_object_set(doc, "Version", json_object_get(root, "Version"));
    json_object_set(doc, "Statement", all);
    text = json_dumps(doc, JSON_COMPACT);
    if (!text) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    rc = iam_policy_parse(text, strlen(text), &p, err);
    if (rc) {
        if (err && (rc == -TY_EMALFORMED || rc == -TY_EINVAL))
            snprintf(err->field, sizeof(err->field), "AssumeRolePolicyDocument");
        goto done;
    }
    iam_policy_free(p);
    p = NULL;
    if (!service || !allowed || json_array_size(mine) == 0)
        goto done;
    free(text);
    json_object_set(doc, "Statement", mine);
    text = json_dumps(doc, JSON_COMPACT);
    if (!text || iam_policy_parse(text, strlen(text), &p, err) != 0) {
        rc = text && err ? -err->code : ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    {
        struct iam_request req = {action ? action : "sts:AssumeRole", "*", ctx, nctx};
        const struct iam_policy *pp = p;
        *allowed = iam_evaluate(&pp, 1, &req) == IAM_ALLOW;
    }
    goto done;
syntax:
    rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument", IAM__SYNTAX);
done:
    iam_policy_free(p);
    free(text);
    json_decref(doc);
    json_decref(all);
    json_decref(mine);
    json_decref(root);
    return rc;
}
