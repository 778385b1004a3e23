/*
 * fuzz_multipart.c - libFuzzer harness for the multipart- and upload-related parsing of the S3
 * front end: the streaming body receiver (ops/s3_body.c: aws-chunked framing with and without
 * chunk signatures, trailers, Content-MD5, x-amz-content-sha256 and x-amz-checksum-*), the Range
 * header (s3_range) and If-Match / If-None-Match lists (objstore_etag_match). (The XML of
 * CompleteMultipartUpload is fuzz_s3xml.c's.)
 *
 * The S3 front end's parts are reached through ops/s3_int.h (library-internal s3__ functions).
 * Input layout: fuzz_req.h; the headers drive s3_body_new, the body is written in three pieces
 * into a memfd. Checks: a body that finishes has a 32-hex MD5 and its decoded size is at most
 * the bytes written; a range that is accepted lies inside the object.
 */
#define _GNU_SOURCE /* memfd_create */
#include "../../control-plane/s3api/s3_int.h"

#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>

#include "fuzz_req.h"
#include "objstore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_SEED_SIG "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"

static void fuzz_body(struct http_request *req)
{
    static const unsigned char key[32] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct s3_body *b;
    struct ty_err err;
    size_t n = req->body.len, cut1 = n / 3, cut2 = 2 * n / 3;
    const char *d = req->body.data ? req->body.data : "";
    int fd = memfd_create("fuzz_multipart", 0);

    if (fd < 0)
        return;
    b = s3_body_new(fd, "", req, key, FUZZ_SEED_SIG, "20130524T000000Z",
                    "20130524/us-east-1/s3/aws4_request");
    if (!b)
        return;
    ty_err_clear(&err);
    if (s3_body_write(b, d, cut1) == 0 && s3_body_write(b, d + cut1, cut2 - cut1) == 0 &&
        s3_body_write(b, d + cut2, n - cut2) == 0 && s3_body_finish(b, &err) == 0) {
        const char *b64 = NULL;
        if (strlen(s3_body_md5(b)) != 32 || s3_body_size(b) > n)
            abort();
        if (s3_body_checksum(b, &b64) != S3_CK_NONE && !b64)
            abort();
    }
    s3_body_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_req f;
    const char *h;

    if (fuzz_req_build(&f, data, size) != 0)
        goto done;
    fuzz_body(&f.req);

    h = http_header(&f.req, "Range");
    if (h) {
        static const uint64_t sizes[] = {0, 1, 100, UINT64_MAX};
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint64_t a = 0, b = 0;
            if (s3__range(h, sizes[i], &a, &b) == 1 && (a > b || b >= sizes[i]))
                abort();
        }
    }
    h = http_header(&f.req, "If-Match");
    if (h) {
        (void)objstore_etag_match(h, "d41d8cd98f00b204e9800998ecf8427e");
        (void)objstore_etag_match(h, "");
    }
    h = http_header(&f.req, "If-None-Match");
    if (h)
        (void)objstore_etag_match(h, "0123456789abcdef0123456789abcdef-2");
    (void)s3_ck_from_name(f.req.query);
done:
    fuzz_req_free(&f);
    return 0;
}
