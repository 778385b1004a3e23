/*
 * s3uri.c - parsing "s3://bucket/key" and the no-objects message (s3uri.h).
 *
 * Invariants: a parsed bucket matches [A-Za-z0-9._-]{1,255} and is not "." or ".."; no key
 * segment is "." or "..", so bucket/key never escape the object store's directory.
 */
#include "s3uri.h"

#include "ty_err.h"

#include <stdio.h>
#include <string.h>

int s3uri_parse(const char *uri, char *bucket, size_t bn, char *key, size_t kn)
{
    const char *b, *slash, *k, *seg;
    size_t blen, klen;

    if (!uri || strncmp(uri, "s3://", 5) != 0)
        return -TY_EINVAL;
    b = uri + 5;
    slash = strchr(b, '/');
    blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen == 0 || blen >= bn || blen > 255)
        return -TY_EINVAL;
    for (size_t i = 0; i < blen; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            return -TY_EINVAL;
    }
    if ((blen == 1 && b[0] == '.') || (blen == 2 && b[0] == '.' && b[1] == '.'))
        return -TY_EINVAL;
    k = slash ? slash + 1 : "";
    klen = strlen(k);
    if (klen >= kn)
        return -TY_EINVAL;
    for (seg = k; *seg;) {
        const char *end = strchr(seg, '/');
        size_t sl = end ? (size_t)(end - seg) : strlen(seg);
        if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return -TY_EINVAL;
        if (!end)
            break;
        seg = end + 1;
    }
    memcpy(bucket, b, blen);
    bucket[blen] = '\0';
    memcpy(key, k, klen + 1);
    return 0;
}

void s3uri_no_objects_msg(char *out, size_t n, const char *uri, const char *region,
                          const char *role, const char *bucket)
{
    snprintf(out, n,
             "No S3 objects found under S3 URL \"%.300s\" given in input data source. Please "
             "ensure that the bucket exists in the selected region (%.32s), that objects exist "
             "under that S3 prefix, and that the role \"%.200s\" has \"s3:ListBucket\" "
             "permissions on bucket \"%.63s\".",
             uri, region && *region ? region : "us-east-1", role ? role : "", bucket);
}
