/*
 * sts.c - STS on trainyard's one port (query protocol: a form body or query string with
 * Action= and Version=2011-06-15, XML answers and XML errors as botocore's query parser reads
 * them). Serves GetCallerIdentity for the principal that signed the request.
 */
#define _GNU_SOURCE /* strcasestr */
#include "sts.h"

#include "auth.h"
#include "sigv4.h"
#include "store.h"
#include "store_iam.h"
#include "ty_buf.h"
#include "ty_log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define STS_NS "https://sts.amazonaws.com/doc/2011-06-15/"

static __thread struct store *sts__store;
static pthread_key_t sts__key;
static pthread_once_t sts__key_once = PTHREAD_ONCE_INIT;

/* Thread exit: closes this thread's Redis connection. */
static void sts__thread_end(void *unused)
{
    (void)unused;
    store_close(sts__store);
    sts__store = NULL;
}

static void sts__key_init(void)
{
    pthread_key_create(&sts__key, sts__thread_end);
}

/* 1 when the credential scope in s ("AKID/DATE/REGION/SERVICE/...") names sts. */
static int sts__scope(const char *s)
{
    const char *p = s;
    for (int i = 0; i < 3 && p; i++) {
        p = strchr(p, '/');
        if (p)
            p++;
    }
    return p && (strncmp(p, "sts/", 4) == 0 || strncasecmp(p, "sts%2F", 6) == 0);
}

int sts_is_request(const struct http_request *req)
{
    const char *a = http_header(req, "Authorization"), *c;

    if (a) {
        c = strstr(a, "Credential=");
        return c && sts__scope(c + 11);
    }
    c = req->query ? strstr(req->query, "X-Amz-Credential=") : NULL;
    if (c) {
        /* AKID%2FDATE%2FREGION%2Fsts%2F... */
        const char *p = c + 17;
        for (int i = 0; i < 3 && p; i++) {
            const char *n = strcasestr(p, "%2F");
            p = n ? n + 3 : NULL;
        }
        return p && strncasecmp(p, "sts%2F", 6) == 0;
    }
    return 0;
}

static void sts__xml_esc(struct ty_buf *b, const char *s)
{
    ty_buf_put_xml(b, s);
}

static void sts__error(struct http_request *req, struct http_response *resp, int status,
                       const char *code, const char *msg)
{
    struct ty_buf b;
    ty_buf_init(&b, 16384);
    ty_buf_printf(&b, "<ErrorResponse xmlns=\"" STS_NS "\"><Error><Type>%s</Type><Code>",
                  status >= 500 ? "Receiver" : "Sender");
    sts__xml_esc(&b, code);
    ty_buf_puts(&b, "</Code><Message>");
    sts__xml_esc(&b, msg);
    ty_buf_printf(&b, "</Message></Error><RequestId>%s</RequestId></ErrorResponse>",
                  req->request_id);
    resp->status = status;
    resp->content_type = "text/xml";
    resp->len = b.len;
    resp->body = ty_buf_steal(&b);
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
}

void sts_route(struct http_request *req, struct http_response *resp, const struct route_ctx *rc)
{
    struct sigv4_request sreq;
    struct sigv4_auth auth;
    struct ty_err err;
    char action[64] = "", version[32] = "", uid[600];
    struct auth_principal p;
    struct ty_buf b;

    ty_err_clear(&err);
    if (req->too_big) {
        sts__error(req, resp, 413, "RequestEntityTooLarge", "Request body too large");
        return;
    }
    memset(&sreq, 0, sizeof(sreq));
    sreq.method = req->method;
    sreq.path = req->path;
    sreq.query = req->query;
    sreq.headers = req->headers;
    sreq.nheaders = req->nheaders;
    sreq.body = req->body.data ? req->body.data : "";
    sreq.body_len = req->body.len;
    if (sigv4_parse(&sreq, &auth, &err) != 0) {
        if (err.code == TY_ENOAUTH)
            sts__error(req, resp, 403, "MissingAuthenticationToken",
                       "Request is missing Authentication Token");
        else
            sts__error(req, resp, 400, "IncompleteSignature", err.msg);
        return;
    }
    pthread_once(&sts__key_once, sts__key_init);
    pthread_setspecific(sts__key, (void *)1);
    if (!sts__store)
        sts__store = store_open(rc->redis_url, &err);
    if (!sts__store) {
        sts__error(req, resp, 503, "ServiceUnavailable", err.msg);
        return;
    }
    /* scope, key, session token and signature in one place (auth.h); STS's words for each */
    if (auth_verify(sts__store, &sreq, &auth, "sts", time(NULL), &p, &err) != 0) {
        if (err.code == TY_EREDIS) {
            store_close(sts__store);
            sts__store = NULL;
            sts__error(req, resp, 503, "ServiceUnavailable", err.msg);
        } else if (err.code == TY_ENOTFOUND || err.code == TY_EBADKEY) {
            sts__error(req, resp, 403, "InvalidClientTokenId",
                       "The security token included in the request is invalid.");
        } else if (err.code == TY_EEXPIREDTOKEN) {
            sts__error(req, resp, 400, "ExpiredToken", err.msg);
        } else if (err.code != TY_EBADSIG) {
            sts__error(req, resp, 500, "InternalFailure", err.msg);
        } else if (strncmp(err.msg, "Signature expired", 17) == 0 ||
                   strcmp(err.field, "service") == 0) {
            sts__error(req, resp, 403, "SignatureDoesNotMatch", err.msg);
        } else {
            sts__error(req, resp, 403, "SignatureDoesNotMatch",
                       "The request signature we calculated does not match the signature you "
                       "provided. Check your AWS Secret Access Key and signing method. Consult "
                       "the service documentation for details.");
        }
        return;
    }
    if (!auth_form_param(req->body.data ? req->body.data : "", req->body.len, "Action", action,
                         sizeof(action)))
        auth_form_param(req->query, strlen(req->query), "Action", action, sizeof(action));
    if (!auth_form_param(req->body.data ? req->body.data : "", req->body.len, "Version", version,
                         sizeof(version)))
        auth_form_param(req->query, strlen(req->query), "Version", version, sizeof(version));
    if (strcmp(action, "GetCallerIdentity") != 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "Could not find operation %.64s for version %.20s", action,
                 version[0] ? version : "NO_VERSION_SPECIFIED");
        sts__error(req, resp, 400, "InvalidAction", msg);
        return;
    }
    ty_buf_init(&b, 8192);
    ty_buf_puts(&b, "<GetCallerIdentityResponse xmlns=\"" STS_NS "\"><GetCallerIdentityResult>"
                    "<Arn>");
    sts__xml_esc(&b, p.arn);
    ty_buf_puts(&b, "</Arn><UserId>");
    /* an assumed role's "<RoleId>:<session>" (auth.h), an IAM user's unique id (AIDA...), else
       the access key id (store_iam.h) */
    auth_user_id(sts__store, &p, uid, sizeof(uid));
    if (uid[0])
        sts__xml_esc(&b, uid);
    else if (store_iam_userid(sts__store, p.arn, uid, sizeof(uid), &err) == 0)
        sts__xml_esc(&b, uid);
    else
        sts__xml_esc(&b, auth.access_key);
    ty_buf_puts(&b, "</UserId><Account>");
    sts__xml_esc(&b, rc->account_id ? rc->account_id : "000000000000");
    ty_buf_printf(&b,
                  "</Account></GetCallerIdentityResult><ResponseMetadata><RequestId>%s"
                  "</RequestId></ResponseMetadata></GetCallerIdentityResponse>",
                  req->request_id);
    resp->status = 200;
    resp->content_type = "text/xml";
    resp->len = b.len;
    resp->body = ty_buf_steal(&b);
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
}
