/*
 * sts.c - STS on trainyard's one port (query protocol: a form body or query string with
 * Action= and Version=2011-06-15, XML answers and XML errors as botocore's query parser reads
 * them). Serves GetCallerIdentity for the principal that signed the request (the one
 * implementation of it), authenticated by auth_request on the worker's connection.
 */
#define _GNU_SOURCE /* strcasestr */
#include "sts.h"

#include "auth.h"
#include "sigv4.h"
#include "store.h"
#include "store_iam.h"
#include "ty_buf.h"
#include "ty_log.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define STS_NS "https://sts.amazonaws.com/doc/2011-06-15/"

/* 1 when the credential scope in s ("AKID/DATE/REGION/SERVICE/...") names sts. */
static int sts_scope(const char *s)
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
        return c && sts_scope(c + 11);
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

static void sts_xml_esc(struct ty_buf *b, const char *s)
{
    ty_buf_put_xml(b, s);
}

static void sts_error(struct http_request *req, struct http_response *resp, int status,
                      const char *code, const char *msg)
{
    struct ty_buf b;
    ty_buf_init(&b, 16384);
    ty_buf_printf(&b, "<ErrorResponse xmlns=\"" STS_NS "\"><Error><Type>%s</Type><Code>",
                  status >= 500 ? "Receiver" : "Sender");
    sts_xml_esc(&b, code);
    ty_buf_puts(&b, "</Code><Message>");
    sts_xml_esc(&b, msg);
    ty_buf_printf(&b, "</Message></Error><RequestId>%s</RequestId></ErrorResponse>",
                  req->request_id);
    resp->status = status;
    resp->content_type = "text/xml";
    resp->len = b.len;
    resp->body = ty_buf_steal(&b);
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
}

/* STS's words for an auth_request failure at stage. */
static void sts_auth_error(struct http_request *req, struct http_response *resp,
                           const struct ty_err *err, enum auth_stage stage)
{
    if (stage == AUTH_STAGE_PARSE) {
        if (err->code == TY_ENOAUTH)
            sts_error(req, resp, 403, "MissingAuthenticationToken",
                      "Request is missing Authentication Token");
        else
            sts_error(req, resp, 400, "IncompleteSignature", err->msg);
    } else if (err->code == TY_EREDIS) {
        sts_error(req, resp, 503, "ServiceUnavailable", err->msg);
    } else if (err->code == TY_ENOTFOUND || err->code == TY_EBADKEY) {
        sts_error(req, resp, 403, "InvalidClientTokenId",
                  "The security token included in the request is invalid.");
    } else if (err->code == TY_EEXPIREDTOKEN) {
        sts_error(req, resp, 400, "ExpiredToken", err->msg);
    } else if (err->code != TY_EBADSIG) {
        sts_error(req, resp, 500, "InternalFailure", err->msg);
    } else if (strncmp(err->msg, "Signature expired", 17) == 0 ||
               strcmp(err->field, "service") == 0 || strcmp(err->field, "region") == 0) {
        sts_error(req, resp, 403, "SignatureDoesNotMatch", err->msg);
    } else {
        sts_error(req, resp, 403, "SignatureDoesNotMatch",
                  "The request signature we calculated does not match the signature you "
                  "provided. Check your AWS Secret Access Key and signing method. Consult "
                  "the service documentation for details.");
    }
}

/* The value of a query-protocol parameter: from the form body, else the query string. */
static void sts_param(const struct http_request *req, const char *name, char *out, size_t n)
{
    if (!auth_form_param(req->body.data ? req->body.data : "", req->body.len, name, out, n))
        auth_form_param(req->query, strlen(req->query), name, out, n);
}

void sts_route(struct http_request *req, struct http_response *resp, const struct front_ctx *rc)
{
    struct auth_in in = {.redis_url = rc->redis_url,
                         .service = "sts",
                         .with_body = 1,
                         .region = rc->region,
                         .global = 1};
    struct worker *w = worker_self();
    struct auth_out ao;
    struct ty_err err;
    char action[64] = "", version[32] = "", uid[600];
    struct ty_buf b;

    ty_err_clear(&err);
    if (req->too_big) {
        sts_error(req, resp, 413, "RequestEntityTooLarge", "Request body too large");
        return;
    }
    /* scope, key, session token and signature in one place (auth.h); STS's words for each */
    if (auth_request(w, req, &in, time(NULL), &ao, &err) != 0) {
        sts_auth_error(req, resp, &err, ao.stage);
        return;
    }
    sts_param(req, "Action", action, sizeof(action));
    sts_param(req, "Version", version, sizeof(version));
    if (strcmp(action, "GetCallerIdentity") != 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "Could not find operation %.64s for version %.20s", action,
                 version[0] ? version : "NO_VERSION_SPECIFIED");
        sts_error(req, resp, 400, "InvalidAction", msg);
        return;
    }
    ty_buf_init(&b, 8192);
    ty_buf_puts(&b, "<GetCallerIdentityResponse xmlns=\"" STS_NS "\"><GetCallerIdentityResult>"
                    "<Arn>");
    sts_xml_esc(&b, ao.p.arn);
    ty_buf_puts(&b, "</Arn><UserId>");
    /* an assumed role's "<RoleId>:<session>" (auth.h), an IAM user's unique id (AIDA...), else
       the access key id (store_iam.h) */
    auth_user_id(ao.store, &ao.p, uid, sizeof(uid));
    if (uid[0])
        sts_xml_esc(&b, uid);
    else if (store_iam_userid(ao.store, ao.p.arn, uid, sizeof(uid), &err) == 0)
        sts_xml_esc(&b, uid);
    else
        sts_xml_esc(&b, ao.a.access_key);
    ty_buf_puts(&b, "</UserId><Account>");
    sts_xml_esc(&b, rc->account_id ? rc->account_id : "000000000000");
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
