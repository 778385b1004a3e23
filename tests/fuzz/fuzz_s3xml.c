/*
 * fuzz_s3xml.c - libFuzzer harness for the S3 XML reader (core/ty_xml.c) as the S3 front end
 * and the external-store client walk it: the bodies of CompleteMultipartUpload (Part/PartNumber/
 * ETag), DeleteObjects (Delete/Quiet/Object/Key) and CreateBucket (LocationConstraint), and the
 * answers of an external store (ListAllMyBuckets, ListBucketResult, Error, InitiateMultipart-
 * UploadResult). The input is the document. Checks that every range ty_xml_find hands back lies
 * inside the range it searched, that the walk always moves forward, and that ty_xml_text's
 * result is a NUL-free string never longer than four bytes per input byte.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ty_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ty_xml_find with the invariants checked; same contract. */
static const char *fuzz_find(const char *p, const char *end, const char *tag, const char **in,
                             const char **in_end)
{
    const char *next = ty_xml_find(p, end, tag, in, in_end);
    if (next && (next <= p || next > end || *in < p || *in > *in_end || *in_end > next))
        abort();
    return next;
}

/* ty_xml_text with the invariants checked: freed here, its length returned (-1: refused). */
static long fuzz_text(const char *p, const char *end)
{
    char *t = ty_xml_text(p, end);
    size_t n;
    if (!t)
        return -1;
    n = strlen(t);
    if (n > 4 * (size_t)(end - p))
        abort();
    free(t);
    return (long)n;
}

/* Part/PartNumber/ETag as s3.c's CompleteMultipartUpload reads them. */
static void fuzz_complete(const char *doc, const char *end)
{
    const char *in, *in_end, *p, *pi, *pe;
    int n = 0;
    if (!fuzz_find(doc, end, "CompleteMultipartUpload", &in, &in_end))
        return;
    for (p = in; (p = fuzz_find(p, in_end, "Part", &pi, &pe)) != NULL && n < 10000; n++) {
        const char *ni, *ne, *ei, *ee;
        char num[16];
        if (!fuzz_find(pi, pe, "PartNumber", &ni, &ne) || !fuzz_find(pi, pe, "ETag", &ei, &ee) ||
            (size_t)(ne - ni) >= sizeof(num) || ne == ni)
            break;
        memcpy(num, ni, (size_t)(ne - ni));
        num[ne - ni] = '\0';
        (void)strtol(num, NULL, 10);
        (void)fuzz_text(ei, ee);
        (void)fuzz_find(pi, pe, "ChecksumCRC32", &ei, &ee);
    }
}

/* Delete/Quiet/Object/Key as s3.c's DeleteObjects reads them. */
static void fuzz_delete(const char *doc, const char *end)
{
    const char *in, *in_end, *p, *oin, *oend, *qi, *qe, *ki, *ke;
    if (!fuzz_find(doc, end, "Delete", &in, &in_end))
        return;
    if (fuzz_find(in, in_end, "Quiet", &qi, &qe))
        (void)fuzz_text(qi, qe);
    for (p = in; (p = fuzz_find(p, in_end, "Object", &oin, &oend)) != NULL;) {
        if (fuzz_find(oin, oend, "Key", &ki, &ke))
            (void)fuzz_text(ki, ke);
        if (fuzz_find(oin, oend, "VersionId", &ki, &ke))
            (void)fuzz_text(ki, ke);
    }
}

/* One element's text wherever it is (the external store's answers, CreateBucket). */
static void fuzz_one(const char *doc, const char *end, const char *outer, const char *tag)
{
    const char *in, *in_end, *a, *b;
    if (fuzz_find(doc, end, outer, &in, &in_end) && fuzz_find(in, in_end, tag, &a, &b))
        (void)fuzz_text(a, b);
}

/* Repeated elements with children (ListAllMyBuckets' Bucket, ListBucketResult's Contents). */
static void fuzz_list(const char *doc, const char *end, const char *elem, const char *const *kids)
{
    const char *p, *in, *ie, *a, *b;
    for (p = doc; (p = fuzz_find(p, end, elem, &in, &ie)) != NULL;) {
        for (const char *const *k = kids; *k; k++) {
            if (fuzz_find(in, ie, *k, &a, &b))
                (void)fuzz_text(a, b);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const bucket_kids[] = {"Name", "CreationDate", NULL};
    static const char *const contents_kids[] = {"Key", "Size", "ETag", "LastModified", NULL};
    /* a copy without a terminator, so that reads past the end are caught */
    char *doc = malloc(size ? size : 1);
    const char *end;

    if (!doc)
        return 0;
    memcpy(doc, data, size);
    end = doc + size;
    fuzz_complete(doc, end);
    fuzz_delete(doc, end);
    fuzz_one(doc, end, "CreateBucketConfiguration", "LocationConstraint");
    fuzz_one(doc, end, "Error", "Code");
    fuzz_one(doc, end, "Error", "Message");
    fuzz_one(doc, end, "InitiateMultipartUploadResult", "UploadId");
    fuzz_one(doc, end, "ListBucketResult", "NextContinuationToken");
    fuzz_list(doc, end, "Bucket", bucket_kids);
    fuzz_list(doc, end, "Contents", contents_kids);
    (void)fuzz_text(doc, end);
    free(doc);
    return 0;
}
