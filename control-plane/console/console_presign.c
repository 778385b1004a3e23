/*
 * console_presign.c - S3 presigned URLs for the console's download links (console_presign.h).
 */
#include "console_presign.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "authz.h"
#include "console.h"
#include "console_html.h"
#include "objstore.h"
#include "session.h"
#include "sigv4.h"
#include "store_iam.h"

/* The credentials a URL is signed with (secrets: cleansed after use). */
struct presign_creds {
    char akid[128];
    char secret[128];
    char token[SESSION_STOKEN_LEN]; /* "" for a long-term key */
};

/* A Studio user's: temporary credentials of his execution role, living expires_s. */
static int presign_role_creds(const struct console_ctx *c, int expires_s, struct presign_creds *pc,
                              struct ty_err *err)
{
    const char *pid = json_string_value(json_object_get(c->sess->doc, "ProfileId"));
    char label[128], tok[SESSION_TOKEN_LEN];
    struct session_creds sc;
    int rc;

    if (!pid || !c->sess->principal || !strstr(c->sess->principal, ":role/"))
        return ty_err_set(err, TY_ENOTFOUND, NULL,
                          "This user profile has no execution role to sign the URL with.");
    snprintf(label, sizeof(label), "console/%.100s", pid);
    if ((rc = session_job_grant(c->s, label, c->sess->principal, NULL, expires_s + 60, tok,
                                sizeof(tok), err)) != 0)
        return rc;
    rc = session_mint(c->s, tok, expires_s, time(NULL), &sc, err);
    OPENSSL_cleanse(tok, sizeof(tok));
    if (rc != 0)
        return rc;
    snprintf(pc->akid, sizeof(pc->akid), "%s", sc.access_key);
    snprintf(pc->secret, sizeof(pc->secret), "%s", sc.secret);
    snprintf(pc->token, sizeof(pc->token), "%s", sc.token);
    OPENSSL_cleanse(&sc, sizeof(sc));
    return 0;
}

/* An IAM user's: his first Active access key. */
static int presign_user_creds(const struct console_ctx *c, struct presign_creds *pc,
                              struct ty_err *err)
{
    json_t *keys = store_iam_key_list(c->s, c->sess->user, err), *k;
    char arn[1024];
    size_t i;
    int rc = -TY_ENOTFOUND;

    json_array_foreach(keys, i, k)
    {
        const char *id = json_string_value(json_object_get(k, "AccessKeyId"));
        const char *st = json_string_value(json_object_get(k, "Status"));
        if (!id || !st || strcmp(st, "Active") != 0)
            continue;
        if (store_principal_get(c->s, id, pc->secret, sizeof(pc->secret), arn, sizeof(arn), err) ==
                0 &&
            strcmp(arn, c->sess->principal) == 0) {
            snprintf(pc->akid, sizeof(pc->akid), "%s", id);
            pc->token[0] = '\0';
            rc = 0;
            break;
        }
    }
    json_decref(keys);
    if (rc != 0)
        OPENSSL_cleanse(pc->secret, sizeof(pc->secret));
    if (rc == -TY_ENOTFOUND)
        ty_err_set(err, TY_ENOTFOUND, NULL,
                   "IAM user %.64s has no active access key to sign a presigned URL with: create "
                   "one on the user's page, or use the console's download link.",
                   c->sess->user);
    return rc;
}

/* Appends s3-style percent-encoding of s ('/' kept) to out. */
static int presign_path(char *out, size_t n, const char *bucket, const char *key)
{
    static const char h[] = "0123456789ABCDEF";
    size_t o = (size_t)snprintf(out, n, "/%s/", bucket);
    if (o >= n)
        return -1;
    for (const char *p = key; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            strchr("-_.~/", ch)) {
            if (o + 2 > n)
                return -1;
            out[o++] = (char)ch;
        } else {
            if (o + 4 > n)
                return -1;
            out[o++] = '%';
            out[o++] = h[ch >> 4];
            out[o++] = h[ch & 15];
        }
    }
    out[o] = '\0';
    return 0;
}

/* 1 when host is a Host header value fit for a URL (host[:port], no spaces or quotes). */
static int presign_host_ok(const char *host)
{
    if (!host || !*host || strlen(host) > 255)
        return 0;
    for (const char *p = host; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr(".-:[]", *p)))
            return 0;
    return 1;
}

int console_presign_url(const struct console_ctx *c, const char *bucket, const char *key,
                        int expires_s, char *url, size_t n, struct ty_err *err)
{
    char arn[2200], path[3300], amz_date[20], qs[4096];
    const char *host = http_header(c->req, "Host");
    struct presign_creds pc;
    struct ty_kv hdr;
    struct sigv4_request r;
    struct tm tm;
    time_t now = time(NULL);
    int rc;

    memset(&pc, 0, sizeof(pc));
    if (!presign_host_ok(host))
        return ty_err_set(err, TY_EINVAL, "Host", "The request's Host header cannot be used.");
    if (expires_s < 1 || expires_s > SIGV4_MAX_EXPIRES_S || !objstore_bucket_name_ok(bucket) ||
        presign_path(path, sizeof(path), bucket, key) != 0)
        return ty_err_set(err, TY_EINVAL, "uri", "The object cannot be presigned.");
    snprintf(arn, sizeof(arn), "arn:aws:s3:::%s/%s", bucket, key);
    if ((rc = authz_check(c->s, c->sess->principal, "s3:GetObject", arn, NULL, 0, err)) != 0)
        return rc;
    rc = c->sess->kind == CONSOLE_STUDIO ? presign_role_creds(c, expires_s, &pc, err)
                                         : presign_user_creds(c, &pc, err);
    if (rc != 0)
        return rc;
    gmtime_r(&now, &tm);
    strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
    hdr.name = "host";
    hdr.value = host;
    memset(&r, 0, sizeof(r));
    r.method = "GET";
    r.path = path;
    /* signed into the URL: the browser saves the object, never shows it on the console's
       origin (S3's answers are sandboxed besides, ops/s3.c) */
    r.query = "response-content-disposition=attachment";
    r.headers = &hdr;
    r.nheaders = 1;
    rc = sigv4_presign(&r, pc.akid, pc.secret, pc.token[0] ? pc.token : NULL,
                       console_call_region(c), "s3", amz_date, expires_s, qs, sizeof(qs));
    OPENSSL_cleanse(&pc, sizeof(pc));
    if (rc != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "The URL could not be signed.");
    if ((size_t)snprintf(url, n, "%s://%s%s?%s", console_auth_secure(c->req) ? "https" : "http",
                         host, path, qs) >= n)
        return ty_err_set(err, TY_EINVAL, "uri", "The presigned URL is too long.");
    return 0;
}

void console_presign_serve(const struct console_ctx *c, const char *query,
                           struct http_response *resp)
{
    char uri[2100], bucket[64], show[4] = "", url[6000];
    const char *slash, *key;
    struct ty_err err;
    struct ty_buf b;

    ty_err_clear(&err);
    if (console_query_param(query, "uri", uri, sizeof(uri)) != 0 || strncmp(uri, "s3://", 5) != 0 ||
        !(slash = strchr(uri + 5, '/')) || slash == uri + 5 ||
        (size_t)(slash - uri - 5) >= sizeof(bucket) || !slash[1]) {
        console_html_message(c->req, resp, 400, "Bad request", "uri must be s3://bucket/key.",
                             c->sess);
        return;
    }
    memcpy(bucket, uri + 5, (size_t)(slash - uri - 5));
    bucket[slash - uri - 5] = '\0';
    key = slash + 1;
    console_query_param(query, "show", show, sizeof(show));
    if (console_presign_url(c, bucket, key, CONSOLE_PRESIGN_S, url, sizeof(url), &err) == 0 &&
        strcmp(show, "1") != 0) {
        console_html_redirect(c->req, resp, url);
        return;
    }
    console_html_start(&b, "Presigned URL", c->sess);
    ty_buf_puts(&b, "<p>Object <code>");
    ty_buf_put_html(&b, uri);
    ty_buf_puts(&b, "</code></p>\n");
    if (err.code != TY_EOK) {
        console_html_error(&b, &err, err.code == TY_EDENIED ? "AccessDenied" : NULL);
        console_html_send(c->req, resp,
                          err.code == TY_EDENIED  ? 403
                          : err.code == TY_EINVAL ? 400
                                                  : 200,
                          &b);
        return;
    }
    ty_buf_printf(&b,
                  "<p>A SigV4 presigned GET of this object, signed with your credentials, valid "
                  "for %d minutes. Anyone holding it can download the object until then.</p>\n"
                  "<p><a id=\"presigned-s3\" class=\"presigned\" href=\"",
                  CONSOLE_PRESIGN_S / 60);
    ty_buf_put_html(&b, url);
    ty_buf_puts(&b, "\">");
    ty_buf_put_html(&b, url);
    ty_buf_puts(&b, "</a></p>\n");
    console_html_send(c->req, resp, 200, &b);
}
