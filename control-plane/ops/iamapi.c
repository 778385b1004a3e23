/*
 * iamapi.c - the IAM query API (iamapi.h): the protocol around the handlers.
 *
 * Flow of one call: decode the form (query string, then body) -> find the action -> validate
 * its parameters with IAM's messages -> authorise (authz_request) -> the handler, which
 * writes the <Result> members into an XML buffer -> the envelope. Every text that reaches the
 * XML is escaped (xml_esc); every buffer has a ceiling.
 * Owns the form decoding, the XML helpers, the error document, parameter validation, the
 * action table and the entry points. The handlers live by resource: users, access keys and
 * user policies (iamapi_users.c), roles (iamapi_roles.c), login profiles and the password
 * policy (iamapi_login.c), the inline policies users and roles share (iamapi_inline.c); they
 * share iamapi_int.h.
 */
#include "iamapi.h"
#include "iamapi_int.h"
#include "quota.h"

#include "iam.h"
#include "ops.h"
#include "store_iam.h"
#include "ty_codec.h"
#include "ty_log.h"

#include <ctype.h>
#include <string.h>

#define IAM_NS        "https://iam.amazonaws.com/doc/2010-05-08/"
#define IAM_RESP_MAX  (4u * 1024u * 1024u)
#define IAM_MAX_PARAM 512
#define IAM_MAX_LIST  100 /* list members (Tags.member.N): IAM lists hold at most 50 */

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
    while (json_array_size(arr) < (size_t)idx) {
        if (json_array_append_new(arr, field ? json_object() : json_null()) != 0) {
            json_decref(v);
            return -1;
        }
    }
    if (field) {
        json_t *o = json_array_get(arr, (size_t)idx - 1);
        if (!json_is_object(o)) {
            json_decref(v);
            return -1;
        }
        return json_object_set_new(o, field, v) == 0 ? 0 : -1; /* a field not UTF-8 */
    }
    return json_array_set_new(arr, (size_t)idx - 1, v) == 0 ? 0 : -1;
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
                /* never echo bytes that are not UTF-8 */
                json_t *name = json_string(k), *val = json_stringn(v, vlen);
                if (name && val)
                    ty_err_set(err, TY_EINVAL, NULL, "Malformed list parameter %.100s.", k);
                else
                    ty_err_set(err, TY_EINVAL, NULL,
                               "A parameter's name or value is not valid UTF-8.");
                json_decref(name);
                json_decref(val);
                free(k);
                free(v);
                goto fail;
            }
        } else {
            json_t *s = json_stringn(v, vlen);
            if (!s || json_object_set_new(o, k, s) != 0) { /* value or name not UTF-8 */
                ty_err_set(err, TY_EINVAL, NULL, "A parameter's name or value is not valid UTF-8.");
                free(k);
                free(v);
                goto fail;
            }
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
void iamapi__xml_el(struct ty_buf *b, const char *tag, const char *value)
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

void iamapi__xml_date(struct ty_buf *b, const char *tag, double t)
{
    char when[40];
    iamapi_iso(t, when, sizeof(when));
    iamapi__xml_el(b, tag, when);
}

/* Percent-encodes everything but RFC 3986's unreserved characters (as IAM returns documents). */
void iamapi__urlencode(struct ty_buf *b, const char *s, size_t n)
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
    iamapi__xml_el(&b, "Message", err->msg[0] ? err->msg : ty_strerror(err->code));
    ty_buf_puts(&b, "</Error>");
    iamapi__xml_el(&b, "RequestId", c->req->request_id);
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
int iamapi__invalid(struct ty_err *err, const char *member, const char *value, const char *what)
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
            return iamapi__invalid(err, p->member, NULL, NULL);
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
        return iamapi__invalid(err, p->member, v, what);
    }
    if (n > p->max) {
        snprintf(what, sizeof(what), "have length less than or equal to %zu", p->max);
        return iamapi__invalid(err, p->member, p->max > 1024 ? "(too long)" : v, what);
    }
    if (!iamapi_pat_ok(v, p->pat)) {
        snprintf(what, sizeof(what), "satisfy regular expression pattern: %s",
                 iamapi_pat_text(p->pat));
        return iamapi__invalid(err, p->member, v, what);
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
            return iamapi__invalid(err, "tags", NULL, NULL);
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
            return iamapi__invalid(err, member, NULL, NULL);
        if (iamapi_utf8len(k) < 1 || iamapi_utf8len(k) > 128)
            return iamapi__invalid(err, member, k,
                                   "have length less than or equal to 128 and greater than or "
                                   "equal to 1");
        snprintf(member, sizeof(member), "tags.%zu.member.value", i + 1);
        if (!v)
            return iamapi__invalid(err, member, NULL, NULL);
        if (iamapi_utf8len(v) > 256)
            return iamapi__invalid(err, member, v, "have length less than or equal to 256");
    }
    { /* IAM's tag keys are case-insensitive: team and Team are one key */
        const char *dup;
        if (op_tags_dup_key(tags, &dup))
            return ty_err_set(err, TY_EINVAL, "Tags",
                              "Duplicate tag keys found. Please note that Tag keys are case "
                              "insensitive.");
    }
    return quota_principal_tag_check(tags, err); /* trainyard's quota tag holds a number */
}

static int iamapi_check_tagkeys(json_t *in, struct ty_err *err)
{
    json_t *keys = json_object_get(in, "TagKeys"), *k;
    size_t i;
    if (!keys)
        return iamapi__invalid(err, "tagKeys", NULL, NULL);
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
            return iamapi__invalid(err, member, NULL, NULL);
        if (json_string_length(k) < 1 || iamapi_utf8len(json_string_value(k)) > 128)
            return iamapi__invalid(err, member, json_string_value(k),
                                   "have length less than or equal to 128 and greater than or "
                                   "equal to 1");
    }
    return 0;
}

const char *iamapi__s(json_t *in, const char *k)
{
    return json_string_value(json_object_get(in, k));
}

/* The user an action without UserName acts on: the caller's name. */
const char *iamapi__target(struct iamapi__ctx *x)
{
    const char *u = iamapi__s(x->in, "UserName");
    const char *slash;
    if (u)
        return u;
    slash = strrchr(x->c->principal_arn, '/');
    return slash ? slash + 1 : "";
}

int iamapi__no_user(struct ty_err *err, const char *name)
{
    return ty_err_set(err, TY_ENOTFOUND, "UserName", "The user with name %.64s cannot be found.",
                      name);
}

/* MaxItems (default 100) and Marker (a decimal offset or a name to resume at). */
long iamapi__max_items(json_t *in)
{
    const char *m = iamapi__s(in, "MaxItems");
    return m ? strtol(m, NULL, 10) : 100;
}

void iamapi__page_end(struct ty_buf *b, int truncated, const char *marker)
{
    ty_buf_printf(b, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
    if (truncated)
        iamapi__xml_el(b, "Marker", marker);
}

/* ListUsers and ListRoles over the store's list (an array of objects, by lower-cased name):
   under <wrap>, the entries whose Path starts with PathPrefix, from Marker on, at most
   MaxItems, each written by emit; entries without name_key, Path or need (when not NULL) are
   passed over. Takes list. */
int iamapi__list_page(struct iamapi__ctx *x, json_t *list, const char *wrap, const char *name_key,
                      const char *need, iamapi__emit emit)
{
    const char *prefix = iamapi__s(x->in, "PathPrefix");
    const char *marker = iamapi__s(x->in, "Marker");
    long max = iamapi__max_items(x->in), n = 0;
    char next[STORE_IAM_NAME_MAX + 1] = "";
    size_t i;
    json_t *j;

    ty_buf_printf(x->out, "<%s>", wrap);
    json_array_foreach(list, i, j)
    {
        char lname[STORE_IAM_NAME_MAX + 1];
        const char *name = json_string_value(json_object_get(j, name_key));
        const char *path = json_string_value(json_object_get(j, "Path"));
        size_t k;
        if (!name || !path || (need && !json_string_value(json_object_get(j, need))))
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
        emit(x->out, j, name, path);
        n++;
    }
    ty_buf_printf(x->out, "</%s>", wrap);
    iamapi__page_end(x->out, next[0] != '\0', next);
    json_decref(list);
    return 0;
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
#define P_BOUNDARY_OPT                                                                             \
    {                                                                                              \
        "PermissionsBoundary", "permissionsBoundary", 0, 20, 2048, PAT_TEXT                        \
    }
#define P_BOUNDARY_REQ                                                                             \
    {                                                                                              \
        "PermissionsBoundary", "permissionsBoundary", 1, 20, 2048, PAT_TEXT                        \
    }
#define IAMAPI_NPARAMS 6

enum { T_NONE, T_OPT, T_REQ, T_KEYS };

struct iamapi__action {
    const char *name;
    iamapi__fn fn;
    int has_result; /* whether the response has an <XxxResult> element */
    int tags;       /* T_*: Tags optional/required, TagKeys required */
    struct iamapi__param params[IAMAPI_NPARAMS];
    const struct iamapi__owner *owner; /* for the inline-policy actions (iamapi_inline.c) */
};

static const struct iamapi__action iamapi_actions[] = {
    {"CreateUser",
     iamapi__create_user,
     1,
     T_OPT,
     {P_USER_REQ, {"Path", "path", 0, 1, 512, PAT_PATH}, P_BOUNDARY_OPT},
     NULL},
    {"GetUser", iamapi__get_user, 1, T_NONE, {P_USER_OPT}, NULL},
    {"PutUserPermissionsBoundary",
     iamapi__put_user_boundary,
     0,
     T_NONE,
     {P_USER_REQ, P_BOUNDARY_REQ},
     NULL},
    {"DeleteUserPermissionsBoundary", iamapi__delete_user_boundary, 0, T_NONE, {P_USER_REQ}, NULL},
    {"PutRolePermissionsBoundary",
     iamapi__put_role_boundary,
     0,
     T_NONE,
     {P_ROLE_REQ, P_BOUNDARY_REQ},
     NULL},
    {"DeleteRolePermissionsBoundary", iamapi__delete_role_boundary, 0, T_NONE, {P_ROLE_REQ}, NULL},
    {"ListUsers",
     iamapi__list_users,
     1,
     T_NONE,
     {{"PathPrefix", "pathPrefix", 0, 1, 512, PAT_PREFIX}, P_MARKER, P_MAXITEMS},
     NULL},
    {"DeleteUser", iamapi__delete_user, 0, T_NONE, {P_USER_REQ}, NULL},
    {"TagUser", iamapi__tag_user, 0, T_REQ, {P_USER_REQ}, NULL},
    {"UntagUser", iamapi__untag_user, 0, T_KEYS, {P_USER_REQ}, NULL},
    {"ListUserTags", iamapi__list_user_tags, 1, T_NONE, {P_USER_REQ, P_MARKER, P_MAXITEMS}, NULL},
    {"CreateAccessKey", iamapi__create_access_key, 1, T_NONE, {P_USER_OPT}, NULL},
    {"ListAccessKeys",
     iamapi__list_access_keys,
     1,
     T_NONE,
     {P_USER_OPT, P_MARKER, P_MAXITEMS},
     NULL},
    {"DeleteAccessKey",
     iamapi__delete_access_key,
     0,
     T_NONE,
     {P_USER_OPT, {"AccessKeyId", "accessKeyId", 1, 16, 128, PAT_WORD}},
     NULL},
    {"PutUserPolicy",
     iamapi__inline_put,
     0,
     T_NONE,
     {P_USER_REQ,
      P_POLICYNAME,
      {"PolicyDocument", "policyDocument", 1, 1, IAM_MAX_DOC_BYTES, PAT_TEXT}},
     &iamapi__user_owner},
    {"GetUserPolicy",
     iamapi__inline_get,
     1,
     T_NONE,
     {P_USER_REQ, P_POLICYNAME},
     &iamapi__user_owner},
    {"ListUserPolicies",
     iamapi__inline_list,
     1,
     T_NONE,
     {P_USER_REQ, P_MARKER, P_MAXITEMS},
     &iamapi__user_owner},
    {"DeleteUserPolicy",
     iamapi__inline_delete,
     0,
     T_NONE,
     {P_USER_REQ, P_POLICYNAME},
     &iamapi__user_owner},
    {"UpdateAccessKey",
     iamapi__update_access_key,
     0,
     T_NONE,
     {P_USER_OPT,
      {"AccessKeyId", "accessKeyId", 1, 16, 128, PAT_WORD},
      {"Status", "status", 1, 1, 16, PAT_WORD}},
     NULL},
    {"CreateRole",
     iamapi__create_role,
     1,
     T_OPT,
     {P_ROLE_REQ,
      {"Path", "path", 0, 1, 512, PAT_PATH},
      {"AssumeRolePolicyDocument", "assumeRolePolicyDocument", 1, 1, IAM_MAX_DOC_BYTES, PAT_TEXT},
      {"Description", "description", 0, 0, 1000, PAT_TEXT},
      {"MaxSessionDuration", "maxSessionDuration", 0, 1, 5, PAT_WORD},
      P_BOUNDARY_OPT},
     NULL},
    {"GetRole", iamapi__get_role, 1, T_NONE, {P_ROLE_REQ}, NULL},
    {"ListRoles",
     iamapi__list_roles,
     1,
     T_NONE,
     {{"PathPrefix", "pathPrefix", 0, 1, 512, PAT_PREFIX}, P_MARKER, P_MAXITEMS},
     NULL},
    {"DeleteRole", iamapi__delete_role, 0, T_NONE, {P_ROLE_REQ}, NULL},
    {"TagRole", iamapi__tag_role, 0, T_REQ, {P_ROLE_REQ}, NULL},
    {"UntagRole", iamapi__untag_role, 0, T_KEYS, {P_ROLE_REQ}, NULL},
    {"ListRoleTags", iamapi__list_role_tags, 1, T_NONE, {P_ROLE_REQ, P_MARKER, P_MAXITEMS}, NULL},
    {"PutRolePolicy",
     iamapi__inline_put,
     0,
     T_NONE,
     {P_ROLE_REQ, P_POLICYNAME, P_POLICYDOC},
     &iamapi__role_owner},
    {"GetRolePolicy",
     iamapi__inline_get,
     1,
     T_NONE,
     {P_ROLE_REQ, P_POLICYNAME},
     &iamapi__role_owner},
    {"ListRolePolicies",
     iamapi__inline_list,
     1,
     T_NONE,
     {P_ROLE_REQ, P_MARKER, P_MAXITEMS},
     &iamapi__role_owner},
    {"DeleteRolePolicy",
     iamapi__inline_delete,
     0,
     T_NONE,
     {P_ROLE_REQ, P_POLICYNAME},
     &iamapi__role_owner},
    {"CreateLoginProfile",
     iamapi__create_login_profile,
     1,
     T_NONE,
     {P_USER_OPT,
      {"Password", "password", 1, 1, 128, PAT_TEXT},
      {"PasswordResetRequired", "passwordResetRequired", 0, 4, 5, PAT_WORD}},
     NULL},
    {"UpdateLoginProfile",
     iamapi__update_login_profile,
     0,
     T_NONE,
     {P_USER_REQ,
      {"Password", "password", 0, 1, 128, PAT_TEXT},
      {"PasswordResetRequired", "passwordResetRequired", 0, 4, 5, PAT_WORD}},
     NULL},
    {"GetLoginProfile", iamapi__get_login_profile, 1, T_NONE, {P_USER_OPT}, NULL},
    {"DeleteLoginProfile", iamapi__delete_login_profile, 0, T_NONE, {P_USER_OPT}, NULL},
    {"ChangePassword",
     iamapi__change_password,
     0,
     T_NONE,
     {{"OldPassword", "oldPassword", 1, 1, 128, PAT_TEXT},
      {"NewPassword", "newPassword", 1, 1, 128, PAT_TEXT}},
     NULL},
    {"GetAccountPasswordPolicy", iamapi__get_password_policy, 1, T_NONE, {{0}}, NULL},
    {"UpdateAccountPasswordPolicy",
     iamapi__update_password_policy,
     0,
     T_NONE,
     {{"MinimumPasswordLength", "minimumPasswordLength", 0, 1, 3, PAT_WORD}},
     NULL},
    {"DeleteAccountPasswordPolicy", iamapi__delete_password_policy, 0, T_NONE, {{0}}, NULL},
};

static int iamapi_validate(const struct iamapi__action *a, json_t *in, struct ty_err *err)
{
    const char *mi;
    for (int i = 0; i < IAMAPI_NPARAMS && a->params[i].name; i++)
        if (iamapi_check(in, &a->params[i], err) != 0)
            return -TY_EINVAL;
    mi = iamapi__s(in, "Status");
    if (mi && strcmp(a->name, "UpdateAccessKey") == 0 && strcmp(mi, "Active") != 0 &&
        strcmp(mi, "Inactive") != 0)
        return iamapi__invalid(err, "status", mi, "satisfy enum value set: [Active, Inactive]");
    mi = iamapi__s(in, "MaxSessionDuration");
    if (mi && strcmp(a->name, "CreateRole") == 0 &&
        (strtol(mi, NULL, 10) < 3600 || strtol(mi, NULL, 10) > 43200))
        return iamapi__invalid(err, "maxSessionDuration", mi,
                               strtol(mi, NULL, 10) < 3600
                                   ? "have value greater than or equal to 3600"
                                   : "have value less than or equal to 43200");
    mi = iamapi__s(in, "MaxItems");
    if (mi && (strtol(mi, NULL, 10) < 1 || strtol(mi, NULL, 10) > 1000))
        return iamapi__invalid(err, "maxItems", mi,
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
    action = iamapi__s(in, "Action");
    version = iamapi__s(in, "Version");
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
    if (iamapi__authorize(c->store, a->name, in, c->principal_arn, c->region, c->account_id,
                          &err) != 0)
        goto fail;
    x.c = c;
    x.in = in;
    x.owner = a->owner;
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
        iamapi__xml_el(&b, "RequestId", c->req->request_id);
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
    c.region = oc->region;
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
    const char *action = iamapi__s(in, "Action");
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
    if ((rc = iamapi__authorize(s, a->name, in, principal_arn, region, account_id, err)) != 0)
        return rc;
    memset(&c, 0, sizeof(c));
    c.store = s;
    c.account_id = account_id;
    c.region = region;
    c.principal_arn = principal_arn;
    x.c = &c;
    x.in = in;
    x.owner = a->owner;
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
