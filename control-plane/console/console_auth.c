/*
 * console_auth.c - console sessions, sign-in, sign-out and CSRF (console_auth.h).
 *
 * Invariants: a session id and a CSRF token are 32 bytes of the OS CSPRNG (hex); Redis holds
 * only the session id's SHA-256 (store_res.c); passwords go straight to ops/password.c.
 */
#include "console_auth.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "auth.h"
#include "console.h"
#include "password.h"
#include "store_iam.h"
#include "store_res.h"
#include "ty_log.h"
#include "ty_rand.h"

int console_auth_same(const char *a, const char *b)
{
    size_t n;
    if (!a || !b)
        return 0;
    n = strlen(a);
    if (n != strlen(b) || n == 0)
        return 0;
    return CRYPTO_memcmp(a, b, n) == 0;
}

void console_auth_release(struct console_sess *s)
{
    if (!s)
        return;
    json_decref(s->doc);
    s->doc = NULL;
    OPENSSL_cleanse(s->sid, sizeof(s->sid));
}

int console_auth_session(struct store *s, struct http_request *req, struct console_sess *sess,
                         struct ty_err *err)
{
    struct console_sess out;
    const char *kind;

    memset(&out, 0, sizeof(out));
    if (console_cookie(http_header(req, "Cookie"), CONSOLE_AUTH_COOKIE, out.sid, sizeof(out.sid)) !=
        0)
        return ty_err_set(err, TY_ENOTFOUND, NULL, "not signed in");
    out.doc = store_res_session_get(s, out.sid, err);
    if (!out.doc)
        return -err->code;
    kind = json_string_value(json_object_get(out.doc, "Kind"));
    out.kind = kind && strcmp(kind, "iam") == 0 ? CONSOLE_IAM : CONSOLE_STUDIO;
    out.principal = json_string_value(json_object_get(out.doc, "Principal"));
    out.user = json_string_value(
        json_object_get(out.doc, out.kind == CONSOLE_IAM ? "UserName" : "UserProfileName"));
    out.csrf = json_string_value(json_object_get(out.doc, "Csrf"));
    if (!out.user || !out.csrf) {
        console_auth_release(&out);
        return ty_err_set(err, TY_ENOTFOUND, NULL, "not signed in");
    }
    if (!out.principal)
        out.principal = "";
    *sess = out;
    return 0;
}

int console_auth_start(struct store *s, json_t *doc, const char *scope, int ttl_s, char *sid,
                       size_t n, struct ty_err *err)
{
    char csrf[65], id[CONSOLE_AUTH_SID_LEN + 1];
    int rc;
    if (n <= CONSOLE_AUTH_SID_LEN)
        return ty_err_set(err, TY_EINVAL, NULL, "sid buffer too small");
    if (ty_rand_hex(id, CONSOLE_AUTH_SID_LEN) != 0 || ty_rand_hex(csrf, 64) != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "random source failed");
    json_object_set_new(doc, "Csrf", json_string(csrf));
    rc = store_res_session_put(s, id, scope, doc, ttl_s, err);
    if (rc == 0)
        memcpy(sid, id, sizeof(id));
    OPENSSL_cleanse(id, sizeof(id));
    return rc;
}

int console_auth_login(struct store *s, const char *account_id, const char *account,
                       const char *name, const char *password, struct password_try *t, char *sid,
                       size_t n, struct ty_err *err)
{
    struct store_iam_user u;
    char scope[96], lname[STORE_IAM_NAME_MAX + 1];
    json_t *doc;
    int rc;
    size_t i;

    memset(&u, 0, sizeof(u));
    if (strlen(name) > STORE_IAM_NAME_MAX)
        name = "";
    rc = name[0] ? store_iam_user_get(s, name, &u, NULL, err) : -TY_ENOTFOUND;
    if (rc != 0 && rc != -TY_ENOTFOUND && rc != -TY_EINVAL)
        return rc;
    if (rc != 0 || strcmp(account, account_id) != 0)
        u.id[0] = '\0'; /* the KDF still runs: no timing difference */
    ty_err_clear(err);
    rc = password_attempt(s, name[0] ? name : "-", u.id, password, t, err);
    if (rc != 0) {
        ty_log(TY_LOG_INFO, "console.signin_failed", "user='%.64s' source=%.64s code=%s", name,
               t->source, ty_err_aws_name(err->code));
        return rc;
    }
    for (i = 0; u.name[i]; i++)
        lname[i] = (char)tolower((unsigned char)u.name[i]);
    lname[i] = '\0';
    snprintf(scope, sizeof(scope), "iam-%s", lname);
    doc = json_pack("{s:s,s:s,s:s,s:b}", "Kind", "iam", "Principal", u.arn, "UserName", u.name,
                    "PasswordResetRequired", t->reset);
    if (!doc)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    rc = console_auth_start(s, doc, scope, CONSOLE_AUTH_TTL_S, sid, n, err);
    json_decref(doc);
    if (rc == 0)
        ty_log(TY_LOG_INFO, "console.signin", "user=%s", u.name);
    return rc;
}

int console_auth_logout(struct store *s, struct http_request *req, struct ty_err *err)
{
    char sid[CONSOLE_AUTH_SID_LEN + 1];
    if (console_cookie(http_header(req, "Cookie"), CONSOLE_AUTH_COOKIE, sid, sizeof(sid)) != 0)
        return 0;
    return store_res_session_end(s, sid, err);
}

void console_auth_cookie(char *out, size_t n, const char *sid, int max_age, int secure)
{
    snprintf(out, n, "%s=%s; Path=/console; Max-Age=%d; HttpOnly; SameSite=Strict%s",
             CONSOLE_AUTH_COOKIE, sid ? sid : "", sid ? max_age : 0, secure ? "; Secure" : "");
}

int console_auth_secure(const struct http_request *req)
{
    const char *p = http_header(req, "X-Forwarded-Proto");
    return p && strcasecmp(p, "https") == 0;
}

int console_auth_form(const struct http_request *req, const char *name, char *out, size_t n)
{
    if (!req->body.data || req->body.len == 0)
        return 0;
    return auth_form_param(req->body.data, req->body.len, name, out, n);
}

int console_auth_csrf_ok(const struct console_sess *sess, const struct http_request *req)
{
    char tok[130];
    const char *origin = http_header(req, "Origin"), *host = http_header(req, "Host");
    if (!sess || !sess->csrf || !console_auth_form(req, "csrf", tok, sizeof(tok)))
        return 0;
    if (!console_auth_same(tok, sess->csrf))
        return 0;
    /* "Origin: null" (a sandboxed frame, a data: URL, a redirect chain) is no origin of ours */
    if (origin) {
        const char *o = strstr(origin, "://");
        if (!o || !host || strcasecmp(o + 3, host) != 0)
            return 0;
    }
    return 1;
}
