/*
 * iam_eval.c - evaluating compiled policies against a request: typed values for the
 * condition operators (numbers, dates, IP addresses), each operator and set qualifier
 * (ForAnyValue/ForAllValues, ...IfExists, Null), the statements, and the explicit deny >
 * allow > implicit deny decision (iam_evaluate, iam_evaluate_ex).
 *
 * Does not own the policies nor the request (borrowed). Writes only to its own stack and to
 * buffers it allocates, so any number of threads may evaluate the same policies.
 */
#include "iam_int.h"
#include "ty_net.h"

#include <errno.h>
#include <string.h>

#define IAM__RESOLVE_MAX (1024u * 1024u) /* ceiling on a pattern after variable resolution */

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
    if (!iam__parse_uint(*p, (size_t)n, v))
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
    if (iam__parse_uint(s, n, &v)) {
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

/* ---------------------------------------------------------------------------------------- */
/* condition evaluation */

/* Typed form of a context value; 0 when it does not parse for the operator's type. */
struct iam__typed {
    double num;
    struct iam__time t;
    struct ty_cidr ip;
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
        return ty_cidr_parse(v, policy_side, &out->ip);
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
        return iam__ieq(cv, pv);
    case K_STR_LIKE:
        return iam__glob_match(pv, strlen(pv), cv, strlen(cv), 0, esc);
    case K_ARN:
        return iam__arn_match(pv, strlen(pv), cv, strlen(cv), esc);
    case K_IP:
        return typed_parse(k, pv, &pt, 1) && ty_cidr_has(&pt.ip, &ct->ip);
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
            int r = iam__resolve(pv, wild, ev->req, &ev->buf);
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
    const struct iam_ctx_entry *e = iam__ctx_find(ev->req, ck->key, strlen(ck->key));
    size_t present = iam__ctx_count(e);
    int neg = c->op->negated;

    if (c->op->kind == K_NULL) {
        for (size_t i = 0; i < ck->nvalues; i++) {
            const char *pv = ck->values[i].s;
            if ((iam__ieq(pv, "true") && !present) || (iam__ieq(pv, "false") && present))
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
        const char *cv = iam__ctx_value(e, i);
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

/*
 * 1 applies, 0 not, -1 out of memory. A policy variable without a value (a tag the principal
 * does not have, a key the request lacks) never makes a Deny fail to apply and never makes an
 * Allow apply: in a Resource or NotResource entry it matches whatever keeps a Deny in force
 * (everything in Resource, nothing in NotResource) or an Allow out of force (the reverse), the
 * other entries deciding as usual; in a condition value, the condition holds for a Deny and
 * fails for an Allow. AWS calls such a statement "possibly invalid"; this is the reading that
 * keeps every Deny (docs/iam.md).
 */
static int eval_stmt(struct iam__eval *ev, const struct iam__stmt *st)
{
    const struct iam_request *req = ev->req;
    const char *act = req->action ? req->action : "";
    const char *res = req->resource ? req->resource : "";
    int m = 0;

    for (size_t i = 0; i < st->nactions && !m; i++) {
        const char *p = st->actions[i].s;
        m = iam__glob_match(p, strlen(p), act, strlen(act), 1, 0);
    }
    if (m == st->not_action)
        return 0;

    m = 0;
    for (size_t i = 0; i < st->nresources; i++) {
        const char *p = st->resources[i].s;
        int esc = 0;
        if (st->resources[i].vars) {
            int r = iam__resolve(p, 1, req, &ev->buf);
            if (r < 0)
                return -1;
            if (r > 0) { /* no value: the entry matches what keeps a Deny, drops an Allow */
                if (st->deny != st->not_resource)
                    m = 1;
                continue;
            }
            p = ev->buf.data;
            esc = 1;
        }
        if (!m && iam__arn_match(p, strlen(p), res, strlen(res), esc))
            m = 1;
    }
    if (m == st->not_resource)
        return 0;

    for (size_t i = 0; i < st->nconds; i++) {
        const struct iam__cond *c = &st->conds[i];
        for (size_t k = 0; k < c->nkeys; k++) {
            int r = eval_key(ev, c, &c->keys[k]);
            if (r == -2) /* a variable without a value: holds for a Deny, fails an Allow */
                r = st->deny ? 1 : 0;
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
