/*
 * iamapi.c - the IAM query API (iamapi.h).
 *
 * Flow of one call: decode the form (query string, then body) -> find the action -> validate
 * its parameters with IAM's messages -> authorise (authz_request) -> the handler, which
 * writes the <Result> members into an XML buffer -> the envelope. Every text that reaches the
 * XML is escaped (xml_esc); every buffer has a ceiling.
 */
#include "iamapi.h"

#include <ctype.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth.h"
#include "authz.h"
#include "console_login.h"
#include "iam.h"
#include "store_iam.h"
#include "ty_buf.h"
#include "ty_codec.h"
#include "ty_log.h"
#include "ty_rand.h"

#define IAM_NS        "https://iam.amazonaws.com/doc/2010-05-08/"
#define IAM_RESP_MAX  (4u * 1024u * 1024u)
#define IAM_MAX_PARAM 512
#define IAM_MAX_LIST  100 /* list members (Tags.member.N): IAM lists hold at most 50 */

/* One verified call: who calls, where. */
struct iamapi__call {
    struct http_request *req;
    struct store *store;
    const char *account_id;
    const char *region;
    const char *principal_arn;
};

/* ---- form decoding ---- */

/* Percent-decodes s[0..n) ('+' is a space) into a new string; NULL on a bad escape. */
static char *iamapi_unescape(const char *s, size_t n, size_t *outlen)
{
    char *o = malloc(n + 1);
    if (o && ty_pct_decode(s, n, TY_PCT_PLUS_SPACE, o, n + 1, outlen) != 0) {
        free(o);
        return NULL;
    }
    return o;
}

/* Sets list[idx-1][field] (field NULL: the element itself) in the array `name` of into. */
static int iamapi_list_set(json_t *into, const char *name, long idx, const char *field, json_t *v)
{
    json_t *arr = json_object_get(into, name);
    if (!arr) {
        arr = json_array();
        /* steals arr even when it fails (a key that is not UTF-8) */
        if (!arr || json_object_set_new(into, name, arr) != 0) {
            json_decref(v);
            return -1;
        }
    }
    if (!json_is_array(arr) || !v) { /* "Tags=x" then "Tags.member.1.Key=y", or not UTF-8 */
        json_decref(v);
        return -1;
    }
    while (json_array_size(arr) < (size_t)idx)
        json_array_append_new(arr, field ? json_object() : json_null());
    if (field) {
        json_t *o = json_array_get(arr, (size_t)idx - 1);
        if (!json_is_object(o)) {
            json_decref(v);
            return -1;
        }
        json_object_set_new(o, field, v);
        return 0;
    }
    json_array_set_new(arr, (size_t)idx - 1, v);
    return 0;
}

/* "Tags.member.3.Key" -> list "Tags", 3, field "Key"; returns 1 when name is such a member. */
static int iamapi_member(const char *name, char *list, size_t ln, long *idx, const char **field)
{
    const char *m = strstr(name, ".member.");
    char *end;
    if (!m || (size_t)(m - name) >= ln || m == name)
        return 0;
    memcpy(list, name, (size_t)(m - name));
    list[m - name] = '\0';
    *idx = strtol(m + 8, &end, 10);
    if (end == m + 8)
        return -1;
    if (*end == '\0')
        *field = NULL;
    else if (*end == '.' && end[1])
        *field = end + 1;
    else
        return -1;
    return 1;
}

json_t *op_iamapi_form(json_t *into, const char *text, size_t len, struct ty_err *err)
{
    size_t i = 0, nparams = 0;
    json_t *o = into ? into : json_object();
    if (!o) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    while (text && i < len) {
        size_t start = i, eq, klen, vlen;
        char *k, *v, list[64];
        const char *field = NULL;
        long idx = 0;
        int m;
        while (i < len && text[i] != '&')
            i++;
        if (i == start) {
            i++;
            continue;
        }
        if (++nparams > IAM_MAX_PARAM) {
            ty_err_set(err, TY_EINVAL, NULL, "Too many parameters in the request.");
            goto fail;
        }
        for (eq = start; eq < i && text[eq] != '='; eq++)
            ;
        k = iamapi_unescape(text + start, eq - start, &klen);
        v = eq < i ? iamapi_unescape(text + eq + 1, i - eq - 1, &vlen) : strdup("");
        if (eq >= i)
            vlen = 0;
        if (i < len)
            i++;
        if (!k || !v || strlen(k) != klen) {
            free(k);
            free(v);
            ty_err_set(err, TY_EINVAL, NULL, "Malformed query string parameter.");
            goto fail;
        }
        m = iamapi_member(k, list, sizeof(list), &idx, &field);
        if (m < 0 || (m > 0 && (idx < 1 || idx > IAM_MAX_LIST))) {
            ty_err_set(err, TY_EINVAL, "Tags", "Invalid list index in parameter %.100s.", k);
            free(k);
            free(v);
            goto fail;
        }
        if (m > 0) {
            if (iamapi_list_set(o, list, idx, field, json_stringn(v, vlen)) != 0) {
                ty_err_set(err, TY_EINVAL, NULL, "Malformed list parameter %.100s.", k);
                free(k);
                free(v);
                goto fail;
            }
        } else {
            json_t *s = json_stringn(v, vlen);
            if (!s) { /* not UTF-8 */
                ty_err_set(err, TY_EINVAL, NULL, "Parameter %.100s is not valid UTF-8.", k);
                free(k);
                free(v);
                goto fail;
            }
            json_object_set_new(o, k, s);
        }
        free(k);
        free(v);
    }
    return o;
fail:
    if (!into)
        json_decref(o);
    return NULL;
}

/* ---- XML ---- */

/* Appends s XML-escaped (ty_buf_put_xml). */
static void xml_esc(struct ty_buf *b, const char *s)
{
    ty_buf_put_xml(b, s);
}

/* <tag>escaped value</tag> */
static void xml_el(struct ty_buf *b, const char *tag, const char *value)
{
    ty_buf_printf(b, "<%s>", tag);
    xml_esc(b, value);
    ty_buf_printf(b, "</%s>", tag);
}

static void iamapi_iso(double t, char *buf, size_t n)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void xml_date(struct ty_buf *b, const char *tag, double t)
{
    char when[40];
    iamapi_iso(t, when, sizeof(when));
    xml_el(b, tag, when);
}

/* Percent-encodes everything but RFC 3986's unreserved characters (as IAM returns documents). */
static void iamapi_urlencode(struct ty_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            ty_buf_append(b, &c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            ty_buf_append(b, e, 3);
        }
    }
}

/* ---- errors ---- */

struct iamapi__errmap {
    int code;
    const char *name;
    int status;
    const char *type;
};

static const struct iamapi__errmap iamapi_errs[] = {
    {TY_ENOTFOUND, "NoSuchEntity", 404, "Sender"},
    {TY_EINUSE, "EntityAlreadyExists", 409, "Sender"},
    {TY_ECONFLICT, "DeleteConflict", 409, "Sender"},
    {TY_ELIMIT, "LimitExceeded", 409, "Sender"},
    {TY_EMALFORMED, "MalformedPolicyDocument", 400, "Sender"},
    {TY_EINVAL, "ValidationError", 400, "Sender"},
    {TY_EPWPOLICY, "PasswordPolicyViolation", 400, "Sender"},
    {TY_EUSERTYPE, "InvalidUserType", 400, "Sender"},
    {TY_ETOOBIG, "ValidationError", 400, "Sender"},
    {TY_EDENIED, "AccessDenied", 403, "Sender"},
    {TY_EUNKNOWNOP, "InvalidAction", 400, "Sender"},
    {TY_ESERIAL, "MalformedQueryString", 400, "Sender"},
    {TY_EREDIS, "ServiceUnavailable", 503, "Receiver"},
    {TY_EBADKEY, "InvalidClientTokenId", 403, "Sender"},
    {TY_EEXPIREDTOKEN, "ExpiredToken", 400, "Sender"},
    {TY_EBADSIG, "SignatureDoesNotMatch", 403, "Sender"},
    {TY_ENOAUTH, "MissingAuthenticationToken", 403, "Sender"},
};

static void iamapi_error(const struct iamapi__call *c, struct http_response *resp,
                         const struct ty_err *err)
{
    const struct iamapi__errmap *m = NULL;
    struct ty_buf b;
    for (size_t i = 0; i < sizeof(iamapi_errs) / sizeof(iamapi_errs[0]); i++)
        if (iamapi_errs[i].code == err->code)
            m = &iamapi_errs[i];
    ty_buf_init(&b, 16384);
    ty_buf_printf(&b, "<ErrorResponse xmlns=\"%s\"><Error><Type>%s</Type><Code>%s</Code>", IAM_NS,
                  m ? m->type : "Receiver", m ? m->name : "ServiceFailure");
    xml_el(&b, "Message", err->msg[0] ? err->msg : ty_strerror(err->code));
    ty_buf_puts(&b, "</Error>");
    xml_el(&b, "RequestId", c->req->request_id);
    ty_buf_puts(&b, "</ErrorResponse>");
    resp->status = m ? m->status : 500;
    resp->content_type = "text/xml";
    resp->len = b.len;
    resp->body = ty_buf_steal(&b);
    http_response_header(resp, "x-amzn-RequestId", c->req->request_id);
    ty_log(TY_LOG_DEBUG, "iam.error", "req=%s code=%s msg=\"%s\"", c->req->request_id,
           m ? m->name : "ServiceFailure", err->msg);
}

/* ---- validation ---- */

enum iamapi__pat { PAT_NONE, PAT_NAME, PAT_PATH, PAT_PREFIX, PAT_WORD, PAT_TEXT };

struct iamapi__param {
    const char *name;   /* "UserName" */
    const char *member; /* "userName" */
    int required;
    size_t min, max; /* length in characters */
    enum iamapi__pat pat;
};

static size_t iamapi_utf8len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

static int iamapi_pat_ok(const char *v, enum iamapi__pat pat)
{
    size_t n = strlen(v);
    switch (pat) {
    case PAT_NONE:
        return 1;
    case PAT_NAME: /* [\w+=,.@-]+ */
        for (const char *p = v; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("_+=,.@-", *p))
                return 0;
        return 1;
    case PAT_WORD: /* [\w]+ */
        for (const char *p = v; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '_')
                return 0;
        return 1;
    case PAT_PATH: /* (\u002F)|(\u002F[\u0021-\u007E]+\u002F) */
        if (strcmp(v, "/") == 0)
            return 1;
        if (n < 2 || v[0] != '/' || v[n - 1] != '/')
            return 0;
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7E)
                return 0;
        return 1;
    case PAT_PREFIX: /* \u002F[\u0021-\u007F]* */
        if (v[0] != '/')
            return 0;
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7F)
                return 0;
        return 1;
    case PAT_TEXT: /* [\u0009\u000A\u000D\u0020-\u00FF]+ and beyond: any printable text */
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x20 && !strchr("\t\n\r", *p))
                return 0;
        return 1;
    }
    return 0;
}

static const char *iamapi_pat_text(enum iamapi__pat pat)
{
    switch (pat) {
    case PAT_NAME:
        return "[\\w+=,.@-]+";
    case PAT_WORD:
        return "[\\w]+";
    case PAT_PATH:
        return "(\\u002F)|(\\u002F[\\u0021-\\u007E]+\\u002F)";
    case PAT_PREFIX:
        return "\\u002F[\\u0021-\\u007F]*";
    case PAT_TEXT:
        return "[\\u0009\\u000A\\u000D\\u0020-\\u00FF]+";
    case PAT_NONE:
        break;
    }
    return "";
}

/* IAM's "1 validation error detected: Value 'x' at 'member' failed to satisfy constraint:". */
static int iamapi_invalid(struct ty_err *err, const char *member, const char *value,
                          const char *what)
{
    if (!value)
        return ty_err_set(err, TY_EINVAL, member,
                          "1 validation error detected: Value null at '%s' failed to satisfy "
                          "constraint: Member must not be null",
                          member);
    return ty_err_set(err, TY_EINVAL, member,
                      "1 validation error detected: Value '%.200s' at '%s' failed to satisfy "
                      "constraint: Member must %s",
                      value, member, what);
}

static int iamapi_check(json_t *in, const struct iamapi__param *p, struct ty_err *err)
{
    char what[160];
    json_t *j = json_object_get(in, p->name);
    const char *v = json_string_value(j);
    size_t n;
    if (!j) {
        if (p->required)
            return iamapi_invalid(err, p->member, NULL, NULL);
        return 0;
    }
    if (!v) /* given as a list (Name.member.N) */
        return ty_err_set(err, TY_EINVAL, p->member,
                          "1 validation error detected: Value at '%s' failed to satisfy "
                          "constraint: Member must be a string",
                          p->member);
    n = iamapi_utf8len(v);
    if (n < p->min) {
        snprintf(what, sizeof(what), "have length greater than or equal to %zu", p->min);
        return iamapi_invalid(err, p->member, v, what);
    }
    if (n > p->max) {
        snprintf(what, sizeof(what), "have length less than or equal to %zu", p->max);
        return iamapi_invalid(err, p->member, p->max > 1024 ? "(too long)" : v, what);
    }
    if (!iamapi_pat_ok(v, p->pat)) {
        snprintf(what, sizeof(what), "satisfy regular expression pattern: %s",
                 iamapi_pat_text(p->pat));
        return iamapi_invalid(err, p->member, v, what);
    }
    return 0;
}

/* Tags: at most 50, Key 1..128, Value 0..256, no missing halves. */
static int iamapi_check_tags(json_t *in, int required, struct ty_err *err)
{
    json_t *tags = json_object_get(in, "Tags"), *t;
    size_t i;
    if (!tags) {
        if (required)
            return iamapi_invalid(err, "tags", NULL, NULL);
        return 0;
    }
    if (!json_is_array(tags))
        return ty_err_set(err, TY_EINVAL, "Tags",
                          "1 validation error detected: Value at 'tags' failed to satisfy "
                          "constraint: Member must be a list");
    if (json_array_size(tags) > STORE_IAM_MAX_TAGS)
        return ty_err_set(err, TY_EINVAL, "Tags",
                          "1 validation error detected: Value at 'tags' failed to satisfy "
                          "constraint: Member must have length less than or equal to 50");
    json_array_foreach(tags, i, t)
    {
        const char *k = json_string_value(json_object_get(t, "Key"));
        const char *v = json_string_value(json_object_get(t, "Value"));
        char member[64];
        snprintf(member, sizeof(member), "tags.%zu.member.key", i + 1);
        if (!k)
            return iamapi_invalid(err, member, NULL, NULL);
        if (iamapi_utf8len(k) < 1 || iamapi_utf8len(k) > 128)
            return iamapi_invalid(err, member, k,
                                  "have length less than or equal to 128 and greater than or "
                                  "equal to 1");
        snprintf(member, sizeof(member), "tags.%zu.member.value", i + 1);
        if (!v)
            return iamapi_invalid(err, member, NULL, NULL);
        if (iamapi_utf8len(v) > 256)
            return iamapi_invalid(err, member, v, "have length less than or equal to 256");
    }
    return 0;
}

static int iamapi_check_tagkeys(json_t *in, struct ty_err *err)
{
    json_t *keys = json_object_get(in, "TagKeys"), *k;
    size_t i;
    if (!keys)
        return iamapi_invalid(err, "tagKeys", NULL, NULL);
    if (!json_is_array(keys))
        return ty_err_set(err, TY_EINVAL, "TagKeys",
                          "1 validation error detected: Value at 'tagKeys' failed to satisfy "
                          "constraint: Member must be a list");
    if (json_array_size(keys) > STORE_IAM_MAX_TAGS)
        return ty_err_set(err, TY_EINVAL, "TagKeys",
                          "1 validation error detected: Value at 'tagKeys' failed to satisfy "
                          "constraint: Member must have length less than or equal to 50");
    json_array_foreach(keys, i, k)
    {
        char member[64];
        snprintf(member, sizeof(member), "tagKeys.%zu.member", i + 1);
        if (!json_is_string(k))
            return iamapi_invalid(err, member, NULL, NULL);
        if (json_string_length(k) < 1 || iamapi_utf8len(json_string_value(k)) > 128)
            return iamapi_invalid(err, member, json_string_value(k),
                                  "have length less than or equal to 128 and greater than or "
                                  "equal to 1");
    }
    return 0;
}

/* ---- handlers ---- */

struct iamapi__ctx {
    const struct iamapi__call *c;
    json_t *in;
    struct ty_buf *out; /* the <Result> members */
};

typedef int (*iamapi__fn)(struct iamapi__ctx *x, struct ty_err *err);

static const char *iamapi_s(json_t *in, const char *k)
{
    return json_string_value(json_object_get(in, k));
}

/* The user an action without UserName acts on: the caller's name. */
static const char *iamapi_target(struct iamapi__ctx *x)
{
    const char *u = iamapi_s(x->in, "UserName");
    const char *slash;
    if (u)
        return u;
    slash = strrchr(x->c->principal_arn, '/');
    return slash ? slash + 1 : "";
}

static int iamapi_no_user(struct ty_err *err, const char *name)
{
    return ty_err_set(err, TY_ENOTFOUND, "UserName", "The user with name %.64s cannot be found.",
                      name);
}

static void iamapi_tags_xml(struct ty_buf *b, json_t *tags)
{
    size_t i;
    json_t *t;
    ty_buf_puts(b, "<Tags>");
    json_array_foreach(tags, i, t)
    {
        ty_buf_puts(b, "<member>");
        xml_el(b, "Key", json_string_value(json_object_get(t, "Key")));
        xml_el(b, "Value", json_string_value(json_object_get(t, "Value")));
        ty_buf_puts(b, "</member>");
    }
    ty_buf_puts(b, "</Tags>");
}

static void iamapi_user_xml(struct ty_buf *b, const struct store_iam_user *u, json_t *tags)
{
    ty_buf_puts(b, "<User>");
    xml_el(b, "Path", u->path);
    xml_el(b, "UserName", u->name);
    xml_el(b, "UserId", u->id);
    xml_el(b, "Arn", u->arn);
    xml_date(b, "CreateDate", u->created);
    if (json_array_size(tags) > 0)
        iamapi_tags_xml(b, tags);
    ty_buf_puts(b, "</User>");
}

static int iamapi_create_user(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *name = iamapi_s(x->in, "UserName");
    const char *path = iamapi_s(x->in, "Path");
    json_t *tags = json_object_get(x->in, "Tags");
    int rc;

    memset(&u, 0, sizeof(u));
    snprintf(u.name, sizeof(u.name), "%s", name);
    snprintf(u.path, sizeof(u.path), "%s", path ? path : "/");
    memcpy(u.id, "AIDA", 4);
    if (ty_rand_string(u.id + 4, 17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot generate an id");
    if (snprintf(u.arn, sizeof(u.arn), "arn:aws:iam::%s:user%s%s", x->c->account_id, u.path,
                 u.name) >= (int)sizeof(u.arn))
        return ty_err_set(err, TY_EINVAL, "Path", "The ARN of user %s would be too long.", name);
    u.created = (double)time(NULL);
    rc = store_iam_user_create(x->c->store, &u, tags, err);
    if (rc == -TY_EINUSE)
        return ty_err_set(err, TY_EINUSE, "UserName", "User with name %s already exists.", name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "Tags",
                          "The number of tags has reached the maximum "
                          "limit.");
    if (rc)
        return rc;
    iamapi_user_xml(x->out, &u, tags);
    return 0;
}

static int iamapi_get_user(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    json_t *tags = NULL;
    const char *name = iamapi_target(x);
    int rc = store_iam_user_get(x->c->store, name, &u, &tags, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc)
        return rc;
    iamapi_user_xml(x->out, &u, tags);
    json_decref(tags);
    return 0;
}

/* MaxItems (default 100) and Marker (a decimal offset or a name to resume at). */
static long iamapi_max_items(json_t *in)
{
    const char *m = iamapi_s(in, "MaxItems");
    return m ? strtol(m, NULL, 10) : 100;
}

static void iamapi_page_end(struct ty_buf *b, int truncated, const char *marker)
{
    ty_buf_printf(b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
    if (truncated)
        xml_el(b, "Marker", marker);
}

static int iamapi_list_users(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *prefix = iamapi_s(x->in, "PathPrefix");
    const char *marker = iamapi_s(x->in, "Marker");
    long max = iamapi_max_items(x->in), n = 0;
    json_t *users = store_iam_user_list(x->c->store, err), *u;
    char next[STORE_IAM_NAME_MAX + 1] = "";
    size_t i;
    if (!users)
        return -err->code;
    ty_buf_puts(x->out, "<Users>");
    json_array_foreach(users, i, u)
    {
        struct store_iam_user su;
        char lname[STORE_IAM_NAME_MAX + 1];
        const char *name = json_string_value(json_object_get(u, "UserName"));
        const char *path = json_string_value(json_object_get(u, "Path"));
        size_t k;
        if (!name || !path)
            continue;
        for (k = 0; k < STORE_IAM_NAME_MAX && name[k]; k++)
            lname[k] = (char)tolower((unsigned char)name[k]);
        lname[k] = '\0';
        if (prefix && strncmp(path, prefix, strlen(prefix)) != 0)
            continue;
        if (marker && strcmp(lname, marker) < 0)
            continue;
        if (n == max) {
            snprintf(next, sizeof(next), "%s", lname);
            break;
        }
        memset(&su, 0, sizeof(su));
        snprintf(su.name, sizeof(su.name), "%s", name);
        snprintf(su.path, sizeof(su.path), "%s", path);
        snprintf(su.id, sizeof(su.id), "%s", json_string_value(json_object_get(u, "UserId")));
        snprintf(su.arn, sizeof(su.arn), "%s", json_string_value(json_object_get(u, "Arn")));
        su.created = json_number_value(json_object_get(u, "CreateDate"));
        ty_buf_puts(x->out, "<member>");
        xml_el(x->out, "Path", su.path);
        xml_el(x->out, "UserName", su.name);
        xml_el(x->out, "UserId", su.id);
        xml_el(x->out, "Arn", su.arn);
        xml_date(x->out, "CreateDate", su.created);
        ty_buf_puts(x->out, "</member>");
        n++;
    }
    ty_buf_puts(x->out, "</Users>");
    iamapi_page_end(x->out, next[0] != '\0', next);
    json_decref(users);
    return 0;
}

static int iamapi_delete_user(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "UserName");
    struct store_iam_user u;
    double created;
    int reset, rc;
    /* as IAM: a user with a console password keeps it until DeleteLoginProfile */
    if (store_iam_user_get(x->c->store, name, &u, NULL, err) == 0 &&
        console_login_get(x->c->store, name, u.id, &created, &reset, err) == 0)
        return ty_err_set(err, TY_ECONFLICT, "UserName",
                          "Cannot delete entity, must delete login profile first.");
    ty_err_clear(err);
    rc = store_iam_user_delete(x->c->store, name, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc == -TY_ECONFLICT)
        return ty_err_set(err, TY_ECONFLICT, "UserName",
                          "Cannot delete entity, must delete %s first.",
                          strcmp(err->msg, "keys") == 0 ? "access keys" : "policies");
    return rc;
}

static int iamapi_tag_user(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "UserName");
    int rc = store_iam_user_tag(x->c->store, name, json_object_get(x->in, "Tags"), err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "Tags",
                          "The number of tags has reached the maximum "
                          "limit.");
    return rc;
}

static int iamapi_untag_user(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "UserName");
    int rc = store_iam_user_untag(x->c->store, name, json_object_get(x->in, "TagKeys"), err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    return rc;
}

static int iamapi_list_user_tags(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    json_t *tags = NULL;
    const char *name = iamapi_s(x->in, "UserName");
    int rc = store_iam_user_get(x->c->store, name, &u, &tags, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc)
        return rc;
    iamapi_tags_xml(x->out, tags);
    iamapi_page_end(x->out, 0, NULL);
    json_decref(tags);
    return 0;
}

static void iamapi_key_xml(struct ty_buf *b, const char *user, const char *akid, const char *status,
                           const char *secret, double created)
{
    xml_el(b, "UserName", user);
    xml_el(b, "AccessKeyId", akid);
    xml_el(b, "Status", status);
    if (secret)
        xml_el(b, "SecretAccessKey", secret);
    xml_date(b, "CreateDate", created);
}

static int iamapi_create_access_key(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *name = iamapi_target(x);
    char akid[24], secret[48];
    double now = (double)time(NULL);
    int rc = store_iam_user_get(x->c->store, name, &u, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc)
        return rc;
    memcpy(akid, "AKIA", 4);
    if (ty_rand_string(akid + 4, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != 0 ||
        ty_rand_string(secret, 40,
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot generate keys");
    rc = store_iam_key_create(x->c->store, u.name, akid, now, STORE_IAM_MAX_KEYS, err);
    if (rc == -TY_ENOTFOUND)
        return iamapi_no_user(err, name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "UserName",
                          "Cannot exceed quota for AccessKeysPerUser: %d", STORE_IAM_MAX_KEYS);
    if (rc)
        return rc;
    rc = store_principal_put(x->c->store, akid, secret, u.arn, u.name, err);
    if (rc) {
        struct ty_err ignored;
        store_iam_key_delete(x->c->store, u.name, akid, &ignored);
        return rc;
    }
    ty_buf_puts(x->out, "<AccessKey>");
    iamapi_key_xml(x->out, u.name, akid, "Active", secret, now);
    ty_buf_puts(x->out, "</AccessKey>");
    ty_log(TY_LOG_INFO, "iam.key_created", "user=%s access_key=%s", u.name, akid);
    return 0;
}

static int iamapi_list_access_keys(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *name = iamapi_target(x);
    json_t *keys, *k;
    size_t i;
    int rc = store_iam_user_get(x->c->store, name, &u, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc)
        return rc;
    keys = store_iam_key_list(x->c->store, u.name, err);
    if (!keys)
        return err->code == TY_ENOTFOUND ? iamapi_no_user(err, name) : -err->code;
    ty_buf_puts(x->out, "<AccessKeyMetadata>");
    json_array_foreach(keys, i, k)
    {
        ty_buf_puts(x->out, "<member>");
        iamapi_key_xml(x->out, u.name, json_string_value(json_object_get(k, "AccessKeyId")),
                       json_string_value(json_object_get(k, "Status")), NULL,
                       json_number_value(json_object_get(k, "CreateDate")));
        ty_buf_puts(x->out, "</member>");
    }
    ty_buf_puts(x->out, "</AccessKeyMetadata>");
    iamapi_page_end(x->out, 0, NULL);
    json_decref(keys);
    return 0;
}

static int iamapi_delete_access_key(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_target(x);
    const char *akid = iamapi_s(x->in, "AccessKeyId");
    int rc = store_iam_key_delete(x->c->store, name, akid, err);
    if (rc == -TY_ENOTFOUND && strcmp(err->msg, "key") == 0)
        return ty_err_set(err, TY_ENOTFOUND, "AccessKeyId",
                          "The Access Key with id %s cannot be found.", akid);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc == 0)
        ty_log(TY_LOG_INFO, "iam.key_deleted", "user=%s access_key=%s", name, akid);
    return rc;
}

static int iamapi_put_user_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "UserName");
    const char *pname = iamapi_s(x->in, "PolicyName");
    json_t *jdoc = json_object_get(x->in, "PolicyDocument");
    const char *doc = json_string_value(jdoc);
    size_t len = json_string_length(jdoc), size;
    struct iam_policy *p = NULL;
    int rc = iam_policy_parse(doc, len, &p, err);
    if (rc == -TY_EINVAL)
        return ty_err_set(err, TY_EINVAL, "PolicyDocument", "%s", err->msg);
    if (rc)
        return rc;
    iam_policy_free(p);
    size = iam_policy_chars(doc, len);
    rc = store_iam_policy_put(x->c->store, name, pname, doc, len, size, IAM_MAX_CHARS_USER_INLINE,
                              err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "PolicyDocument",
                          "Maximum policy size of %d bytes exceeded for user %s",
                          IAM_MAX_CHARS_USER_INLINE, name);
    return rc;
}

static int iamapi_no_policy(struct ty_err *err, const char *pname)
{
    return ty_err_set(err, TY_ENOTFOUND, "PolicyName",
                      "The user policy with name %.128s cannot be found.", pname);
}

static int iamapi_get_user_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "UserName");
    const char *pname = iamapi_s(x->in, "PolicyName");
    struct store_iam_user u;
    char *doc;
    int rc = store_iam_user_get(x->c->store, name, &u, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc)
        return rc;
    doc = store_iam_policy_get(x->c->store, name, pname, err);
    if (!doc) {
        if (err->code == TY_ENOTFOUND && strcmp(err->msg, "policy") == 0)
            return iamapi_no_policy(err, pname);
        if (err->code == TY_ENOTFOUND)
            return iamapi_no_user(err, name);
        return -err->code;
    }
    xml_el(x->out, "UserName", u.name);
    xml_el(x->out, "PolicyName", pname);
    ty_buf_puts(x->out, "<PolicyDocument>");
    iamapi_urlencode(x->out, doc, strlen(doc));
    ty_buf_puts(x->out, "</PolicyDocument>");
    free(doc);
    return 0;
}

static int iamapi_list_user_policies(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "UserName");
    const char *marker = iamapi_s(x->in, "Marker");
    long max = iamapi_max_items(x->in), n = 0;
    json_t *names = store_iam_policy_list(x->c->store, name, err), *p;
    const char *next = NULL;
    size_t i;
    if (!names)
        return err->code == TY_ENOTFOUND ? iamapi_no_user(err, name) : -err->code;
    ty_buf_puts(x->out, "<PolicyNames>");
    json_array_foreach(names, i, p)
    {
        if (marker && strcmp(json_string_value(p), marker) < 0)
            continue;
        if (n == max) {
            next = json_string_value(p);
            break;
        }
        xml_el(x->out, "member", json_string_value(p));
        n++;
    }
    ty_buf_puts(x->out, "</PolicyNames>");
    iamapi_page_end(x->out, next != NULL, next);
    json_decref(names);
    return 0;
}

static int iamapi_delete_user_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "UserName");
    const char *pname = iamapi_s(x->in, "PolicyName");
    int rc = store_iam_policy_delete(x->c->store, name, pname, err);
    if (rc == -TY_ENOTFOUND && strcmp(err->msg, "policy") == 0)
        return iamapi_no_policy(err, pname);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    return rc;
}

static int iamapi_update_access_key(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_target(x);
    const char *akid = iamapi_s(x->in, "AccessKeyId");
    const char *status = iamapi_s(x->in, "Status");
    int rc = store_iam_key_update(x->c->store, name, akid, status, err);
    if (rc == -TY_ENOTFOUND && strcmp(err->msg, "key") == 0)
        return ty_err_set(err, TY_ENOTFOUND, "AccessKeyId",
                          "The Access Key with id %s cannot be found.", akid);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    if (rc == 0)
        ty_log(TY_LOG_INFO, "iam.key_updated", "user=%s access_key=%s status=%s", name, akid,
               status);
    return rc;
}

/* ---- roles ---- */

#define IAMAPI_ROLE_INLINE_MAX 10240 /* aggregate of one role's inline policies */

static int iamapi_no_role(struct ty_err *err, const char *name)
{
    return ty_err_set(err, TY_ENOTFOUND, "RoleName", "The role with name %.64s cannot be found.",
                      name);
}

static void iamapi_role_xml(struct ty_buf *b, const char *tag, const struct store_iam_role *r,
                            const char *trust, json_t *tags)
{
    ty_buf_printf(b, "<%s>", tag);
    xml_el(b, "Path", r->path);
    xml_el(b, "RoleName", r->name);
    xml_el(b, "RoleId", r->id);
    xml_el(b, "Arn", r->arn);
    xml_date(b, "CreateDate", r->created);
    ty_buf_puts(b, "<AssumeRolePolicyDocument>");
    iamapi_urlencode(b, trust, strlen(trust));
    ty_buf_puts(b, "</AssumeRolePolicyDocument>");
    if (r->desc[0])
        xml_el(b, "Description", r->desc);
    ty_buf_printf(b, "<MaxSessionDuration>%d</MaxSessionDuration>", r->max_session);
    if (json_array_size(tags) > 0)
        iamapi_tags_xml(b, tags);
    ty_buf_printf(b, "</%s>", tag);
}

static int iamapi_create_role(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_role r;
    const char *name = iamapi_s(x->in, "RoleName");
    const char *path = iamapi_s(x->in, "Path");
    const char *desc = iamapi_s(x->in, "Description");
    const char *msd = iamapi_s(x->in, "MaxSessionDuration");
    json_t *jdoc = json_object_get(x->in, "AssumeRolePolicyDocument");
    const char *trust = json_string_value(jdoc);
    json_t *tags = json_object_get(x->in, "Tags");
    int rc;

    rc = iam_trust_check(trust, json_string_length(jdoc), NULL, NULL, NULL, 0, NULL, err);
    if (rc)
        return rc;
    memset(&r, 0, sizeof(r));
    snprintf(r.name, sizeof(r.name), "%s", name);
    snprintf(r.path, sizeof(r.path), "%s", path ? path : "/");
    snprintf(r.desc, sizeof(r.desc), "%s", desc ? desc : "");
    r.max_session = msd ? (int)strtol(msd, NULL, 10) : 3600;
    memcpy(r.id, "AROA", 4);
    if (ty_rand_string(r.id + 4, 17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot generate an id");
    if (snprintf(r.arn, sizeof(r.arn), "arn:aws:iam::%s:role%s%s", x->c->account_id, r.path,
                 r.name) >= (int)sizeof(r.arn))
        return ty_err_set(err, TY_EINVAL, "Path", "The ARN of role %s would be too long.", name);
    r.created = (double)time(NULL);
    rc = store_iam_role_create(x->c->store, &r, trust, tags, err);
    if (rc == -TY_EINUSE)
        return ty_err_set(err, TY_EINUSE, "RoleName", "Role with name %s already exists.", name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "Tags",
                          "The number of tags has reached the maximum "
                          "limit.");
    if (rc)
        return rc;
    ty_log(TY_LOG_INFO, "iam.role_created", "role=%s", r.arn);
    iamapi_role_xml(x->out, "Role", &r, trust, tags);
    return 0;
}

static int iamapi_get_role(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_role r;
    const char *name = iamapi_s(x->in, "RoleName");
    json_t *tags = NULL;
    char *trust = NULL;
    int rc = store_iam_role_get(x->c->store, name, &r, &trust, &tags, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    if (rc)
        return rc;
    iamapi_role_xml(x->out, "Role", &r, trust, tags);
    free(trust);
    json_decref(tags);
    return 0;
}

static int iamapi_list_roles(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *prefix = iamapi_s(x->in, "PathPrefix");
    const char *marker = iamapi_s(x->in, "Marker");
    long max = iamapi_max_items(x->in), n = 0;
    json_t *roles = store_iam_role_list(x->c->store, err), *j;
    char next[STORE_IAM_NAME_MAX + 1] = "";
    size_t i;
    if (!roles)
        return -err->code;
    ty_buf_puts(x->out, "<Roles>");
    json_array_foreach(roles, i, j)
    {
        struct store_iam_role r;
        char lname[STORE_IAM_NAME_MAX + 1];
        const char *name = json_string_value(json_object_get(j, "RoleName"));
        const char *path = json_string_value(json_object_get(j, "Path"));
        const char *trust = json_string_value(json_object_get(j, "AssumeRolePolicyDocument"));
        size_t k;
        if (!name || !path || !trust)
            continue;
        for (k = 0; k < STORE_IAM_NAME_MAX && name[k]; k++)
            lname[k] = (char)tolower((unsigned char)name[k]);
        lname[k] = '\0';
        if (prefix && strncmp(path, prefix, strlen(prefix)) != 0)
            continue;
        if (marker && strcmp(lname, marker) < 0)
            continue;
        if (n == max) {
            snprintf(next, sizeof(next), "%s", lname);
            break;
        }
        memset(&r, 0, sizeof(r));
        snprintf(r.name, sizeof(r.name), "%s", name);
        snprintf(r.path, sizeof(r.path), "%s", path);
        snprintf(r.id, sizeof(r.id), "%s", json_string_value(json_object_get(j, "RoleId")));
        snprintf(r.arn, sizeof(r.arn), "%s", json_string_value(json_object_get(j, "Arn")));
        snprintf(r.desc, sizeof(r.desc), "%s",
                 json_string_value(json_object_get(j, "Description")));
        r.created = json_number_value(json_object_get(j, "CreateDate"));
        r.max_session = (int)json_integer_value(json_object_get(j, "MaxSessionDuration"));
        iamapi_role_xml(x->out, "member", &r, trust, NULL);
        n++;
    }
    ty_buf_puts(x->out, "</Roles>");
    iamapi_page_end(x->out, next[0] != '\0', next);
    json_decref(roles);
    return 0;
}

static int iamapi_delete_role(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "RoleName");
    int rc = store_iam_role_delete(x->c->store, name, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    if (rc == -TY_ECONFLICT)
        return ty_err_set(err, TY_ECONFLICT, "RoleName",
                          "Cannot delete entity, must delete policies first.");
    if (rc == 0)
        ty_log(TY_LOG_INFO, "iam.role_deleted", "role=%s", name);
    return rc;
}

static int iamapi_no_role_policy(struct ty_err *err, const char *pname)
{
    return ty_err_set(err, TY_ENOTFOUND, "PolicyName",
                      "The role policy with name %.128s cannot be found.", pname);
}

static int iamapi_put_role_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "RoleName");
    const char *pname = iamapi_s(x->in, "PolicyName");
    json_t *jdoc = json_object_get(x->in, "PolicyDocument");
    const char *doc = json_string_value(jdoc);
    size_t len = json_string_length(jdoc), size;
    struct iam_policy *p = NULL;
    int rc = iam_policy_parse(doc, len, &p, err);
    if (rc == -TY_EINVAL)
        return ty_err_set(err, TY_EINVAL, "PolicyDocument", "%s", err->msg);
    if (rc)
        return rc;
    iam_policy_free(p);
    size = iam_policy_chars(doc, len);
    rc = store_iam_role_policy_put(x->c->store, name, pname, doc, len, size, IAMAPI_ROLE_INLINE_MAX,
                                   err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    if (rc == -TY_ELIMIT)
        return ty_err_set(err, TY_ELIMIT, "PolicyDocument",
                          "Maximum policy size of %d bytes exceeded for role %s",
                          IAMAPI_ROLE_INLINE_MAX, name);
    return rc;
}

static int iamapi_get_role_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "RoleName");
    const char *pname = iamapi_s(x->in, "PolicyName");
    struct store_iam_role r;
    char *doc;
    int rc = store_iam_role_get(x->c->store, name, &r, NULL, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    if (rc)
        return rc;
    doc = store_iam_role_policy_get(x->c->store, name, pname, err);
    if (!doc) {
        if (err->code == TY_ENOTFOUND && strcmp(err->msg, "policy") == 0)
            return iamapi_no_role_policy(err, pname);
        if (err->code == TY_ENOTFOUND)
            return iamapi_no_role(err, name);
        return -err->code;
    }
    xml_el(x->out, "RoleName", r.name);
    xml_el(x->out, "PolicyName", pname);
    ty_buf_puts(x->out, "<PolicyDocument>");
    iamapi_urlencode(x->out, doc, strlen(doc));
    ty_buf_puts(x->out, "</PolicyDocument>");
    free(doc);
    return 0;
}

static int iamapi_list_role_policies(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "RoleName");
    const char *marker = iamapi_s(x->in, "Marker");
    long max = iamapi_max_items(x->in), n = 0;
    json_t *names = store_iam_role_policy_list(x->c->store, name, err), *p;
    const char *next = NULL;
    size_t i;
    if (!names)
        return err->code == TY_ENOTFOUND ? iamapi_no_role(err, name) : -err->code;
    ty_buf_puts(x->out, "<PolicyNames>");
    json_array_foreach(names, i, p)
    {
        if (marker && strcmp(json_string_value(p), marker) < 0)
            continue;
        if (n == max) {
            next = json_string_value(p);
            break;
        }
        xml_el(x->out, "member", json_string_value(p));
        n++;
    }
    ty_buf_puts(x->out, "</PolicyNames>");
    iamapi_page_end(x->out, next != NULL, next);
    json_decref(names);
    return 0;
}

static int iamapi_delete_role_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *name = iamapi_s(x->in, "RoleName");
    const char *pname = iamapi_s(x->in, "PolicyName");
    int rc = store_iam_role_policy_delete(x->c->store, name, pname, err);
    if (rc == -TY_ENOTFOUND && strcmp(err->msg, "policy") == 0)
        return iamapi_no_role_policy(err, pname);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_role(err, name);
    return rc;
}

/* ---- login profiles and the account password policy (console_login.c) ---- */

/* The IAM user of a login-profile action. OUT: u. 0 or NoSuchEntity. */
static int iamapi_login_user(struct iamapi__ctx *x, struct store_iam_user *u, struct ty_err *err)
{
    const char *name = iamapi_target(x);
    int rc = store_iam_user_get(x->c->store, name, u, NULL, err);
    if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
        return iamapi_no_user(err, name);
    return rc;
}

/* "true"/"false" of a boolean parameter: 1, 0, or dflt when absent. */
static int iamapi_bool(json_t *in, const char *k, int dflt)
{
    const char *v = iamapi_s(in, k);
    if (!v)
        return dflt;
    return strcmp(v, "true") == 0;
}

static void iamapi_login_xml(struct ty_buf *b, const char *name, double created, int reset)
{
    ty_buf_puts(b, "<LoginProfile>");
    xml_el(b, "UserName", name);
    xml_date(b, "CreateDate", created);
    xml_el(b, "PasswordResetRequired", reset ? "true" : "false");
    ty_buf_puts(b, "</LoginProfile>");
}

static int iamapi_create_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    int reset = iamapi_bool(x->in, "PasswordResetRequired", 0), rc;
    double now = (double)time(NULL);
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    rc = console_login_put(x->c->store, u.name, u.id, iamapi_s(x->in, "Password"), 0, reset, now,
                           err);
    if (rc)
        return rc;
    iamapi_login_xml(x->out, u.name, now, reset);
    return 0;
}

static int iamapi_update_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    int rc;
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    return console_login_put(x->c->store, u.name, u.id, iamapi_s(x->in, "Password"), 1,
                             iamapi_bool(x->in, "PasswordResetRequired", -1), (double)time(NULL),
                             err);
}

static int iamapi_get_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    double created;
    int reset, rc;
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    if ((rc = console_login_get(x->c->store, u.name, u.id, &created, &reset, err)) != 0)
        return rc;
    iamapi_login_xml(x->out, u.name, created, reset);
    return 0;
}

static int iamapi_delete_login_profile(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    double created;
    int reset, rc;
    if ((rc = iamapi_login_user(x, &u, err)) != 0)
        return rc;
    if ((rc = console_login_get(x->c->store, u.name, u.id, &created, &reset, err)) != 0)
        return rc;
    return console_login_delete(x->c->store, u.name, err);
}

/* ChangePassword: the caller (an IAM user) changes his own console password. */
static int iamapi_change_password(struct iamapi__ctx *x, struct ty_err *err)
{
    struct store_iam_user u;
    const char *arn = x->c->principal_arn, *name;
    int rc;

    if (strncmp(arn, "arn:aws:iam::", 13) != 0 || !strstr(arn, ":user/"))
        return ty_err_set(err, TY_EUSERTYPE, NULL,
                          "The request was rejected because the type of user for the "
                          "transaction was incorrect.");
    name = strrchr(arn, '/') + 1;
    if ((rc = store_iam_user_get(x->c->store, name, &u, NULL, err)) != 0)
        return rc == -TY_EREDIS ? rc : iamapi_no_user(err, name);
    rc = console_login_change(x->c->store, u.name, u.id, iamapi_s(x->in, "OldPassword"),
                              iamapi_s(x->in, "NewPassword"), err);
    if (rc == -TY_ETHROTTLE)
        rc = ty_err_set(err, TY_ELIMIT, NULL, "%s", err->msg);
    return rc;
}

/*
 * ChangePassword is allowed by the caller's policies (iam:ChangePassword on his own ARN), or,
 * as on AWS, for every IAM user when the account password policy says
 * AllowUsersToChangePassword, or for a user whose login profile has PasswordResetRequired (AWS's
 * console attaches IAMUserChangePassword to such a user). 1 when one of the last two holds.
 */
static int iamapi_change_allowed(struct store *s, const char *arn)
{
    struct console_login_policy p;
    struct store_iam_user u;
    struct ty_err err;
    const char *slash = strrchr(arn, '/');

    ty_err_clear(&err);
    if (!strstr(arn, ":user/") || !slash)
        return 0;
    if (console_login_policy_get(s, &p, &err) == 0 && p.allow_change)
        return 1;
    if (store_iam_user_get(s, slash + 1, &u, NULL, &err) != 0)
        return 0;
    return console_login_reset_required(s, u.name, u.id);
}

/* authz_request, with ChangePassword's own grants (iamapi_change_allowed). */
static int iamapi_authorize(struct store *s, const char *op, json_t *in, const char *arn,
                            const char *region, const char *account, struct ty_err *err)
{
    int rc = authz_request(s, "iam", op, in, arn, region, account, err);
    if (rc == -TY_EDENIED && strcmp(op, "ChangePassword") == 0 && iamapi_change_allowed(s, arn)) {
        ty_err_clear(err);
        return 0;
    }
    return rc;
}

static int iamapi_get_password_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    struct console_login_policy p;
    int rc = console_login_policy_get(x->c->store, &p, err);
    if (rc)
        return rc;
    if (!p.custom)
        return ty_err_set(err, TY_ENOTFOUND, NULL,
                          "The Password Policy with domain name %s cannot be found.",
                          x->c->account_id);
    ty_buf_printf(x->out,
                  "<PasswordPolicy><MinimumPasswordLength>%d</MinimumPasswordLength>"
                  "<RequireSymbols>%s</RequireSymbols><RequireNumbers>%s</RequireNumbers>"
                  "<RequireUppercaseCharacters>%s</RequireUppercaseCharacters>"
                  "<RequireLowercaseCharacters>%s</RequireLowercaseCharacters>"
                  "<AllowUsersToChangePassword>%s</AllowUsersToChangePassword>"
                  "<ExpirePasswords>false</ExpirePasswords></PasswordPolicy>",
                  p.min_length, p.req_symbols ? "true" : "false", p.req_numbers ? "true" : "false",
                  p.req_upper ? "true" : "false", p.req_lower ? "true" : "false",
                  p.allow_change ? "true" : "false");
    return 0;
}

static int iamapi_update_password_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    struct console_login_policy p;
    const char *ml = iamapi_s(x->in, "MinimumPasswordLength");
    console_login_policy_default(&p);
    p.custom = 1;
    p.allow_change = iamapi_bool(x->in, "AllowUsersToChangePassword", 0);
    p.req_symbols = iamapi_bool(x->in, "RequireSymbols", 0);
    p.req_numbers = iamapi_bool(x->in, "RequireNumbers", 0);
    p.req_upper = iamapi_bool(x->in, "RequireUppercaseCharacters", 0);
    p.req_lower = iamapi_bool(x->in, "RequireLowercaseCharacters", 0);
    if (ml) {
        char *end;
        long v = strtol(ml, &end, 10);
        if (*end || v < 6 || v > 128)
            return iamapi_invalid(err, "minimumPasswordLength", ml,
                                  v < 6 ? "have value greater than or equal to 6"
                                        : "have value less than or equal to 128");
        p.min_length = (int)v;
    }
    return console_login_policy_put(x->c->store, &p, err);
}

static int iamapi_delete_password_policy(struct iamapi__ctx *x, struct ty_err *err)
{
    int rc = console_login_policy_delete(x->c->store, err);
    if (rc == -TY_ENOTFOUND)
        return ty_err_set(err, TY_ENOTFOUND, NULL,
                          "The account policy with name PasswordPolicy cannot be found.");
    return rc;
}

/* ---- the action table ---- */

#define P_USER_REQ                                                                                 \
    {                                                                                              \
        "UserName", "userName", 1, 1, 64, PAT_NAME                                                 \
    }
#define P_USER_OPT                                                                                 \
    {                                                                                              \
        "UserName", "userName", 0, 1, 64, PAT_NAME                                                 \
    }
#define P_MARKER                                                                                   \
    {                                                                                              \
        "Marker", "marker", 0, 1, 320, PAT_TEXT                                                    \
    }
#define P_MAXITEMS                                                                                 \
    {                                                                                              \
        "MaxItems", "maxItems", 0, 1, 4, PAT_WORD                                                  \
    }
#define P_POLICYNAME                                                                               \
    {                                                                                              \
        "PolicyName", "policyName", 1, 1, 128, PAT_NAME                                            \
    }
#define P_ROLE_REQ                                                                                 \
    {                                                                                              \
        "RoleName", "roleName", 1, 1, 64, PAT_NAME                                                 \
    }
#define P_POLICYDOC                                                                                \
    {                                                                                              \
        "PolicyDocument", "policyDocument", 1, 1, IAM_MAX_DOC_BYTES, PAT_TEXT                      \
    }
#define IAMAPI_NPARAMS 5

enum { T_NONE, T_OPT, T_REQ, T_KEYS };

struct iamapi__action {
    const char *name;
    iamapi__fn fn;
    int has_result; /* whether the response has an <XxxResult> element */
    int tags;       /* T_*: Tags optional/required, TagKeys required */
    struct iamapi__param params[IAMAPI_NPARAMS];
};

static const struct iamapi__action iamapi_actions[] = {
    {"CreateUser",
     iamapi_create_user,
     1,
     T_OPT,
     {P_USER_REQ, {"Path", "path", 0, 1, 512, PAT_PATH}}},
    {"GetUser", iamapi_get_user, 1, T_NONE, {P_USER_OPT}},
    {"ListUsers",
     iamapi_list_users,
     1,
     T_NONE,
     {{"PathPrefix", "pathPrefix", 0, 1, 512, PAT_PREFIX}, P_MARKER, P_MAXITEMS}},
    {"DeleteUser", iamapi_delete_user, 0, T_NONE, {P_USER_REQ}},
    {"TagUser", iamapi_tag_user, 0, T_REQ, {P_USER_REQ}},
    {"UntagUser", iamapi_untag_user, 0, T_KEYS, {P_USER_REQ}},
    {"ListUserTags", iamapi_list_user_tags, 1, T_NONE, {P_USER_REQ, P_MARKER, P_MAXITEMS}},
    {"CreateAccessKey", iamapi_create_access_key, 1, T_NONE, {P_USER_OPT}},
    {"ListAccessKeys", iamapi_list_access_keys, 1, T_NONE, {P_USER_OPT, P_MARKER, P_MAXITEMS}},
    {"DeleteAccessKey",
     iamapi_delete_access_key,
     0,
     T_NONE,
     {P_USER_OPT, {"AccessKeyId", "accessKeyId", 1, 16, 128, PAT_WORD}}},
    {"PutUserPolicy",
     iamapi_put_user_policy,
     0,
     T_NONE,
     {P_USER_REQ,
      P_POLICYNAME,
      {"PolicyDocument", "policyDocument", 1, 1, IAM_MAX_DOC_BYTES, PAT_TEXT}}},
    {"GetUserPolicy", iamapi_get_user_policy, 1, T_NONE, {P_USER_REQ, P_POLICYNAME}},
    {"ListUserPolicies", iamapi_list_user_policies, 1, T_NONE, {P_USER_REQ, P_MARKER, P_MAXITEMS}},
    {"DeleteUserPolicy", iamapi_delete_user_policy, 0, T_NONE, {P_USER_REQ, P_POLICYNAME}},
    {"UpdateAccessKey",
     iamapi_update_access_key,
     0,
     T_NONE,
     {P_USER_OPT,
      {"AccessKeyId", "accessKeyId", 1, 16, 128, PAT_WORD},
      {"Status", "status", 1, 1, 16, PAT_WORD}}},
    {"CreateRole",
     iamapi_create_role,
     1,
     T_OPT,
     {P_ROLE_REQ,
      {"Path", "path", 0, 1, 512, PAT_PATH},
      {"AssumeRolePolicyDocument", "assumeRolePolicyDocument", 1, 1, IAM_MAX_DOC_BYTES, PAT_TEXT},
      {"Description", "description", 0, 0, 1000, PAT_TEXT},
      {"MaxSessionDuration", "maxSessionDuration", 0, 1, 5, PAT_WORD}}},
    {"GetRole", iamapi_get_role, 1, T_NONE, {P_ROLE_REQ}},
    {"ListRoles",
     iamapi_list_roles,
     1,
     T_NONE,
     {{"PathPrefix", "pathPrefix", 0, 1, 512, PAT_PREFIX}, P_MARKER, P_MAXITEMS}},
    {"DeleteRole", iamapi_delete_role, 0, T_NONE, {P_ROLE_REQ}},
    {"PutRolePolicy", iamapi_put_role_policy, 0, T_NONE, {P_ROLE_REQ, P_POLICYNAME, P_POLICYDOC}},
    {"GetRolePolicy", iamapi_get_role_policy, 1, T_NONE, {P_ROLE_REQ, P_POLICYNAME}},
    {"ListRolePolicies", iamapi_list_role_policies, 1, T_NONE, {P_ROLE_REQ, P_MARKER, P_MAXITEMS}},
    {"DeleteRolePolicy", iamapi_delete_role_policy, 0, T_NONE, {P_ROLE_REQ, P_POLICYNAME}},
    {"CreateLoginProfile",
     iamapi_create_login_profile,
     1,
     T_NONE,
     {P_USER_OPT,
      {"Password", "password", 1, 1, 128, PAT_TEXT},
      {"PasswordResetRequired", "passwordResetRequired", 0, 4, 5, PAT_WORD}}},
    {"UpdateLoginProfile",
     iamapi_update_login_profile,
     0,
     T_NONE,
     {P_USER_REQ,
      {"Password", "password", 0, 1, 128, PAT_TEXT},
      {"PasswordResetRequired", "passwordResetRequired", 0, 4, 5, PAT_WORD}}},
    {"GetLoginProfile", iamapi_get_login_profile, 1, T_NONE, {P_USER_OPT}},
    {"DeleteLoginProfile", iamapi_delete_login_profile, 0, T_NONE, {P_USER_OPT}},
    {"ChangePassword",
     iamapi_change_password,
     0,
     T_NONE,
     {{"OldPassword", "oldPassword", 1, 1, 128, PAT_TEXT},
      {"NewPassword", "newPassword", 1, 1, 128, PAT_TEXT}}},
    {"GetAccountPasswordPolicy", iamapi_get_password_policy, 1, T_NONE, {{0}}},
    {"UpdateAccountPasswordPolicy",
     iamapi_update_password_policy,
     0,
     T_NONE,
     {{"MinimumPasswordLength", "minimumPasswordLength", 0, 1, 3, PAT_WORD}}},
    {"DeleteAccountPasswordPolicy", iamapi_delete_password_policy, 0, T_NONE, {{0}}},
};

static int iamapi_validate(const struct iamapi__action *a, json_t *in, struct ty_err *err)
{
    const char *mi;
    for (int i = 0; i < IAMAPI_NPARAMS && a->params[i].name; i++)
        if (iamapi_check(in, &a->params[i], err) != 0)
            return -TY_EINVAL;
    mi = iamapi_s(in, "Status");
    if (mi && strcmp(a->name, "UpdateAccessKey") == 0 && strcmp(mi, "Active") != 0 &&
        strcmp(mi, "Inactive") != 0)
        return iamapi_invalid(err, "status", mi, "satisfy enum value set: [Active, Inactive]");
    mi = iamapi_s(in, "MaxSessionDuration");
    if (mi && strcmp(a->name, "CreateRole") == 0 &&
        (strtol(mi, NULL, 10) < 3600 || strtol(mi, NULL, 10) > 43200))
        return iamapi_invalid(err, "maxSessionDuration", mi,
                              strtol(mi, NULL, 10) < 3600
                                  ? "have value greater than or equal to 3600"
                                  : "have value less than or equal to 43200");
    mi = iamapi_s(in, "MaxItems");
    if (mi && (strtol(mi, NULL, 10) < 1 || strtol(mi, NULL, 10) > 1000))
        return iamapi_invalid(err, "maxItems", mi,
                              "have value less than or equal to 1000 and greater than or equal "
                              "to 1");
    if (a->tags == T_OPT || a->tags == T_REQ)
        return iamapi_check_tags(in, a->tags == T_REQ, err);
    if (a->tags == T_KEYS)
        return iamapi_check_tagkeys(in, err);
    return 0;
}

/* ---- entry points ---- */

int op_iamapi_is_service(const char *service)
{
    return service && strcmp(service, "iam") == 0;
}

static void iamapi_route(const struct iamapi__call *c, struct http_response *resp)
{
    const struct iamapi__action *a = NULL;
    struct iamapi__ctx x;
    struct ty_err err;
    struct ty_buf out;
    const char *action, *version;
    json_t *in = NULL;

    ty_err_clear(&err);
    ty_buf_init(&out, IAM_RESP_MAX);
    in = json_object();
    if (!in || !op_iamapi_form(in, c->req->query, strlen(c->req->query), &err))
        goto fail;
    if (c->req->body.len > 0 && !op_iamapi_form(in, c->req->body.data, c->req->body.len, &err))
        goto fail;
    action = iamapi_s(in, "Action");
    version = iamapi_s(in, "Version");
    if (!action) {
        ty_err_set(&err, TY_EUNKNOWNOP, "Action", "Missing Action");
        goto fail;
    }
    for (size_t i = 0; i < sizeof(iamapi_actions) / sizeof(iamapi_actions[0]); i++)
        if (strcmp(iamapi_actions[i].name, action) == 0)
            a = &iamapi_actions[i];
    if (!a) {
        ty_err_set(&err, TY_EUNKNOWNOP, "Action",
                   "Could not find operation %.64s for version %.32s", action,
                   version ? version : "NO_VERSION_SPECIFIED");
        goto fail;
    }
    if (iamapi_validate(a, in, &err) != 0)
        goto fail;
    if (iamapi_authorize(c->store, a->name, in, c->principal_arn, c->region, c->account_id, &err) !=
        0)
        goto fail;
    x.c = c;
    x.in = in;
    x.out = &out;
    if (a->fn(&x, &err) != 0)
        goto fail;
    {
        struct ty_buf b;
        ty_buf_init(&b, IAM_RESP_MAX + 4096);
        ty_buf_printf(&b, "<%sResponse xmlns=\"" IAM_NS "\">", a->name);
        if (a->has_result)
            ty_buf_printf(&b, "<%sResult>%s</%sResult>", a->name, out.data ? out.data : "",
                          a->name);
        ty_buf_puts(&b, "<ResponseMetadata>");
        xml_el(&b, "RequestId", c->req->request_id);
        ty_buf_printf(&b, "</ResponseMetadata></%sResponse>", a->name);
        resp->status = 200;
        resp->content_type = "text/xml";
        resp->len = b.len;
        resp->body = ty_buf_steal(&b);
        http_response_header(resp, "x-amzn-RequestId", c->req->request_id);
    }
    ty_log(TY_LOG_DEBUG, "iam.ok", "req=%s action=%s", c->req->request_id, a->name);
    json_decref(in);
    ty_buf_cleanup(&out);
    return;
fail:
    if (err.code == TY_EOK)
        ty_err_set(&err, TY_EINTERNAL, NULL, "internal failure");
    json_decref(in);
    ty_buf_cleanup(&out);
    iamapi_error(c, resp, &err);
}

void op_iamapi_route(const struct op_iamapi_call *oc, struct http_response *resp)
{
    struct iamapi__call c;
    struct ty_err err;

    memset(&c, 0, sizeof(c));
    c.req = oc->req;
    c.store = oc->store;
    c.account_id = oc->account_id;
    c.region = oc->auth->region;
    c.principal_arn = oc->p ? oc->p->arn : "";
    if (!oc->p) {
        /* an unknown key and a wrong session token read the same */
        err = *oc->auth_err;
        if (err.code == TY_ENOTFOUND || err.code == TY_EBADKEY)
            ty_err_set(&err, TY_EBADKEY, NULL,
                       "The security token included in the request is invalid.");
        iamapi_error(&c, resp, &err);
        return;
    }
    iamapi_route(&c, resp);
}

int op_iamapi_invoke(struct store *s, const char *account_id, const char *region,
                     const char *principal_arn, json_t *in, struct ty_buf *out, struct ty_err *err)
{
    const struct iamapi__action *a = NULL;
    const char *action = iamapi_s(in, "Action");
    struct iamapi__call c;
    struct iamapi__ctx x;
    int rc;

    for (size_t i = 0; action && i < sizeof(iamapi_actions) / sizeof(iamapi_actions[0]); i++)
        if (strcmp(iamapi_actions[i].name, action) == 0)
            a = &iamapi_actions[i];
    if (!a)
        return ty_err_set(err, TY_EUNKNOWNOP, "Action", "Could not find operation %.64s",
                          action ? action : "");
    if (iamapi_validate(a, in, err) != 0)
        return -TY_EINVAL;
    if ((rc = iamapi_authorize(s, a->name, in, principal_arn, region, account_id, err)) != 0)
        return rc;
    memset(&c, 0, sizeof(c));
    c.store = s;
    c.account_id = account_id;
    c.region = region;
    c.principal_arn = principal_arn;
    x.c = &c;
    x.in = in;
    x.out = out;
    return a->fn(&x, err);
}

const char *op_iamapi_error_code(int code)
{
    for (size_t i = 0; i < sizeof(iamapi_errs) / sizeof(iamapi_errs[0]); i++)
        if (iamapi_errs[i].code == code)
            return iamapi_errs[i].name;
    return "ServiceFailure";
}
