/*
 * fuzz_sigv4.c - libFuzzer harness for sigv4_parse / sigv4_verify / sigv4_canonical_request.
 *
 * Input layout (every part optional): line 1 the method, line 2 the path, line 3 the query, then
 * "name: value" header lines up to an empty line, then the body. Lines are split on '\n'; the
 * input is copied, so the harness owns every string it hands to the module. When the parse
 * succeeds the request is verified (with a fixed secret and clock) and canonicalised, and a
 * sigv4_sign / sigv4_presign round trip of the same request must verify.
 *
 * Build: -DTY_FUZZ=ON with clang (tests/fuzz/CMakeLists.txt, README.md); run:
 * ./fuzz_sigv4 -max_len=4096 corpus/
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sigv4.h"

#define FUZZ_MAX_HEADERS 32
#define FUZZ_T0          ((time_t)1440938160) /* 20150830T123600Z */

static char *next_line(char **p)
{
    char *s = *p, *nl;
    if (!s)
        return NULL;
    nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = NULL;
    }
    return s;
}

/* 1 when the fuzzed headers already carry auth or dates, so a round trip need not verify. */
static int has_auth_headers(const struct sigv4_request *r)
{
    for (size_t i = 0; i < r->nheaders; i++) {
        const char *n = r->headers[i].name;
        if (!strcasecmp(n, "authorization") || !strcasecmp(n, "x-amz-date") ||
            !strcasecmp(n, "date") || !strcasecmp(n, "x-amz-content-sha256"))
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ty_kv h[FUZZ_MAX_HEADERS + 1];
    struct sigv4_request r;
    struct sigv4_auth a;
    struct ty_err err;
    struct ty_buf cr;
    char *copy, *p, *line;
    char out[4096];

    if (size > 65536)
        return 0;
    copy = malloc(size + 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0'; /* embedded NULs just end the strings early */
    memset(&r, 0, sizeof(r));
    p = copy;
    r.method = (line = next_line(&p)) ? line : "GET";
    r.path = (line = next_line(&p)) ? line : "/";
    r.query = next_line(&p);
    r.headers = h;
    while (r.nheaders < FUZZ_MAX_HEADERS && (line = next_line(&p)) && *line) {
        char *colon = strchr(line, ':');
        h[r.nheaders].name = line;
        h[r.nheaders].value = "";
        if (colon) {
            *colon = '\0';
            h[r.nheaders].value = colon + 1;
        }
        r.nheaders++;
    }
    r.body = p;
    r.body_len = p ? strlen(p) : 0;

    ty_err_clear(&err);
    if (sigv4_parse(&r, &a, &err) == 0) {
        (void)sigv4_verify(&r, &a, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", FUZZ_T0, &err);
        ty_buf_init(&cr, 1 << 20);
        (void)sigv4_canonical_request(&r, &a, &cr, &err);
        ty_buf_cleanup(&cr);
    }

    /* signing whatever arrived must give a request that verifies */
    h[r.nheaders].name = "X-Amz-Date";
    h[r.nheaders].value = "20150830T123600Z";
    r.nheaders++;
    if (sigv4_sign(&r, "AKIDEXAMPLE", "secret", "us-east-1", "service", "20150830T123600Z", out,
                   sizeof(out)) == 0) {
        struct ty_kv h2[FUZZ_MAX_HEADERS + 2];
        struct sigv4_request r2 = r;
        int check = !has_auth_headers(&r);
        memcpy(h2, h, sizeof(h[0]) * r.nheaders);
        h2[r.nheaders].name = "Authorization";
        h2[r.nheaders].value = out;
        r2.headers = h2;
        r2.nheaders = r.nheaders + 1;
        if (check && (sigv4_parse(&r2, &a, &err) != 0 ||
                      sigv4_verify(&r2, &a, "secret", FUZZ_T0, &err) != 0))
            abort();
    }
    (void)sigv4_presign(&r, "AKIDEXAMPLE", "secret", NULL, "us-east-1", "s3", "20150830T123600Z",
                        60, out, sizeof(out));
    free(copy);
    return 0;
}
