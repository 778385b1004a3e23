/*
 * auth.c - SigV4 request -> verified principal, for every front end (auth.h).
 */
#include "auth.h"

#include "authgen.h"
#include "session.h"
#include "sigv2.h"
#include "sigv4.h"
#include "store.h"
#include "store_iam.h"
#include "worker.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* First value of header name (any case), or NULL; as http_header, without linking http.c. */
static const char *auth_header(const struct http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++)
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    return NULL;
}

int auth_form_param(const char *s, size_t n, const char *name, char *out, size_t outn)
{
    size_t nl = strlen(name);
    const char *end = s + n;

    while (s && s < end) {
        const char *amp = memchr(s, '&', (size_t)(end - s));
        const char *e = amp ? amp : end;
        if ((size_t)(e - s) >= nl + 1 && strncmp(s, name, nl) == 0 && s[nl] == '=') {
            size_t k = 0;
            for (const char *p = s + nl + 1; p < e && k + 1 < outn; p++) {
                if (*p == '+') {
                    out[k++] = ' ';
                } else if (*p == '%' && e - p > 2) {
                    char h[3] = {p[1], p[2], 0};
                    out[k++] = (char)strtol(h, NULL, 16);
                    p += 2;
                } else {
                    out[k++] = *p;
                }
            }
            out[k] = '\0';
            return 1;
        }
        s = amp ? amp + 1 : NULL;
    }
    return 0;
}

/* A query-protocol parameter from the query string, else from a POST form body. */
static int auth_query_param(const struct http_request *req, const char *name, char *out, size_t n)
{
    if (req->query && auth_form_param(req->query, strlen(req->query), name, out, n))
        return 1;
    if (strcmp(req->method, "POST") == 0 && req->body.data && req->body.len > 0)
        return auth_form_param(req->body.data, req->body.len, name, out, n);
    return 0;
}

const char *auth_service_of(const struct http_request *req)
{
    const char *t = auth_header(req, "X-Amz-Target"), *p = req->path;
    char action[128], version[32];

    if (t) {
        if (strncmp(t, "SageMaker.", 10) == 0)
            return "sagemaker";
        if (strncmp(t, "Logs_20140328.", 14) == 0)
            return "logs";
        if (strncmp(t, "GraniteServiceVersion20100801.", 30) == 0)
            return "monitoring"; /* CloudWatch, JSON 1.0 (ops/cloudwatch.c) */
        return NULL;
    }
    if (strncmp(p, "/sagemaker/", 11) == 0)
        return "sagemaker";
    if (strcmp(p, "/healthz") == 0 || strcmp(p, "/metrics") == 0 ||
        strcmp(p, SESSION_CREDENTIALS_PATH) == 0 ||
        (strncmp(p, "/console", 8) == 0 && (p[8] == '\0' || p[8] == '/')))
        return NULL;
    if (strcmp(p, "/") == 0 && auth_query_param(req, "Action", action, sizeof(action))) {
        if (!auth_query_param(req, "Version", version, sizeof(version)))
            return NULL;
        if (strcmp(version, "2011-06-15") == 0)
            return "sts";
        if (strcmp(version, "2010-05-08") == 0)
            return "iam";
        if (strcmp(version, "2010-08-01") == 0)
            return "monitoring"; /* CloudWatch, query protocol */
        return NULL;
    }
    if (strcmp(p, "/") == 0 && strcmp(req->method, "POST") == 0)
        return NULL;
    return "s3";
}

int auth_parse(const struct sigv4_request *req, int allow_v2, struct sigv4_auth *a,
               struct ty_err *err)
{
    if (allow_v2 && sigv2_detect(req))
        return sigv2_parse(req, a, err);
    return sigv4_parse(req, a, err);
}

int auth_check_scope(const struct sigv4_auth *a, const char *service, struct ty_err *err)
{
    if (a->sigv2 && service && strcmp(service, "s3") != 0)
        return ty_err_set(err, TY_EBADSIG, "service",
                          "Credential should be scoped to correct service: '%s'. ", service);
    if (!service || strcmp(a->service, service) == 0)
        return 0;
    return ty_err_set(err, TY_EBADSIG, "service",
                      "Credential should be scoped to correct service: '%s'. ", service);
}

int auth_check_region(const struct sigv4_auth *a, const char *region, int global,
                      struct ty_err *err)
{
    if (!region || a->sigv2 || strcmp(a->region, region) == 0 ||
        (global && strcmp(a->region, AUTH_GLOBAL_REGION) == 0))
        return 0;
    return ty_err_set(err, TY_EBADSIG, "region", "Credential should be scoped to a valid region. ");
}

void auth_principal_cleanse(struct auth_principal *p)
{
    if (p)
        OPENSSL_cleanse(p->secret, sizeof(p->secret));
}

/* Constant-time equality of two NUL-terminated strings of the same length. */
static int auth_same(const char *a, const char *b)
{
    size_t n = strlen(a);
    if (n != strlen(b))
        return 0;
    return CRYPTO_memcmp(a, b, n) == 0;
}

/* auth_lookup from Redis; OUT: also *expires and token_sha (temporary credentials). */
static int auth_lookup_store(struct store *s, const struct sigv4_auth *a, time_t now,
                             struct auth_principal *p, long long *expires, char token_sha[65],
                             struct ty_err *err)
{
    struct auth_principal out;
    int rc;

    memset(&out, 0, sizeof(out));
    if (session_is_temporary_key(a->access_key)) {
        struct session_creds c;
        char sha[65];
        rc = session_get(s, a->access_key, &c, err);
        if (rc != 0)
            return rc;
        session_sha256_hex(a->session_token, sha);
        if (!a->session_token[0] || !auth_same(sha, c.token_sha)) {
            OPENSSL_cleanse(&c, sizeof(c));
            return ty_err_set(err, TY_EBADKEY, "X-Amz-Security-Token",
                              "The security token included in the request is invalid.");
        }
        if (c.expires <= (long long)now) {
            OPENSSL_cleanse(&c, sizeof(c));
            return ty_err_set(err, TY_EEXPIREDTOKEN, "X-Amz-Security-Token",
                              "The security token included in the request is expired");
        }
        out.temporary = 1;
        snprintf(out.secret, sizeof(out.secret), "%s", c.secret);
        snprintf(out.arn, sizeof(out.arn), "%s", c.arn);
        snprintf(out.role_arn, sizeof(out.role_arn), "%s", c.role_arn);
        snprintf(out.session_name, sizeof(out.session_name), "%s", c.session_name);
        snprintf(out.job, sizeof(out.job), "%s", c.job);
        *expires = c.expires;
        memcpy(token_sha, c.token_sha, 65);
        OPENSSL_cleanse(&c, sizeof(c));
    } else {
        rc = store_principal_get(s, a->access_key, out.secret, sizeof(out.secret), out.arn,
                                 sizeof(out.arn), err);
        if (rc != 0)
            return rc;
        if (a->session_token[0]) {
            /* a long-term key needs no token; AWS refuses one that comes with it */
            OPENSSL_cleanse(&out, sizeof(out));
            return ty_err_set(err, TY_EBADKEY, "X-Amz-Security-Token",
                              "The security token included in the request is invalid.");
        }
    }
    *p = out;
    OPENSSL_cleanse(&out, sizeof(out));
    return 0;
}

void auth_cache_cleanup(struct auth_cache *c)
{
    if (c)
        OPENSSL_cleanse(c, sizeof(*c));
}

/* The entry of a->access_key in c that is current at generation gen, or NULL. */
static struct auth_cache_entry *auth_cache_find(struct auth_cache *c, const struct sigv4_auth *a,
                                                unsigned long long gen)
{
    for (int i = 0; i < AUTH_CACHE_N; i++) {
        struct auth_cache_entry *e = &c->e[i];
        if (e->access_key[0] && e->gen == gen && strcmp(e->access_key, a->access_key) == 0)
            return e;
    }
    return NULL;
}

/* The checks of a cached principal that depend on the request: session token and expiry. */
static int auth_cache_check(const struct auth_cache_entry *e, const struct sigv4_auth *a,
                            time_t now, struct ty_err *err)
{
    char sha[65];

    if (!e->p.temporary) {
        if (a->session_token[0])
            return ty_err_set(err, TY_EBADKEY, "X-Amz-Security-Token",
                              "The security token included in the request is invalid.");
        return 0;
    }
    session_sha256_hex(a->session_token, sha);
    if (!a->session_token[0] || !auth_same(sha, e->token_sha))
        return ty_err_set(err, TY_EBADKEY, "X-Amz-Security-Token",
                          "The security token included in the request is invalid.");
    if (e->expires <= (long long)now)
        return ty_err_set(err, TY_EEXPIREDTOKEN, "X-Amz-Security-Token",
                          "The security token included in the request is expired");
    return 0;
}

/* auth_lookup through c (NULL: straight from Redis). OUT: *kc = the signing-key cache of the
   principal's entry in c (borrowed), or NULL when it has none. */
static int auth_lookup_in(struct auth_cache *c, struct store *s, const struct sigv4_auth *a,
                          time_t now, struct auth_principal *p, struct sigv4_key **kc,
                          struct ty_err *err)
{
    struct auth_cache_entry *e, *victim;
    unsigned long long gen;
    long long expires = 0;
    char token_sha[65] = "";
    int rc;

    *kc = NULL;
    if (!c) {
        rc = auth_lookup_store(s, a, now, p, &expires, token_sha, err);
        OPENSSL_cleanse(token_sha, sizeof(token_sha));
        return rc;
    }
    gen = authgen_current(s);
    e = auth_cache_find(c, a, gen);
    if (e) {
        if ((rc = auth_cache_check(e, a, now, err)) != 0)
            return rc;
        e->used = ++c->tick;
        *p = e->p;
        *kc = &e->key;
        return 0;
    }
    if ((rc = auth_lookup_store(s, a, now, p, &expires, token_sha, err)) != 0)
        return rc;
    if (strlen(a->access_key) >= sizeof(victim->access_key))
        return 0;
    victim = &c->e[0];
    for (int i = 0; i < AUTH_CACHE_N; i++) {
        if (strcmp(c->e[i].access_key, a->access_key) == 0) {
            victim = &c->e[i];
            break;
        }
        if (c->e[i].used < victim->used)
            victim = &c->e[i];
    }
    OPENSSL_cleanse(victim, sizeof(*victim));
    snprintf(victim->access_key, sizeof(victim->access_key), "%s", a->access_key);
    memcpy(victim->token_sha, token_sha, sizeof(token_sha));
    OPENSSL_cleanse(token_sha, sizeof(token_sha));
    victim->expires = expires;
    victim->gen = gen;
    victim->used = ++c->tick;
    victim->p = *p;
    *kc = &victim->key;
    return 0;
}

int auth_lookup(struct store *s, const struct sigv4_auth *a, time_t now, struct auth_principal *p,
                struct ty_err *err)
{
    struct sigv4_key *kc;
    return auth_lookup_in(NULL, s, a, now, p, &kc, err);
}

/* auth_verify through the principal cache c (NULL: none). */
static int auth_verify_in(struct auth_cache *c, struct store *s, const struct sigv4_request *req,
                          const struct sigv4_auth *a, const char *service, time_t now,
                          struct auth_principal *p, struct ty_err *err)
{
    struct auth_principal out;
    struct sigv4_key *kc;
    int rc;

    if ((rc = auth_check_scope(a, service, err)) != 0)
        return rc;
    if ((rc = auth_lookup_in(c, s, a, now, &out, &kc, err)) != 0)
        return rc;
    rc = a->sigv2 ? sigv2_verify(req, a, out.secret, now, err)
                  : sigv4_verify_key(req, a, out.secret, kc, now, err);
    auth_principal_cleanse(&out);
    if (rc == 0)
        *p = out;
    OPENSSL_cleanse(&out, sizeof(out));
    return rc;
}

int auth_verify(struct store *s, const struct sigv4_request *req, const struct sigv4_auth *a,
                const char *service, time_t now, struct auth_principal *p, struct ty_err *err)
{
    return auth_verify_in(NULL, s, req, a, service, now, p, err);
}

int auth_request(struct worker *w, const struct http_request *req, const struct auth_in *in,
                 time_t now, struct auth_out *out, struct ty_err *err)
{
    struct sigv4_request *sr = &out->sreq;
    int rc;

    memset(out, 0, sizeof(*out));
    sr->method = req->method;
    sr->path = req->path;
    sr->query = req->query;
    sr->headers = req->headers;
    sr->nheaders = req->nheaders;
    if (in->with_body) {
        sr->body = req->body.data ? req->body.data : "";
        sr->body_len = req->body.len;
    }
    if (w)
        w->principal[0] = '\0';
    out->stage = AUTH_STAGE_PARSE;
    if ((rc = auth_parse(sr, in->allow_v2, &out->a, err)) != 0)
        return rc;
    if (out->a.sigv2 && in->v2_bucket)
        snprintf(out->a.v2_bucket, sizeof(out->a.v2_bucket), "%s", in->v2_bucket);
    out->stage = AUTH_STAGE_STORE;
    if (!(out->store = worker_store(w, in->redis_url, err)))
        return -err->code;
    out->stage = AUTH_STAGE_VERIFY;
    if ((rc = auth_check_region(&out->a, in->region, in->global, err)) != 0)
        return rc;
    rc = auth_verify_in(w ? &w->cache : NULL, out->store, sr, &out->a, in->service, now, &out->p,
                        err);
    if (rc == -TY_EREDIS) {
        worker_failed(w, rc);
        out->store = NULL;
    }
    if (rc == 0 && w)
        snprintf(w->principal, sizeof(w->principal), "%s", out->p.arn);
    return rc;
}

int auth_scope_service(const struct http_request *req, char *out, size_t n)
{
    const char *a = auth_header(req, "Authorization"), *c, *p;
    char cred[300];
    size_t k = 0;

    if (n)
        out[0] = '\0';
    if (a) {
        if (!(c = strstr(a, "Credential=")))
            return 0;
        c += 11;
        while (c[k] && c[k] != ',' && c[k] != ' ' && k + 1 < sizeof(cred)) {
            cred[k] = c[k];
            k++;
        }
        cred[k] = '\0';
    } else if (!req->query || !auth_form_param(req->query, strlen(req->query), "X-Amz-Credential",
                                               cred, sizeof(cred))) {
        return 0;
    }
    /* AKID/DATE/REGION/SERVICE/aws4_request: the 4th '/'-field */
    p = cred;
    for (int i = 0; i < 3 && p; i++) {
        p = strchr(p, '/');
        if (p)
            p++;
    }
    if (!p || !(c = strchr(p, '/')))
        return 0;
    snprintf(out, n, "%.*s", (int)(c - p), p);
    return 1;
}

void auth_user_id(struct store *s, const struct auth_principal *p, char *out, size_t n)
{
    static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    char sha[65], id[32];

    if (!p->temporary) {
        if (n)
            out[0] = '\0';
        return;
    }
    /* the role's own id when it exists (and is this ARN, path included) */
    {
        struct store_iam_user u;
        struct ty_err e;
        const char *name = strrchr(p->role_arn, '/');
        ty_err_clear(&e);
        if (s && name && store_iam_role_head(s, name + 1, &u, &e) == 0 &&
            strcmp(u.arn, p->role_arn) == 0 && u.id[0]) {
            snprintf(out, n, "%s:%s", u.id, p->session_name);
            return;
        }
    }
    /* else a stable AROA id derived from the role ARN (the shape of IAM's role ids) */
    session_sha256_hex(p->role_arn, sha);
    memcpy(id, "AROA", 4);
    for (int i = 0; i < 17; i++) {
        char h[3] = {sha[2 * i], sha[2 * i + 1], 0};
        id[4 + i] = b32[strtol(h, NULL, 16) & 31];
    }
    id[21] = '\0';
    snprintf(out, n, "%s:%s", id, p->session_name);
}
