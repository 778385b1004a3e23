/*
 * iam_validate.c - IAM's validation of a policy document before it is compiled, in IAM's
 * order of checks and wording as recorded against CreatePolicy (moto's
 * test_iam_policies.py): character set and depth (a flat pre-scan before jansson sees the
 * text), grammar, version, legacy parsing, Sid uniqueness, actions present, resources
 * present, resource formats, action vendors; the first failing stage gives the message. The
 * principal check (identity policies only) is placed right after the grammar. Also the
 * condition operators' table (iam__op_lookup).
 *
 * Does not own compiling (iam.c). Pure: no state.
 */
#include "iam_int.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

#define IAM__LEGACY "The policy failed legacy parsing"

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
int iam__json_depth_ok(const char *s, size_t n, int limit)
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
int iam__doc_charset_ok(const char *doc, size_t n)
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

int iam__is_str_or_str_array(json_t *v, int allow_empty)
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
const struct iam__opdef *iam__op_lookup(const char *name, enum iam__set *set, int *if_exists)
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

json_t *iam__stmt_at(json_t *stmts, size_t i)
{
    return json_is_array(stmts) ? json_array_get(stmts, i) : stmts;
}

size_t iam__stmt_count(json_t *stmts)
{
    return json_is_array(stmts) ? json_array_size(stmts) : 1;
}

/* Stage 1: the grammar. 0 ok, else -1. */
int iam__check_grammar(json_t *root, int *has_principal)
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
    for (size_t s = 0; s < iam__stmt_count(stmts); s++) {
        json_t *st = iam__stmt_at(stmts, s), *eff, *cond;
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
        if (!json_is_string(eff) || !(iam__ieq(json_string_value(eff), "Allow") ||
                                      iam__ieq(json_string_value(eff), "Deny")))
            return -1;
        static const char *const lists[] = {"Action", "NotAction", "Resource", "NotResource"};
        for (size_t i = 0; i < 4; i++) {
            v = json_object_get(st, lists[i]);
            if (v && !iam__is_str_or_str_array(v, 1))
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
                if (!iam__op_lookup(opname, &set, &ife) && json_object_size(body) > 0)
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
        buf[i] = (char)iam__lc((unsigned char)s[i]);
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
        if (part >= 3 || !iam__parse_uint(p, len, &v))
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
    if (!iam__parse_uint(time, c1 ? (size_t)(c1 - time) : strlen(time), &v) || v > 23)
        return 0;
    if (!c1)
        return 1;
    char *mm = c1 + 1, *c2 = strchr(mm, ':');
    if (!iam__parse_uint(mm, c2 ? (size_t)(c2 - mm) : strlen(mm), &v) || v > 59)
        return 0;
    if (!c2)
        return 1;
    char *ss = c2 + 1, *tz = strpbrk(ss, "z+-");
    size_t sl = tz ? (size_t)(tz - ss) : strlen(ss);
    char *dot = memchr(ss, '.', sl);
    if (!iam__parse_uint(ss, dot ? (size_t)(dot - ss) : sl, &v) || v > 59)
        return 0;
    if (dot) {
        size_t fl = sl - (size_t)(dot + 1 - ss);
        if (fl > 9 || !iam__parse_uint(dot + 1, fl, &v))
            return 0;
    }
    if (!tz)
        return 1;
    if (*tz == 'z')
        return tz[1] == '\0';
    tz++;
    char *colon = strchr(tz, ':');
    size_t hl = colon ? (size_t)(colon - tz) : strlen(tz);
    if (hl != 2 || !iam__parse_uint(tz, 2, &v) || v > 23)
        return 0;
    if (colon && (strlen(colon + 1) != 2 || !iam__parse_uint(colon + 1, 2, &v) || v > 59))
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
    return iam__parse_uint(s, strlen(s), &x) && x != LLONG_MAX;
}

/* The resource checks of the legacy parser: enough colons and a service. */
static int legacy_resource_ok(const char *r)
{
    const char *c1, *c2, *c3;
    if (strcmp(r, "*") == 0)
        return 1;
    if (!(iam__count_char(r, ':') >= 5 || !strstr(r, "::")))
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
int iam__check_semantics(json_t *root, unsigned flags, char *msg, size_t n)
{
    json_t *stmts = json_object_get(root, "Statement");
    json_t *ver = json_object_get(root, "Version");
    size_t ns = iam__stmt_count(stmts);
    char rmsg[1024] = "";
    int rerr = 0;

    if ((flags & IAM_PARSE_MANAGED) &&
        !(ver && strcmp(json_string_value(ver), "2012-10-17") == 0)) {
        snprintf(msg, n, "Policy document must be version 2012-10-17 or greater.");
        return -1;
    }
    /* legacy parsing: exact Effect, date values; then resources unless a format error */
    for (size_t s = 0; s < ns; s++) {
        json_t *st = iam__stmt_at(stmts, s), *cond = json_object_get(st, "Condition"), *body;
        const char *eff = json_string_value(json_object_get(st, "Effect"));
        const char *opname;
        if (strcmp(eff, "Allow") != 0 && strcmp(eff, "Deny") != 0)
            goto legacy;
        json_object_foreach(cond, opname, body)
        {
            enum iam__set set;
            int ife;
            const struct iam__opdef *op = iam__op_lookup(opname, &set, &ife);
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
        json_t *st = iam__stmt_at(stmts, s);
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
        const char *a = json_string_value(json_object_get(iam__stmt_at(stmts, s), "Sid"));
        if (!a || !*a)
            continue;
        for (size_t t = s + 1; t < ns; t++) {
            const char *b = json_string_value(json_object_get(iam__stmt_at(stmts, t), "Sid"));
            if (b && strcmp(a, b) == 0) {
                snprintf(msg, n, "Statement IDs (SID) in a single policy must be unique.");
                return -1;
            }
        }
    }
    for (size_t s = 0; s < ns; s++) {
        json_t *st = iam__stmt_at(stmts, s);
        if (!nonempty(json_object_get(st, "Action")) &&
            !nonempty(json_object_get(st, "NotAction"))) {
            snprintf(msg, n, "Policy statement must contain actions.");
            return -1;
        }
    }
    for (size_t s = 0; s < ns; s++) {
        json_t *st = iam__stmt_at(stmts, s);
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
            if (each_string(json_object_get(iam__stmt_at(stmts, s), ak[k]), action_format, msg, n) <
                0)
                return -1;
        }
    }
    return 0;
legacy:
    snprintf(msg, n, IAM__LEGACY);
    return -1;
}
