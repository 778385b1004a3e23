/*
 * fuzz_route.c - libFuzzer harness for the routing decision of a request, without a network:
 * which service a request is for (auth_service_of), whether the S3 front end takes it
 * (s3_is_request), its S3 target (bucket, key, sub-resources: s3__parse_target), the IAM action
 * and resource it is authorised as (s3__iam_action), its SigV4 signature as parsed
 * (sigv4_parse: header or presigned query), x-amz-copy-source (s3__copy_source) and the form
 * parameters of the query protocols (auth_form_param).
 *
 * The S3 front end's parts are reached through ops/s3_int.h (library-internal s3__ functions);
 * everything comes from the libraries. Input layout: fuzz_req.h. Checks the documented contracts:
 * the service is one of the six names or NULL, S3 is only taken for "s3" or a signature scoped
 * to s3, the bucket and the action are bounded NUL-terminated strings.
 */
#include "../../control-plane/s3api/s3_int.h"

#include "auth.h"
#include "s3.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const services[] = {"sagemaker", "logs", "monitoring", "sts", "iam", "s3"};
    struct fuzz_req f;
    struct s3_req r;
    struct sigv4_request sreq;
    struct sigv4_auth auth;
    struct ty_err err;
    char action[128], resource[2048], out[256];
    const char *svc, *src;
    int known = 0;

    if (fuzz_req_build(&f, data, size) != 0)
        goto done;
    svc = auth_service_of(&f.req);
    for (size_t i = 0; svc && i < sizeof(services) / sizeof(services[0]); i++)
        known |= svc == services[i] || strcmp(svc, services[i]) == 0;
    if (svc && !known)
        abort();
    (void)s3_is_request(&f.req);

    s3__parse_target(&f.req, &r);
    if (strnlen(r.bucket, sizeof(r.bucket)) == sizeof(r.bucket) || !r.key || r.nqp > S3_MAX_QP)
        abort();
    s3__iam_action(f.req.method, &r, action, sizeof(action), resource, sizeof(resource));
    if (strncmp(action, "s3:", 3) != 0)
        abort();
    (void)s3__qget(&r, "uploadId");
    s3__req_cleanup(&r);

    ty_err_clear(&err);
    memset(&sreq, 0, sizeof(sreq));
    sreq.method = f.req.method;
    sreq.path = f.req.path;
    sreq.query = f.req.query;
    sreq.headers = f.req.headers;
    sreq.nheaders = f.req.nheaders;
    sreq.body = f.req.body.data ? f.req.body.data : "";
    sreq.body_len = f.req.body.len;
    if (sigv4_parse(&sreq, &auth, &err) == 0) {
        if (strnlen(auth.access_key, sizeof(auth.access_key)) == sizeof(auth.access_key))
            abort();
        ty_err_clear(&err);
        (void)auth_check_scope(&auth, svc, &err);
    }

    src = http_header(&f.req, "x-amz-copy-source");
    if (src) {
        char sb[256], *dec = NULL, *sk = NULL;
        if (s3__copy_source(src, sb, sizeof(sb), &dec, &sk) == 0) {
            if (!dec || !sk || !*sk || !sb[0] || sk < dec || sk > dec + strlen(dec))
                abort();
        } else if (dec) {
            abort();
        }
        free(dec);
    }
    (void)auth_form_param(f.req.query, strlen(f.req.query), "Action", out, sizeof(out));
    if (f.req.body.data)
        (void)auth_form_param(f.req.body.data, f.req.body.len, "Version", out, sizeof(out));
done:
    fuzz_req_free(&f);
    return 0;
}
